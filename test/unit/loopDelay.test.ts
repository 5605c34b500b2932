import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { RollingLoopDelay, startLoopDelay } from "../../src/supervisor/hosting/loopDelay.js";

const MS = 1e6; // histogram values are nanoseconds

/** Histograms keep three significant digits: equal within 0.1 % (and the 0.01 ms rounding). */
function near(actual: number, expected: number): void {
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(expected * 0.001 + 0.01);
}

/** Two recordable histograms standing in for the two event-loop monitors, a clock and a manual ticker. */
function rig() {
  let now = 1_000;
  const hs: RecordableHistogram[] = [];
  let tick: (() => void) | null = null;
  let periodMs = 0;
  let due = 0;
  const d = new RollingLoopDelay(
    () => {
      const h = createHistogram();
      hs.push(h);
      return h;
    },
    () => now,
    60_000,
    (fn, ms) => {
      tick = fn;
      periodMs = ms;
      due = now + ms;
    },
  );
  return {
    d,
    periodMs: () => periodMs,
    /** One loop-delay sample, seen by both monitors (both are always enabled). */
    sample(ms: number, times = 1) {
      for (let i = 0; i < times; i++) for (const h of hs) h.record(Math.round(ms * MS));
    },
    /** Moves the clock, firing the interval at each period it passes, as setInterval would. */
    advance(ms: number) {
      const target = now + ms;
      while (periodMs > 0 && due <= target) {
        now = due;
        due += periodMs;
        tick?.();
      }
      now = target;
    },
  };
}

describe("RollingLoopDelay", () => {
  it("forgets a slow start-up within one window", () => {
    const r = rig();
    expect(r.periodMs()).toBe(30_000);
    expect(r.d.figures()).toEqual({ p50_ms: 0, p99_ms: 0, max_ms: 0, window_s: 0 });
    r.sample(2_000); // a 2 s stall while starting
    r.sample(1, 99);
    near(r.d.figures().max_ms, 2_000);
    near(r.d.figures().p50_ms, 1);
    r.advance(30_000);
    // Half a window in: the figures still cover everything since start.
    r.sample(1, 100);
    near(r.d.figures().max_ms, 2_000);
    expect(r.d.figures().window_s).toBe(30);
    r.advance(30_000);
    // The stall was more than 30 s ago and is gone; the last 30 s are what is left.
    r.sample(3, 10);
    const f = r.d.figures();
    near(f.max_ms, 3);
    near(f.p50_ms, 1);
    near(f.p99_ms, 3);
    expect(f.window_s).toBe(30);
  });

  it("always reports between half a window and a whole one once warm", () => {
    const r = rig();
    r.advance(30_000);
    for (let k = 0; k < 6; k++) {
      r.sample(20 - k); // one sample per period, each smaller than the one before
      expect(r.d.figures().window_s).toBe(30);
      r.advance(29_000);
      expect(r.d.figures().window_s).toBe(59);
      r.advance(1_000);
      // The period that just ended is covered, and nothing older: an older, larger sample
      // would show as the maximum.
      near(r.d.figures().max_ms, 20 - k);
    }
    // A whole period without samples: the window holds nothing any more.
    r.advance(30_000);
    expect(r.d.figures()).toEqual({ p50_ms: 0, p99_ms: 0, max_ms: 0, window_s: 30 });
  });

  it("runs against the real event-loop monitor", () => {
    const f = startLoopDelay().figures();
    for (const v of [f.p50_ms, f.p99_ms, f.max_ms, f.window_s]) {
      expect(Number.isFinite(v)).toBe(true);
      expect(v).toBeGreaterThanOrEqual(0);
    }
  });
});
