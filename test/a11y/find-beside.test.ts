import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { failure, findArgs, Harness, ruffle, targetFor } from "./helpers.js";
import { observed } from "./observed.js";

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const R = targetFor(ruffle());
const BUTTONS = { role: "button" };

describe("a11y.find on an open session: the target check beside the walk", () => {
  it("walks while the check runs, the check's requests after the walk's first call, same answer", async () => {
    h = new Harness([ruffle({ a11y_delay_ms: 10 })]);
    const o = observed(h);
    // The first find opens the session, checking first.
    const first = await h.call("a11y.find", findArgs("k1", R, BUTTONS), o.ctx());
    expect(o.log.indexOf("check:settled")).toBeLessThan(o.log.findIndex((e) => e.startsWith("walk:")));
    o.arm();
    const again = await h.call("a11y.find", findArgs("k1", R, BUTTONS), o.ctx());
    expect(again).toEqual(first);
    expect(again.elements.map((e) => e.automation_id)).toEqual(["play", "hidden", "outside", "off", "deep"]);
    const firstWalk = o.log.findIndex((e) => e.startsWith("walk:"));
    const turnEnd = o.log.indexOf("turn-end");
    const checkStart = o.log.indexOf("check:start");
    const checkSettled = o.log.indexOf("check:settled");
    expect(firstWalk).toBeGreaterThanOrEqual(0);
    // The check begins after the turn in which the walk's first calls were made…
    expect(turnEnd).toBeGreaterThan(firstWalk);
    expect(checkStart).toBeGreaterThan(turnEnd);
    // …and the walk went on while it ran.
    expect(o.log.slice(0, checkSettled).filter((e) => e === "walk:children").length).toBeGreaterThan(0);
  });

  it("a check that refuses while the walk runs: the refusal as before, the walk stopped, no refs", async () => {
    h = new Harness([ruffle({ a11y_delay_ms: 30 })]);
    const o = observed(h);
    await h.call("a11y.find", findArgs("k1", R, BUTTONS), o.ctx());
    expect(h.runtime.store.size).toBe(1);
    // The window changes hands after the walk started and before the check reads the desktop.
    o.arm(() => h?.write([ruffle({ a11y_delay_ms: 30, process_start: "2026-11-30T09:00:00Z" })]));
    const e = await failure(h.call("a11y.find", findArgs("k1", R, { name_contains: "play" }), o.ctx()));
    expect(e.code).toBe("target_changed");
    expect(e.message).not.toContain("Play");
    expect(o.log.indexOf("walk:root")).toBeGreaterThanOrEqual(0);
    expect(o.log.indexOf("check:start")).toBeGreaterThan(o.log.indexOf("walk:root"));
    expect(h.runtime.store.size).toBe(0);
    // The walk was stopped: nothing more is asked of the provider after the answer.
    const asked = o.log.filter((x) => x.startsWith("walk:")).length;
    await sleep(300);
    expect(o.log.filter((x) => x.startsWith("walk:")).length).toBe(asked);
  });

  it("a walk whose first call fails still waits for the check: its refusal wins", async () => {
    h = new Harness([ruffle()]);
    const o = observed(h);
    await h.call("a11y.find", findArgs("k1", R, BUTTONS), o.ctx());
    o.arm(() => h?.write([ruffle({ iconic: true })]), true, "root");
    const e = await failure(h.call("a11y.find", findArgs("k1", R, BUTTONS), o.ctx()));
    expect(e.code).toBe("minimized");
    // The walk's root first (it fails, and the check starts at once: no call of the walk is left
    // to hold back), then the check, then the refused target's session let go of.
    expect(o.log.filter((x) => x !== "turn-end")).toEqual([
      "walk:root",
      "check:start",
      "check:settled",
      "walk:dispose",
    ]);
    expect(h.runtime.store.size).toBe(0);
  });

  it("a session ended while it was checked: the checked window is searched on a new one", async () => {
    h = new Harness([ruffle({ a11y_delay_ms: 10 })]);
    const o = observed(h);
    const first = await h.call("a11y.find", findArgs("k1", R, BUTTONS), o.ctx());
    o.arm(() => {
      void h?.runtime.store.endKey("k1");
    });
    const again = await h.call("a11y.find", findArgs("k1", R, BUTTONS), o.ctx());
    expect(again.elements.map((e) => e.automation_id)).toEqual(first.elements.map((e) => e.automation_id));
    // Refs of the ended session are never handed out again.
    expect(again.elements[0]?.ref).not.toBe(first.elements[0]?.ref);
    // The walk began on the session that ended, and again on the new one after the check.
    expect(o.log.filter((e) => e === "walk:root").length).toBe(2);
    expect(o.log.lastIndexOf("walk:root")).toBeGreaterThan(o.log.indexOf("check:settled"));
    expect(h.runtime.store.size).toBe(1);
  });
});
