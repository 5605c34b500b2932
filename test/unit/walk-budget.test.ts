import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { Budget, STOPPED } from "../../src/workers/uia/walk.js";

/**
 * A walk races each of its hundreds of provider calls against one Budget that lives as long as
 * the walk. A settled race must leave nothing behind on the budget: when each race stayed
 * attached to it, every call's answer stayed reachable until the walk ended and was copied by
 * each scavenge of the walk.
 */
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 5 && ref.deref() !== undefined; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
  return ref.deref() === undefined;
}

describe("the walk's budget", () => {
  it("holds no settled race's answer while it lives", async () => {
    const budget = new Budget(Date.now() + 60_000, new AbortController().signal);
    let ref: WeakRef<object> | null = null;
    await (async () => {
      const answer = { facts: new Array(1000).fill("x") };
      ref = new WeakRef(answer);
      expect(await budget.race(Promise.resolve(answer))).toBe(answer);
    })();
    expect(await collected(ref as unknown as WeakRef<object>)).toBe(true);
    budget.release();
  });

  it("answers the value, STOPPED past the deadline or on cancel, and the call's error", async () => {
    const ok = new Budget(Date.now() + 60_000, new AbortController().signal);
    expect(await ok.race(Promise.resolve(7))).toBe(7);
    await expect(ok.race(Promise.reject(new Error("no")))).rejects.toThrow("no");
    ok.release();

    const late = new Budget(Date.now() + 20, new AbortController().signal);
    expect(await late.race(new Promise(() => {}))).toBe(STOPPED);
    expect(await late.race(Promise.resolve(1))).toBe(STOPPED);

    const ctl = new AbortController();
    const cancelled = new Budget(Date.now() + 60_000, ctl.signal);
    const pending = cancelled.race(new Promise(() => {}));
    ctl.abort();
    expect(await pending).toBe(STOPPED);
    expect(cancelled.cancelled).toBe(true);
    await expect(cancelled.must(Promise.resolve(1))).rejects.toMatchObject({ code: "cancelled" });
  });
});
