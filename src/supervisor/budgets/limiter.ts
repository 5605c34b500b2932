import { uiError } from "../../shared/errors.js";

/**
 * The sliding-window limiter every rate budget is made of (rate.ts; also the consent broker's
 * dialog rate): bucketed one-minute windows per key, O(1) per check.
 */
/** Milliseconds since the epoch; injected so every budget is testable without waiting. */
export type Clock = () => number;

export const MINUTE_MS = 60_000;

/** Refusal carries when the same request could succeed; `exceedsLimit` means never (amount > limit). */
export type TakeResult = { ok: true } | { ok: false; retryAfterMs: number; exceedsLimit?: true };

export interface Usage {
  used: number;
  limit: number;
}

interface KeyState {
  /** Amount taken per bucket; slot = absolute bucket index mod ring length. */
  readonly buckets: Float64Array;
  /** Absolute index of the newest bucket the ring has been advanced to. */
  head: number;
  /** Absolute bucket of the last take: the map is ordered by it, and idleness is judged by it. */
  lastTake: number;
  /** Running sum of all live buckets, so a check never walks the ring. */
  sum: number;
}

/**
 * Sliding-window counter per key, bucketed so a check is O(1).
 *
 * Precision: the window is split into `buckets` buckets (default 60: one-second buckets for a
 * one-minute window). An amount taken at time t is counted from t until the end of the bucket
 * holding t + windowMs, i.e. for at least windowMs and at most windowMs + one bucket. The
 * limiter is therefore conservative: it never admits more than `limit` within any real
 * windowMs span, and may refuse for up to one bucket (1 s) longer than an exact log would.
 *
 * Memory: keys are kept in least-recently-taken order (Map insertion order, re-inserted on
 * every take); each take also drops keys from the front whose whole window has passed, so an
 * idle key costs nothing after one window and the clean-up is amortized O(1).
 */
export class SlidingWindowLimiter {
  readonly windowMs: number;
  readonly bucketMs: number;
  private readonly ring: number;
  private readonly keys = new Map<string, KeyState>();

  constructor(
    public readonly limit: number,
    windowMs: number,
    private readonly clock: Clock,
    buckets = 60,
  ) {
    if (!Number.isFinite(limit) || limit < 0)
      throw uiError("invalid_argument", "Limiter limit must be >= 0.");
    if (!Number.isFinite(windowMs) || windowMs <= 0)
      throw uiError("invalid_argument", "Limiter window must be > 0 ms.");
    if (!Number.isInteger(buckets) || buckets < 1 || buckets > 3600)
      throw uiError("invalid_argument", "Limiter bucket count must be 1..3600.");
    this.windowMs = windowMs;
    this.bucketMs = windowMs / buckets;
    // One extra slot: the current partial bucket plus `buckets` whole ones behind it (see precision).
    this.ring = buckets + 1;
  }

  /** Takes `amount` under `key` when it fits; `limit` overrides the default (per-application limits). */
  tryTake(key: string, amount = 1, limit = this.limit): TakeResult {
    const now = this.clock();
    this.dropIdle(now);
    const verdict = this.evaluate(key, amount, limit, now);
    if (!verdict.ok || amount === 0) return verdict;
    const cur = this.bucketOf(now);
    let st = this.keys.get(key);
    if (st) {
      this.advance(st, cur);
      this.keys.delete(key); // re-insert: keeps the map in least-recently-taken order
    } else {
      st = { buckets: new Float64Array(this.ring), head: cur, lastTake: cur, sum: 0 };
    }
    // A clock that stepped back books into the newest bucket, which is held longest.
    const b = Math.max(cur, st.head);
    st.buckets[this.slot(b)] += amount;
    st.sum += amount;
    st.lastTake = b;
    this.keys.set(key, st);
    return verdict;
  }

  /** Absolute bucket the latest take under `key` was booked into, or null (for refund). */
  lastTakeBucket(key: string): number | null {
    return this.keys.get(key)?.lastTake ?? null;
  }

  /**
   * Gives back up to `amount` of one take under `key` that was booked into `bucket` (read with
   * lastTakeBucket right after the take), for a call that failed before it used what it took.
   * Only that bucket is touched, so every other take keeps its own expiry and the limiter stays
   * exactly as conservative as before; once the bucket has left the window the take has aged
   * out already and nothing is given back. Returns the amount given back.
   */
  refund(key: string, amount: number, bucket: number): number {
    if (!Number.isFinite(amount) || amount < 0) throw uiError("invalid_argument", "Amount must be >= 0.");
    const st = this.keys.get(key);
    if (!st || amount === 0 || !Number.isInteger(bucket)) return 0;
    this.advance(st, this.bucketOf(this.clock()));
    if (bucket > st.head || bucket <= st.head - this.ring) return 0;
    const slot = this.slot(bucket);
    const d = Math.min(amount, st.buckets[slot]);
    st.buckets[slot] -= d;
    st.sum -= d;
    if (st.sum < 1e-9) st.sum = 0; // float drift from fractional amounts
    return d;
  }

  /** Same verdict as tryTake, without taking. */
  peek(key: string, amount = 1, limit = this.limit): TakeResult {
    return this.evaluate(key, amount, limit, this.clock());
  }

  usage(key: string, limit = this.limit): Usage {
    const st = this.keys.get(key);
    if (!st) return { used: 0, limit };
    this.advance(st, this.bucketOf(this.clock()));
    return { used: st.sum, limit };
  }

  /** Number of keys currently held (for tests and health figures). */
  get size(): number {
    return this.keys.size;
  }

  private bucketOf(now: number): number {
    return Math.floor(now / this.bucketMs);
  }

  private slot(bucket: number): number {
    return ((bucket % this.ring) + this.ring) % this.ring;
  }

  private evaluate(key: string, amount: number, limit: number, now: number): TakeResult {
    if (!Number.isFinite(amount) || amount < 0) throw uiError("invalid_argument", "Amount must be >= 0.");
    if (amount > limit) return { ok: false, retryAfterMs: this.windowMs, exceedsLimit: true };
    const st = this.keys.get(key);
    if (!st) return { ok: true };
    const cur = this.bucketOf(now);
    this.advance(st, cur);
    if (st.sum + amount <= limit) return { ok: true };
    // Refusal only: walk from the oldest live bucket until enough has aged out (bounded by ring).
    let freed = 0;
    for (let b = cur - this.ring + 1; b <= cur; b++) {
      freed += st.buckets[this.slot(b)];
      if (st.sum - freed + amount <= limit) {
        const expiresAt = (b + this.ring) * this.bucketMs;
        return { ok: false, retryAfterMs: Math.max(1, Math.ceil(expiresAt - now)) };
      }
    }
    return { ok: false, retryAfterMs: this.windowMs };
  }

  /** Moves the ring forward to `cur`, clearing buckets that left the window. */
  private advance(st: KeyState, cur: number): void {
    if (cur <= st.head) return; // a clock that steps back keeps the newer state (stays conservative)
    if (cur - st.head >= this.ring) {
      st.buckets.fill(0);
      st.sum = 0;
    } else {
      for (let b = st.head + 1; b <= cur; b++) {
        const slot = this.slot(b);
        st.sum -= st.buckets[slot];
        st.buckets[slot] = 0;
      }
      if (st.sum < 1e-9) st.sum = 0; // float drift from fractional amounts
    }
    st.head = cur;
  }

  private dropIdle(now: number): void {
    const cur = this.bucketOf(now);
    for (const [key, st] of this.keys) {
      // Least recently taken first: the first key still inside its window ends the sweep.
      if (cur - st.lastTake < this.ring) break;
      this.keys.delete(key);
    }
  }
}
