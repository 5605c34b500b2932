/** The clock and timers idle retirement runs on (injected so tests drive time by hand). */
export interface IdleTime {
  clock(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const REAL_TIME: IdleTime = {
  clock: Date.now,
  setTimer: (fn, ms) => {
    const t = setTimeout(fn, ms);
    // An idle timer alone never keeps the server alive.
    t.unref();
    return t;
  },
  clearTimer: (h) => clearTimeout(h as NodeJS.Timeout),
};

/**
 * When a worker has been idle long enough to be retired: no call in flight, and none begun or
 * ended for `idleMs`. `onIdle` fires once per idle stretch; a call that begins re-arms it.
 * `idleMs` 0 means never.
 *
 * Pure bookkeeping: what retiring means (ending sessions, stopping the worker) is the owner's.
 */
export class IdleRetirement {
  private inflight = 0;
  private lastActivity: number;
  private timer: unknown = null;
  private stopped = false;

  constructor(
    private readonly idleMs: number,
    private readonly onIdle: () => void,
    private readonly time: IdleTime = REAL_TIME,
  ) {
    this.lastActivity = time.clock();
    this.arm();
  }

  /** A call starts: nothing is retired while it runs. */
  begin(): void {
    if (this.stopped) return;
    this.inflight += 1;
    this.lastActivity = this.time.clock();
    this.disarm();
  }

  /** A call ended (answered, failed or cancelled): the idle stretch starts now. */
  end(): void {
    if (this.stopped) return;
    this.inflight = Math.max(0, this.inflight - 1);
    this.lastActivity = this.time.clock();
    this.arm();
  }

  /** Use that is not a call (a session looked up for the call that follows): re-arms the timer. */
  touch(): void {
    this.begin();
    this.end();
  }

  /** Wraps one call: begin before, end after, whatever it settles to. */
  async around<T>(call: () => Promise<T>): Promise<T> {
    this.begin();
    try {
      return await call();
    } finally {
      this.end();
    }
  }

  /** Milliseconds since the last call began or ended (0 while one runs). */
  idleFor(): number {
    return this.inflight > 0 ? 0 : this.time.clock() - this.lastActivity;
  }

  /** No more retirement (the worker ended some other way). */
  stop(): void {
    this.stopped = true;
    this.disarm();
  }

  private arm(): void {
    this.disarm();
    if (this.idleMs <= 0 || this.inflight > 0 || this.stopped) return;
    this.timer = this.time.setTimer(() => this.fire(), this.idleMs);
  }

  private disarm(): void {
    if (this.timer !== null) this.time.clearTimer(this.timer);
    this.timer = null;
  }

  private fire(): void {
    this.timer = null;
    if (this.stopped || this.inflight > 0) return;
    // A timer that fires early (a coarse clock) waits out the rest instead of retiring early.
    const left = this.idleMs - (this.time.clock() - this.lastActivity);
    if (left > 0) {
      this.timer = this.time.setTimer(() => this.fire(), left);
      return;
    }
    this.stopped = true;
    this.onIdle();
  }
}
