/** A clock plus timers that only move when the test says so: no real waiting, no flakiness. */
export class ManualTime {
  now: number;
  private seq = 0;
  private readonly timers = new Map<number, { due: number; fn: () => void }>();

  constructor(start = Date.parse("2026-11-30T10:00:00.000Z")) {
    this.now = start;
  }

  readonly clock = (): number => this.now;

  readonly setTimer = (fn: () => void, ms: number): unknown => {
    const id = ++this.seq;
    this.timers.set(id, { due: this.now + Math.max(0, ms), fn });
    return id;
  };

  readonly clearTimer = (h: unknown): void => {
    if (typeof h === "number") this.timers.delete(h);
  };

  get pendingTimers(): number {
    return this.timers.size;
  }

  /** Moves time forward, firing due timers in order and letting promise chains run after each. */
  async advance(ms: number): Promise<void> {
    const target = this.now + ms;
    await flush();
    for (;;) {
      let nextId: number | undefined;
      let nextDue = Number.POSITIVE_INFINITY;
      // Map order is creation order, so a strict "<" fires equal deadlines in creation order.
      for (const [id, t] of this.timers)
        if (t.due <= target && t.due < nextDue) {
          nextId = id;
          nextDue = t.due;
        }
      if (nextId === undefined) break;
      const t = this.timers.get(nextId);
      this.timers.delete(nextId);
      this.now = Math.max(this.now, nextDue);
      t?.fn();
      await flush();
    }
    this.now = target;
    await flush();
  }
}

/** Lets every queued microtask and promise continuation run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((r) => setImmediate(r));
}
