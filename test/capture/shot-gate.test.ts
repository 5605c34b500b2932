import { describe, expect, it } from "vitest";
import { isUiError, uiError } from "../../src/shared/errors.js";
import { ShotGate } from "../../src/workers/capture/shotGate.js";

// The capture worker's bound on shots in flight: the rest wait in order, and a waiting shot's
// cancel or deadline ends its wait without taking a turn.

const tick = () => new Promise((r) => setImmediate(r));

describe("ShotGate", () => {
  it("lets `limit` shots run, queues the rest in order, and hands each turn on once", async () => {
    const gate = new ShotGate(2);
    const never = new AbortController().signal;
    const order: number[] = [];
    const leaves = await Promise.all([gate.enter(never), gate.enter(never)]);
    const waiting = [3, 4, 5].map((n) =>
      gate.enter(never).then((leave) => {
        order.push(n);
        return leave;
      }),
    );
    await tick();
    expect(gate.load).toEqual({ running: 2, waiting: 3 });
    leaves[0]?.();
    leaves[0]?.(); // a second release of the same turn hands on nothing
    await tick();
    expect(order).toEqual([3]);
    expect(gate.load).toEqual({ running: 2, waiting: 2 });
    leaves[1]?.();
    (await waiting[0])();
    await tick();
    expect(order).toEqual([3, 4, 5]);
    (await waiting[1])();
    (await waiting[2])();
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
  });

  it("a waiting shot whose signal aborts leaves the queue with the abort's reason", async () => {
    const gate = new ShotGate(1);
    const leave = await gate.enter(new AbortController().signal);
    const ctl = new AbortController();
    const waiting = gate.enter(ctl.signal);
    const next = gate.enter(new AbortController().signal);
    ctl.abort(uiError("worker_timeout"));
    const e = await waiting.catch((x: unknown) => x);
    expect(isUiError(e) && e.code).toBe("worker_timeout");
    expect(gate.load).toEqual({ running: 1, waiting: 1 });
    leave();
    (await next)();
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
    const aborted = new AbortController();
    aborted.abort(uiError("cancelled"));
    await expect(gate.enter(aborted.signal)).rejects.toMatchObject({ code: "cancelled" });
  });
});
