import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { failure, Harness, inspectArgs, ruffle, targetFor } from "./helpers.js";
import { observed } from "./observed.js";

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const R = targetFor(ruffle());

describe("a11y.inspect on an open session: the target check beside the walk", () => {
  it("walks while the check runs, the check's requests after the walk's first call, same answer", async () => {
    h = new Harness([ruffle({ a11y_delay_ms: 10 })]);
    const o = observed(h);
    const first = await h.call("a11y.inspect", inspectArgs("k1", R), o.ctx());
    o.arm();
    const again = await h.call("a11y.inspect", inspectArgs("k1", R), o.ctx());
    expect(again).toEqual(first);
    expect(again.node_count).toBe(12);
    const firstWalk = o.log.findIndex((e) => e.startsWith("walk:"));
    const checkStart = o.log.indexOf("check:start");
    const checkSettled = o.log.indexOf("check:settled");
    expect(firstWalk).toBeGreaterThanOrEqual(0);
    // The check describes a state no older than the walk's start: it begins after the turn in
    // which the walk's first calls were made (and written)…
    expect(checkStart).toBeGreaterThan(firstWalk);
    expect(checkStart).toBeGreaterThan(o.log.indexOf("turn-end"));
    expect(o.log.indexOf("turn-end")).toBeGreaterThan(firstWalk);
    // …and the walk went on while it ran (before it settled, the walk had asked for children).
    expect(o.log.slice(0, checkSettled).filter((e) => e === "walk:children").length).toBeGreaterThan(0);
  });

  it("a check that refuses while the walk runs: the refusal as before, the walk stopped, no refs", async () => {
    h = new Harness([ruffle({ a11y_delay_ms: 30 })]);
    const o = observed(h);
    await h.call("a11y.inspect", inspectArgs("k1", R), o.ctx());
    expect(h.runtime.store.size).toBe(1);
    // The window changes hands after the walk started and before the check reads the desktop.
    o.arm(() => h?.write([ruffle({ a11y_delay_ms: 30, process_start: "2026-11-30T09:00:00Z" })]));
    const e = await failure(h.call("a11y.inspect", inspectArgs("k1", R), o.ctx()));
    expect(e.code).toBe("target_changed");
    expect(e.message).not.toContain("Play");
    // The refusal came while the walk ran, not before it began.
    expect(o.log.indexOf("check:start")).toBeGreaterThan(o.log.indexOf("walk:root"));
    expect(o.log.indexOf("walk:root")).toBeGreaterThanOrEqual(0);
    // Its sessions are ended, as a refused check ended them before.
    expect(h.runtime.store.size).toBe(0);
    // The walk was stopped: nothing more is asked of the provider after the answer.
    const asked = o.log.filter((x) => x.startsWith("walk:")).length;
    await sleep(300);
    expect(o.log.filter((x) => x.startsWith("walk:")).length).toBe(asked);
  });

  it("a walk that fails before its first call still waits for the check: its refusal wins", async () => {
    h = new Harness([ruffle()]);
    const o = observed(h);
    await h.call("a11y.inspect", inspectArgs("k1", R), o.ctx());
    o.arm(() => h?.write([ruffle({ iconic: true })]), false);
    // An unknown root_ref fails at once, before any provider call.
    const e = await failure(h.call("a11y.inspect", inspectArgs("k1", R, { root_ref: "e999999" }), o.ctx()));
    expect(e.code).toBe("minimized");
    // The check alone, then the refused target's session let go of (its provider disposed).
    expect(o.log).toEqual(["check:start", "check:settled", "walk:dispose"]);
    expect(h.runtime.store.size).toBe(0);
  });

  it("a session ended while it was checked: the checked window is walked on a new one", async () => {
    h = new Harness([ruffle({ a11y_delay_ms: 10 })]);
    const o = observed(h);
    const first = await h.call("a11y.inspect", inspectArgs("k1", R), o.ctx());
    o.arm(() => {
      void h?.runtime.store.endKey("k1");
    });
    const again = await h.call("a11y.inspect", inspectArgs("k1", R), o.ctx());
    expect(again.node_count).toBe(first.node_count);
    // Refs of the ended session are never handed out again.
    expect(again.root.ref).not.toBe(first.root.ref);
    expect(h.runtime.store.size).toBe(1);
  });
});
