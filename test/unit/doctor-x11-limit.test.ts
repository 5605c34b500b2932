import { describe, expect, it } from "vitest";
import { platformChecks } from "../../src/cli/doctorChecks.js";
import type { ServerConfig } from "../../src/supervisor/config.js";

describe("doctor on X11 says what X11 cannot stop", () => {
  const facts = {
    display: ":9",
    screen_width: 1280,
    screen_height: 800,
    ewmh: true,
    xtest: true,
    xshm: true,
  };

  it("warns in one line, naming forged device input, pixels and the Wayland backend", () => {
    const checks = platformChecks({ platform: "x11" } as unknown as ServerConfig, facts);
    const limit = checks.find((c) => c.id === "x11_limit");
    expect(limit?.status).toBe("warn");
    expect(limit?.summary).not.toContain("\n");
    expect(limit?.summary).toMatch(/forging hardware-looking input .*XTest device events.* pixels/);
    expect(limit?.summary).toContain("not malware already running as you");
    expect(limit?.fix).toContain("docs/wayland.md");
  });

  it("is not said on other platforms", () => {
    const checks = platformChecks({ platform: "fake" } as unknown as ServerConfig, facts);
    expect(checks.find((c) => c.id === "x11_limit")).toBeUndefined();
  });
});
