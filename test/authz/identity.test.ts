import { describe, expect, it } from "vitest";
import { ClientIdentity, canonicalJson, sanitizeLabel } from "../../src/supervisor/access/clientIdentity.js";

describe("ClientIdentity", () => {
  const salt = Buffer.alloc(16, 1);

  it("hashes the canonical clientInfo with the salt into 12 hex", () => {
    const a = ClientIdentity.fromClientInfo({ name: "x", version: "1" }, salt);
    const b = ClientIdentity.fromClientInfo({ version: "1", name: "x" }, salt);
    expect(a.hash).toMatch(/^[0-9a-f]{12}$/);
    expect(b.hash).toBe(a.hash); // key order does not matter
    expect(ClientIdentity.fromClientInfo({ name: "x", version: "2" }, salt).hash).not.toBe(a.hash);
    expect(ClientIdentity.fromClientInfo({ name: "x", version: "1" }, Buffer.alloc(16, 2)).hash).not.toBe(
      a.hash,
    );
  });

  it("uses a fresh random salt per connection by default", () => {
    const info = { name: "Claude Code", version: "2.0.0" };
    const hashes = new Set(Array.from({ length: 20 }, () => ClientIdentity.fromClientInfo(info).hash));
    expect(hashes.size).toBe(20);
  });

  it("never throws on odd input", () => {
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    for (const info of [undefined, null, 42, "name", [], { name: 5 }, cyclic, { name: "x", n: Number.NaN }])
      expect(ClientIdentity.fromClientInfo(info, salt).hash).toMatch(/^[0-9a-f]{12}$/);
    expect(canonicalJson({ b: 1, a: [1, undefined, "x"], c: undefined })).toBe('{"a":[1,null,"x"],"b":1}');
  });

  it("labels are the sanitized name, at most 64 printable characters", () => {
    expect(ClientIdentity.fromClientInfo({ name: "Claude Code" }, salt).label).toBe("Claude Code");
    expect(ClientIdentity.fromClientInfo({}, salt).label).toBe("unnamed client");
    expect(sanitizeLabel("a\nb\u202Ec\u0000d\u200Be")).toBe("a b c d e");
    expect(Array.from(sanitizeLabel("é".repeat(100)))).toHaveLength(64);
    expect(sanitizeLabel("\u0007\u0008")).toBe("unnamed client");
  });
});
