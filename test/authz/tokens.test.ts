import { describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
import { ConfirmationTokenStore, MAX_OUTSTANDING_TOKENS } from "../../src/supervisor/tokens.js";
import { ManualTime } from "./helpers.js";

function code(f: () => unknown): string {
  try {
    f();
    return "ok";
  } catch (e) {
    return isUiError(e) ? e.code : "not-a-UiError";
  }
}

describe("ConfirmationTokenStore", () => {
  it("issues 128-bit random tokens with an RFC 3339 expiry", () => {
    const t = new ManualTime();
    const s = new ConfirmationTokenStore(t.clock);
    const a = s.issue("inst", "text", 60);
    const b = s.issue("inst", "text", 60);
    expect(a.token_id).toMatch(/^[0-9a-f]{32}$/);
    expect(a.token_id).not.toBe(b.token_id);
    expect(a.expires_at).toBe(new Date(t.now + 60_000).toISOString());
  });

  it("is single use", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    const { token_id } = s.issue("inst", "close", 60);
    expect(s.check(token_id, "inst", "close")).toBe("ok");
    expect(s.check(token_id, "inst", "close")).toBe("ok"); // check does not consume
    expect(s.consume(token_id, "inst", "close")).toBe("ok");
    expect(s.consume(token_id, "inst", "close")).toBe("invalid");
    expect(s.check(token_id, "inst", "close")).toBe("invalid");
  });

  it("is bound to the process instance and the action class", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    const { token_id } = s.issue("inst", "text", 60);
    expect(s.consume(token_id, "other-inst", "text")).toBe("invalid");
    expect(s.consume(token_id, "inst", "close")).toBe("invalid");
    expect(s.hasValid("inst", "close")).toBe(false);
    expect(s.hasValid("inst", "text")).toBe(true);
    // A presentation for the wrong target does not burn it for the right one.
    expect(s.consume(token_id, "inst", "text")).toBe("ok");
    expect(s.hasValid("inst", "text")).toBe(false);
  });

  it("expires after its TTL and is purged on the next issue", async () => {
    const t = new ManualTime();
    const s = new ConfirmationTokenStore(t.clock);
    const { token_id } = s.issue("inst", "drag", 5);
    await t.advance(4_999);
    expect(s.check(token_id, "inst", "drag")).toBe("ok");
    await t.advance(1);
    expect(s.check(token_id, "inst", "drag")).toBe("invalid");
    expect(s.hasValid("inst", "drag")).toBe(false);
    s.issue("inst", "drag", 300);
    s.issue("x", "y", 1);
    await t.advance(1_000);
    s.issue("inst", "text", 10);
    expect(s.size).toBe(2); // the 1-second token and the consumed/expired one are gone
  });

  it("accepts TTLs of 1..300 seconds only", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    for (const ttl of [1, 60, 300]) expect(code(() => s.issue("i", "text", ttl))).toBe("ok");
    for (const ttl of [0, -1, 301, 1.5, Number.NaN, Number.POSITIVE_INFINITY])
      expect(code(() => s.issue("i", "text", ttl))).toBe("invalid_argument");
    const short = new ConfirmationTokenStore(new ManualTime().clock, 30);
    expect(code(() => short.issue("i", "text", 31))).toBe("invalid_argument");
    expect(code(() => new ConfirmationTokenStore(() => 0, 301))).toBe("invalid_argument");
  });

  it("rejects malformed or forged tokens without throwing", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    const { token_id } = s.issue("inst", "text", 60);
    const forged = token_id.slice(0, 31) + (token_id[31] === "0" ? "1" : "0");
    for (const bad of [forged, token_id.toUpperCase(), "", `${token_id} `, 42, null, undefined, { token_id }])
      expect(s.check(bad, "inst", "text")).toBe("invalid");
    expect(s.consume(token_id, "inst", "text")).toBe("ok");
  });

  it("drops every token of a revoked instance", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    const a = s.issue("inst", "text", 60);
    const b = s.issue("other", "text", 60);
    expect(s.revokeInstance("inst")).toBe(1);
    expect(s.check(a.token_id, "inst", "text")).toBe("invalid");
    expect(s.check(b.token_id, "other", "text")).toBe("ok");
  });

  it("bounds the number of outstanding tokens", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    for (let i = 0; i < MAX_OUTSTANDING_TOKENS; i++) s.issue("inst", "text", 300);
    expect(code(() => s.issue("inst", "text", 300))).toBe("rate_limited");
  });
});
