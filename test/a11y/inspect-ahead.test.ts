import { afterEach, describe, expect, it } from "vitest";
import { failure, Harness, inspectArgs, ruffle, targetFor } from "./helpers.js";
import { observed } from "./observed.js";

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const R = targetFor(ruffle());
const ahead = (key: string, over: Record<string, unknown> = {}) =>
  inspectArgs(key, R, { ahead: true, ...over });

/**
 * An observation the supervisor sends while it still resolves and authorizes the call (`ahead`):
 * only a session already open is walked, and a refusal ends nothing (the authorized call asks
 * again without `ahead`, and its refusal does what a refusal does).
 */
describe("a11y.inspect sent ahead of its authorization", () => {
  it("on an open session: the same answer as the call without ahead", async () => {
    h = new Harness([ruffle()]);
    const first = await h.call("a11y.inspect", inspectArgs("k1", R));
    const early = await h.call("a11y.inspect", ahead("k1"));
    expect(early).toEqual(first);
  });

  it("no open session: element_stale, and none is opened, nothing asked of the provider", async () => {
    h = new Harness([ruffle()]);
    const o = observed(h);
    const e = await failure(h.call("a11y.inspect", ahead("k1"), o.ctx()));
    expect(e.code).toBe("element_stale");
    expect(h.runtime.store.size).toBe(0);
    expect(o.log.filter((x) => x.startsWith("walk:"))).toEqual([]);
  });

  it("a check that refuses: the refusal, and the session stays (the call without ahead ends it)", async () => {
    h = new Harness([ruffle({ a11y_delay_ms: 20 })]);
    const o = observed(h);
    await h.call("a11y.inspect", inspectArgs("k1", R), o.ctx());
    expect(h.runtime.store.size).toBe(1);
    o.arm(() => h?.write([ruffle({ a11y_delay_ms: 20, process_start: "2026-11-30T09:00:00Z" })]));
    const e = await failure(h.call("a11y.inspect", ahead("k1"), o.ctx()));
    expect(e.code).toBe("target_changed");
    expect(h.runtime.store.size).toBe(1);
    // The same refusal without ahead ends the session, as it always did.
    const again = await failure(h.call("a11y.inspect", inspectArgs("k1", R)));
    expect(again.code).toBe("target_changed");
    expect(h.runtime.store.size).toBe(0);
  });

  it("a minimized target: minimized, and its session stays", async () => {
    h = new Harness([ruffle()]);
    const o = observed(h);
    await h.call("a11y.inspect", inspectArgs("k1", R), o.ctx());
    o.arm(() => h?.write([ruffle({ iconic: true })]));
    const e = await failure(h.call("a11y.inspect", ahead("k1"), o.ctx()));
    expect(e.code).toBe("minimized");
    expect(h.runtime.store.size).toBe(1);
  });

  it("a session ended while it was checked: element_stale, no new session opened", async () => {
    h = new Harness([ruffle({ a11y_delay_ms: 10 })]);
    const o = observed(h);
    await h.call("a11y.inspect", inspectArgs("k1", R), o.ctx());
    o.arm(() => {
      void h?.runtime.store.endKey("k1");
    });
    const e = await failure(h.call("a11y.inspect", ahead("k1"), o.ctx()));
    expect(e.code).toBe("element_stale");
    expect(h.runtime.store.size).toBe(0);
  });

  it("a11y.find ahead without an open session: element_stale, none opened", async () => {
    h = new Harness([ruffle()]);
    const e = await failure(
      h.call("a11y.find", {
        session_key: "k1",
        target: R,
        name_contains: "Play",
        role: null,
        automation_id: null,
        state: null,
        max_results: 5,
        deadline_ms: 5000,
        ahead: true,
      }),
    );
    expect(e.code).toBe("element_stale");
    expect(h.runtime.store.size).toBe(0);
  });
});
