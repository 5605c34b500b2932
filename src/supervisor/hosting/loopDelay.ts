import { monitorEventLoopDelay } from "node:perf_hooks";

/** What the rolling window needs of an event-loop delay histogram (values in nanoseconds). */
export interface DelayHistogram {
  readonly count: number;
  readonly max: number;
  percentile(p: number): number;
  reset(): void;
}

/** Calls `fn` every `ms`; the default never keeps the process alive. */
export type Every = (fn: () => void, ms: number) => void;

export const unrefEvery: Every = (fn, ms) => {
  setInterval(fn, ms).unref();
};

export interface LoopDelayFigures {
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** Seconds the figures cover (up to the window once the server has run that long). */
  window_s: number;
}

export const LOOP_DELAY_WINDOW_MS = 60_000;

const ms = (ns: number) => Math.round(ns / 1e4) / 100;

/**
 * Event-loop delay over a rolling window, so one slow start-up does not dominate forever.
 *
 * Two histograms record side by side, staggered: every half window the one that has recorded
 * longer is reset. The figures come from whichever has recorded longer at the time, so they
 * cover between half a window and a whole one (30–60 s with the default), or everything since
 * start while the server is younger than half a window. Percentiles are those of one real
 * histogram, never estimates merged from two.
 */
export class RollingLoopDelay {
  private readonly slots: Array<{ h: DelayHistogram; since: number }>;

  constructor(
    make: () => DelayHistogram,
    private readonly clock: () => number,
    readonly windowMs = LOOP_DELAY_WINDOW_MS,
    every: Every = unrefEvery,
  ) {
    const now = clock();
    this.slots = [
      { h: make(), since: now },
      { h: make(), since: now },
    ];
    every(() => {
      const s = this.older();
      s.h.reset();
      s.since = this.clock();
    }, windowMs / 2);
  }

  figures(): LoopDelayFigures {
    const { h, since } = this.older();
    const window_s = Math.max(0, Math.round((this.clock() - since) / 100) / 10);
    if (h.count === 0) return { p50_ms: 0, p99_ms: 0, max_ms: 0, window_s };
    return { p50_ms: ms(h.percentile(50)), p99_ms: ms(h.percentile(99)), max_ms: ms(h.max), window_s };
  }

  /** The slot that has recorded longer (the first one on a tie). */
  private older(): { h: DelayHistogram; since: number } {
    return this.slots[1].since < this.slots[0].since ? this.slots[1] : this.slots[0];
  }
}

/** The supervisor's own loop, sampled every 10 ms by libuv (no JavaScript timer per sample). */
export function startLoopDelay(): RollingLoopDelay {
  return new RollingLoopDelay(
    () => {
      const h = monitorEventLoopDelay({ resolution: 10 });
      h.enable();
      return h;
    },
    () => performance.now(),
  );
}
