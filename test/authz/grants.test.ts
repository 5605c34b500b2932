import { describe, expect, it } from "vitest";
import { instanceKey } from "../../src/shared/identity.js";
import { GrantStore, grantTtlFromEnv, type RevokeEvent } from "../../src/supervisor/access/grants.js";
import { instance, ManualTime } from "./helpers.js";

const A = "aaaaaaaaaaaa";
const B = "bbbbbbbbbbbb";

function setup() {
  const t = new ManualTime();
  const g = new GrantStore(t.clock, 300_000);
  const events: { client: string; pid: number; reason: string }[] = [];
  g.onRevoke((e: RevokeEvent) =>
    events.push({ client: e.grant.client, pid: e.grant.instance.pid, reason: e.reason }),
  );
  return { t, g, events };
}

describe("GrantStore", () => {
  it("keys grants by (client, instance) and expires them after the TTL, reporting the expiry", async () => {
    const { t, g, events } = setup();
    const i = instance(10);
    const k = instanceKey(i);
    const grant = g.put({ client: A, instance: i, hwnd: "1001", capabilities: ["inspect", "click"] });
    expect(grant.expiresAt).toBe(t.now + 300_000);
    expect(g.get(A, k)?.capabilities.has("click")).toBe(true);
    expect(g.get(B, k)).toBeUndefined();
    await t.advance(299_999);
    expect(g.get(A, k)).toBeDefined();
    await t.advance(1);
    expect(g.get(A, k)).toBeUndefined();
    expect(events).toEqual([{ client: A, pid: 10, reason: "expired" }]);
  });

  it("renews a live grant but never revives an expired one", async () => {
    const { t, g } = setup();
    const i = instance(10);
    const k = instanceKey(i);
    g.put({ client: A, instance: i, hwnd: "1001", capabilities: ["inspect"] });
    await t.advance(200_000);
    expect(g.renew(A, k)?.expiresAt).toBe(t.now + 300_000);
    await t.advance(299_999);
    expect(g.get(A, k)).toBeDefined();
    await t.advance(1);
    expect(g.renew(A, k)).toBeUndefined();
  });

  it("release drops only this client's grant", () => {
    const { g, events } = setup();
    const i = instance(10);
    g.put({ client: A, instance: i, hwnd: "1001", capabilities: ["inspect"] });
    g.put({ client: B, instance: i, hwnd: "1001", capabilities: ["inspect"] });
    expect(g.release(A, instanceKey(i))).toBe(true);
    expect(g.release(A, instanceKey(i))).toBe(false);
    expect(g.get(B, instanceKey(i))).toBeDefined();
    expect(events).toEqual([{ client: A, pid: 10, reason: "released" }]);
  });

  it("revokeInstance ends every client's grant on that instance and nothing else", () => {
    const { g, events } = setup();
    const i = instance(10);
    const other = instance(11);
    g.put({ client: A, instance: i, hwnd: "1001", capabilities: ["inspect"] });
    g.put({ client: B, instance: i, hwnd: "1001", capabilities: ["click"] });
    g.put({ client: A, instance: other, hwnd: "2002", capabilities: ["inspect"] });
    expect(g.revokeInstance(instanceKey(i), "target_changed")).toBe(2);
    expect(events.map((e) => e.reason)).toEqual(["target_changed", "target_changed"]);
    expect(g.listForClient(A).map((x) => x.instance.pid)).toEqual([11]);
    expect(g.listForClient(B)).toEqual([]);
  });

  it("a reused pid with a new start time is another instance with no grant", () => {
    const { g } = setup();
    g.put({ client: A, instance: instance(10), hwnd: "1001", capabilities: ["inspect"] });
    expect(g.get(A, instanceKey(instance(10, "2026-11-30T09:59:00.000Z")))).toBeUndefined();
  });

  it("listForClient sweeps expired grants; a throwing listener does not stop the others", async () => {
    const { t, g, events } = setup();
    g.onRevoke(() => {
      throw new Error("listener bug");
    });
    const seen: string[] = [];
    const off = g.onRevoke((e) => seen.push(e.reason));
    g.put({ client: A, instance: instance(1), hwnd: "1", capabilities: ["inspect"] });
    await t.advance(100_000);
    g.put({ client: A, instance: instance(2), hwnd: "2", capabilities: ["inspect"] });
    await t.advance(250_000);
    expect(g.listForClient(A).map((x) => x.instance.pid)).toEqual([2]);
    expect(events).toEqual([{ client: A, pid: 1, reason: "expired" }]);
    expect(seen).toEqual(["expired"]);
    off();
    g.revokeAll("shutdown");
    expect(seen).toEqual(["expired"]);
    expect(g.size).toBe(0);
  });

  it("capabilities and instance of a grant cannot be widened after the fact", () => {
    const { g } = setup();
    const grant = g.put({ client: A, instance: instance(1), hwnd: "1", capabilities: ["inspect"] });
    const caps = grant.capabilities as Set<string>;
    expect(() => caps.add("text")).toThrow();
    expect(() => caps.delete("inspect")).toThrow();
    expect(() => {
      (grant.instance as { pid: number }).pid = 2;
    }).toThrow();
    expect([...grant.capabilities]).toEqual(["inspect"]);
  });

  it("reads its TTL from UIINSPECT_GRANT_TTL_MS", () => {
    expect(grantTtlFromEnv({})).toBe(300_000);
    expect(grantTtlFromEnv({ UIINSPECT_GRANT_TTL_MS: "60000" })).toBe(60_000);
    expect(() => grantTtlFromEnv({ UIINSPECT_GRANT_TTL_MS: "soon" })).toThrow();
  });
});
