import { describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
import { ConfirmationTokenStore, MAX_OUTSTANDING_TOKENS } from "../../src/supervisor/access/tokens.js";
import { ManualTime } from "./helpers.js";

function code(f: () => unknown): string {
  try {
    f();
    return "ok";
  } catch (e) {
    return isUiError(e) ? e.code : "not-a-UiError";
  }
}

const C = "client-a";

describe("ConfirmationTokenStore", () => {
  it("issues 128-bit random tokens with an RFC 3339 expiry", () => {
    const t = new ManualTime();
    const s = new ConfirmationTokenStore(t.clock);
    const a = s.issue(C, "inst", "text", 60);
    const b = s.issue(C, "inst", "text", 60);
    expect(a.token_id).toMatch(/^[0-9a-f]{32}$/);
    expect(a.token_id).not.toBe(b.token_id);
    expect(a.expires_at).toBe(new Date(t.now + 60_000).toISOString());
  });

  it("is single use", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    const { token_id } = s.issue(C, "inst", "close", 60);
    expect(s.check(token_id, C, "inst", "close")).toBe("ok");
    expect(s.check(token_id, C, "inst", "close")).toBe("ok"); // check does not consume
    expect(s.consume(token_id, C, "inst", "close")).toBe("ok");
    expect(s.consume(token_id, C, "inst", "close")).toBe("invalid");
    expect(s.check(token_id, C, "inst", "close")).toBe("invalid");
  });

  it("is bound to the process instance and the action class", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    const { token_id } = s.issue(C, "inst", "text", 60);
    expect(s.consume(token_id, C, "other-inst", "text")).toBe("invalid");
    expect(s.consume(token_id, C, "inst", "close")).toBe("invalid");
    expect(s.hasValid(C, "inst", "close")).toBe(false);
    expect(s.hasValid(C, "inst", "text")).toBe(true);
    // A presentation for the wrong target does not burn it for the right one.
    expect(s.consume(token_id, C, "inst", "text")).toBe("ok");
    expect(s.hasValid(C, "inst", "text")).toBe(false);
  });

  it("expires after its TTL and is purged on the next issue", async () => {
    const t = new ManualTime();
    const s = new ConfirmationTokenStore(t.clock);
    const { token_id } = s.issue(C, "inst", "drag", 5);
    await t.advance(4_999);
    expect(s.check(token_id, C, "inst", "drag")).toBe("ok");
    await t.advance(1);
    expect(s.check(token_id, C, "inst", "drag")).toBe("invalid");
    expect(s.hasValid(C, "inst", "drag")).toBe(false);
    s.issue(C, "inst", "drag", 300);
    s.issue(C, "x", "y", 1);
    await t.advance(1_000);
    s.issue(C, "inst", "text", 10);
    expect(s.size).toBe(2); // the 1-second token and the consumed/expired one are gone
  });

  it("accepts TTLs of 1..300 seconds only", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    for (const ttl of [1, 60, 300]) expect(code(() => s.issue(C, "i", "text", ttl))).toBe("ok");
    for (const ttl of [0, -1, 301, 1.5, Number.NaN, Number.POSITIVE_INFINITY])
      expect(code(() => s.issue(C, "i", "text", ttl))).toBe("invalid_argument");
    const short = new ConfirmationTokenStore(new ManualTime().clock, 30);
    expect(code(() => short.issue(C, "i", "text", 31))).toBe("invalid_argument");
    expect(code(() => new ConfirmationTokenStore(() => 0, 301))).toBe("invalid_argument");
  });

  it("rejects malformed or forged tokens without throwing", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    const { token_id } = s.issue(C, "inst", "text", 60);
    const forged = token_id.slice(0, 31) + (token_id[31] === "0" ? "1" : "0");
    for (const bad of [forged, token_id.toUpperCase(), "", `${token_id} `, 42, null, undefined, { token_id }])
      expect(s.check(bad, C, "inst", "text")).toBe("invalid");
    expect(s.consume(token_id, C, "inst", "text")).toBe("ok");
  });

  it("drops every token of a revoked instance", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    const a = s.issue(C, "inst", "text", 60);
    const b = s.issue(C, "other", "text", 60);
    expect(s.revokeInstance("inst")).toBe(1);
    expect(s.check(a.token_id, C, "inst", "text")).toBe("invalid");
    expect(s.check(b.token_id, C, "other", "text")).toBe("ok");
  });

  it("bounds the number of outstanding tokens per client", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    for (let i = 0; i < MAX_OUTSTANDING_TOKENS; i++) s.issue(C, "inst", "text", 300);
    expect(code(() => s.issue(C, "inst", "text", 300))).toBe("rate_limited");
    // One client looping on issue does not lock another out.
    expect(code(() => s.issue("client-b", "inst", "text", 300))).toBe("ok");
  });

  it("is bound to the client it was issued to, and ends with that client's revocation", () => {
    const s = new ConfirmationTokenStore(new ManualTime().clock);
    const mine = s.issue(C, "inst", "text", 60);
    const theirs = s.issue("client-b", "inst", "text", 60);
    expect(s.check(mine.token_id, "client-b", "inst", "text")).toBe("invalid");
    expect(s.consume(mine.token_id, "client-b", "inst", "text")).toBe("invalid");
    expect(s.hasValid("client-c", "inst", "text")).toBe(false);
    expect(s.revokeClient(C)).toBe(1);
    expect(s.check(mine.token_id, C, "inst", "text")).toBe("invalid");
    expect(s.check(theirs.token_id, "client-b", "inst", "text")).toBe("ok");
  });
});
