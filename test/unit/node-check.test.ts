import { describe, expect, it } from "vitest";
import { nodeCheck } from "../../src/cli/doctorChecks.js";

describe("doctor's Node check", () => {
  it("needs 20.15 (zlib.crc32, which the PNG encoder uses) or any later major", () => {
    expect(nodeCheck("20.14.0").status).toBe("fail");
    expect(nodeCheck("19.9.0").status).toBe("fail");
    expect(nodeCheck("20.15.0").status).toBe("ok");
    expect(nodeCheck("22.1.0").status).toBe("ok");
  });

  it("passes on the Node running these tests", () => {
    expect(nodeCheck().status).toBe("ok");
  });
});
