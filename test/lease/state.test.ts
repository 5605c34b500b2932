import { describe, expect, it } from "vitest";
import { HOUR_MS, LeaseState } from "../../src/lease/state.js";

function clock(start = Date.parse("2026-11-30T10:00:00Z")) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe("LeaseState (in memory, injected clock)", () => {
  it("honours the expiry exactly and reports it once", () => {
    const c = clock();
    const expired: number[] = [];
    const s = new LeaseState(c.now, (l) => expired.push(l.expiresAtMs));
    expect(() => s.check("inspect")).toThrow(expect.objectContaining({ code: "lease_revoked" }));
    const end = c.now() + HOUR_MS;
    s.activate(end, ["inspect", "key"]);
    expect(s.check("inspect").expiresAtMs).toBe(end);
    expect(() => s.check("click")).toThrow(expect.objectContaining({ code: "action_not_allowed" }));
    c.advance(HOUR_MS - 1);
    expect(s.check("key").expiresAtMs).toBe(end);
    c.advance(1);
    expect(() => s.check("inspect")).toThrow(expect.objectContaining({ code: "lease_revoked" }));
    expect(() => s.check("inspect")).toThrow(expect.objectContaining({ code: "lease_revoked" }));
    expect(expired).toEqual([end]);
    expect(s.current()).toBeNull();
  });

  it("extends from the current expiry, never beyond 24 h from now, and not after an end", () => {
    const c = clock();
    const s = new LeaseState(c.now);
    expect(() => s.extendedExpiry(1)).toThrow(expect.objectContaining({ code: "lease_revoked" }));
    s.activate(c.now() + 2 * HOUR_MS, ["inspect"]);
    expect(s.extendedExpiry(5)).toBe(c.now() + 7 * HOUR_MS);
    expect(s.extendedExpiry(24)).toBe(c.now() + 24 * HOUR_MS);
    const target = s.extendedExpiry(5);
    s.extendTo(target);
    expect(s.current()!.expiresAtMs).toBe(target);
    expect(s.revoke()).toBe(true);
    expect(s.revoke()).toBe(false);
    expect(() => s.extendTo(target)).toThrow(expect.objectContaining({ code: "lease_revoked" }));
  });

  it("refuses an expiry in the past or more than 24 h ahead", () => {
    const c = clock();
    const s = new LeaseState(c.now);
    expect(() => s.activate(c.now(), ["inspect"])).toThrow(
      expect.objectContaining({ code: "invalid_argument" }),
    );
    expect(() => s.activate(c.now() + 24 * HOUR_MS + 1, ["inspect"])).toThrow();
  });
});
