import { uiError } from "../shared/errors.js";
import { type IntSetting, SETTINGS } from "../shared/settings.js";

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

export type BudgetKind = "discovery" | "inspection" | "action";

export interface BudgetConfig {
  discoveryPerMinute: number;
  inspectionsPerMinute: number;
  clientActionsPerMinute: number;
}

export interface ApplicationLimits {
  max_actions_per_minute: number;
  max_text_chars_per_minute: number;
  max_screenshot_pixels_per_minute: number;
}

export interface ApplicationBudgetRequest {
  /** The process instance key (never shown). */
  key: string;
  limits: ApplicationLimits;
  /** Characters this call will type (send_text, set_element_value). */
  textChars?: number;
  /** Pixels this call will capture (screenshots). */
  screenshotPixels?: number;
}

/** An application's volume budgets as one call booked them (RateBudgets.applicationCharge). */
export interface ApplicationCharge {
  /**
   * Gives the characters and pixels back, for a call that failed before anything was typed or
   * shown. The call itself stays counted (client budget, application actions). Safe to call
   * any number of times: only the first call gives anything back.
   */
  refund(): void;
}

export interface ApplicationUsage {
  actions: Usage;
  text_chars: Usage;
  screenshot_pixels: Usage;
}

export interface BudgetState {
  window_ms: number;
  client: { discovery: Usage; inspection: Usage; action: Usage };
  application?: ApplicationUsage;
}

export const DEFAULT_BUDGET_CONFIG: BudgetConfig = {
  discoveryPerMinute: SETTINGS.maxDiscoveryPerMinute.default,
  inspectionsPerMinute: SETTINGS.maxInspectionsPerMinute.default,
  clientActionsPerMinute: SETTINGS.maxClientActionsPerMinute.default,
};

interface Step {
  limiter: SlidingWindowLimiter;
  key: string;
  amount: number;
  limit: number;
  /** Plain words for the error message (no keys or identities). */
  what: string;
}

const KIND_TEXT: Record<BudgetKind, string> = {
  discovery: "discovery calls",
  inspection: "inspections",
  action: "actions",
};

/**
 * Per-client and per-application rate budgets over sliding one-minute windows.
 *
 * Client budgets: discovery, inspection and action are separate limiters, so a read loop
 * cannot hide an action burst and an action burst cannot starve reads. Application budgets
 * (keyed by process instance) come from the policy: actions, typed characters and captured
 * pixels per minute. A call either takes from every limiter it touches or from none. A call
 * that fails before it typed or showed anything gets its characters or pixels back
 * (applicationCharge); the call itself stays counted.
 */
export class RateBudgets {
  private readonly discovery: SlidingWindowLimiter;
  private readonly inspection: SlidingWindowLimiter;
  private readonly action: SlidingWindowLimiter;
  private readonly appActions: SlidingWindowLimiter;
  private readonly appText: SlidingWindowLimiter;
  private readonly appPixels: SlidingWindowLimiter;

  constructor(cfg: BudgetConfig, clock: Clock) {
    this.discovery = new SlidingWindowLimiter(cfg.discoveryPerMinute, MINUTE_MS, clock);
    this.inspection = new SlidingWindowLimiter(cfg.inspectionsPerMinute, MINUTE_MS, clock);
    this.action = new SlidingWindowLimiter(cfg.clientActionsPerMinute, MINUTE_MS, clock);
    // Application limits come with each call (policy may be reloaded); 0 is only the default.
    this.appActions = new SlidingWindowLimiter(0, MINUTE_MS, clock);
    this.appText = new SlidingWindowLimiter(0, MINUTE_MS, clock);
    this.appPixels = new SlidingWindowLimiter(0, MINUTE_MS, clock);
  }

  /** Takes one call of `kind` for `client` (plus the application's share); throws rate_limited. */
  take(kind: BudgetKind, client: string, app?: ApplicationBudgetRequest): void {
    this.apply(this.plan(kind, client, app));
  }

  /**
   * Takes only the application's volume budgets (typed characters, captured pixels) once a
   * handler knows its numbers, without counting another call against the client or the
   * application's actions (those were taken by take() at the start of the call).
   */
  takeApplication(app: ApplicationBudgetRequest): void {
    this.apply(this.plan(null, "", app));
  }

  /**
   * The application volume budgets (typed characters, captured pixels) the current call has
   * just taken (take() or takeApplication()), as booked, so failing calls cannot drain them.
   * Call it right after the take (the chain does, and hands it to the handler as ctx.charge):
   * it records the buckets of the latest takes, which later calls move on. The refund then
   * touches only those buckets.
   */
  applicationCharge(
    app: Pick<ApplicationBudgetRequest, "key" | "textChars" | "screenshotPixels">,
  ): ApplicationCharge {
    const booked: Array<[SlidingWindowLimiter, number, number | null]> = [
      [this.appText, app.textChars ?? 0, app.textChars ? this.appText.lastTakeBucket(app.key) : null],
      [
        this.appPixels,
        app.screenshotPixels ?? 0,
        app.screenshotPixels ? this.appPixels.lastTakeBucket(app.key) : null,
      ],
    ];
    let refunded = false;
    return {
      refund: () => {
        if (refunded) return;
        refunded = true;
        for (const [limiter, amount, bucket] of booked)
          if (bucket !== null) limiter.refund(app.key, amount, bucket);
      },
    };
  }

  private apply(steps: Step[]): void {
    let worst: { retryAfterMs: number; what: string; never: boolean } | undefined;
    for (const s of steps) {
      const r = s.limiter.peek(s.key, s.amount, s.limit);
      if (!r.ok) {
        const never = r.exceedsLimit === true;
        if (
          !worst ||
          (never && !worst.never) ||
          (never === worst.never && r.retryAfterMs > worst.retryAfterMs)
        )
          worst = { retryAfterMs: r.retryAfterMs, what: s.what, never };
      }
    }
    if (worst) {
      if (worst.never)
        // Retrying cannot help: no retry_after_ms, so a client does not loop on it.
        throw uiError(
          "rate_limited",
          `This call needs more than the whole per-minute budget for ${worst.what}.`,
        );
      throw uiError("rate_limited", `Rate limit reached for ${worst.what} per minute.`, worst.retryAfterMs);
    }
    // Every peek said yes and nothing runs in between (single thread), so the takes succeed.
    for (const s of steps) s.limiter.tryTake(s.key, s.amount, s.limit);
  }

  /** Limits and usage for get_rate_limit_state: numbers only, never keys or identities. */
  state(client: string, app?: { key: string; limits: ApplicationLimits }): BudgetState {
    const out: BudgetState = {
      window_ms: MINUTE_MS,
      client: {
        discovery: this.discovery.usage(client),
        inspection: this.inspection.usage(client),
        action: this.action.usage(client),
      },
    };
    if (app) out.application = this.applicationState(app.key, app.limits);
    return out;
  }

  /**
   * One application's usage (every client's calls on that process instance) against `limits`.
   * The key only selects; it is never part of the answer.
   */
  applicationState(key: string, limits: ApplicationLimits): ApplicationUsage {
    return {
      actions: this.appActions.usage(key, limits.max_actions_per_minute),
      text_chars: this.appText.usage(key, limits.max_text_chars_per_minute),
      screenshot_pixels: this.appPixels.usage(key, limits.max_screenshot_pixels_per_minute),
    };
  }

  private plan(kind: BudgetKind | null, client: string, app?: ApplicationBudgetRequest): Step[] {
    const steps: Step[] = [];
    if (kind) {
      const clientLimiter = this[kind];
      steps.push({
        limiter: clientLimiter,
        key: client,
        amount: 1,
        limit: clientLimiter.limit,
        what: KIND_TEXT[kind],
      });
    }
    if (!app) return steps;
    for (const n of [app.textChars, app.screenshotPixels]) {
      if (n !== undefined && (!Number.isFinite(n) || n < 0))
        throw uiError("invalid_argument", "Budget amounts must be >= 0.");
    }
    if (kind === "action")
      steps.push({
        limiter: this.appActions,
        key: app.key,
        amount: 1,
        limit: app.limits.max_actions_per_minute,
        what: "actions on this application",
      });
    if (app.textChars !== undefined && app.textChars > 0)
      steps.push({
        limiter: this.appText,
        key: app.key,
        amount: app.textChars,
        limit: app.limits.max_text_chars_per_minute,
        what: "typed characters on this application",
      });
    if (app.screenshotPixels !== undefined && app.screenshotPixels > 0)
      steps.push({
        limiter: this.appPixels,
        key: app.key,
        amount: app.screenshotPixels,
        limit: app.limits.max_screenshot_pixels_per_minute,
        what: "screenshot pixels on this application",
      });
    return steps;
  }
}

type Env = Record<string, string | undefined>;

/**
 * Reads one positive integer from the environment. A set but malformed or out-of-range value
 * throws invalid_argument naming the variable (never its value): a budget the operator meant
 * to set must not silently fall back to a default.
 */
export function readIntEnv(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return def;
  const s = raw.trim();
  if (!/^\d+$/.test(s))
    throw uiError("invalid_argument", `${name} must be an integer between ${min} and ${max}.`);
  const n = Number(s);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw uiError("invalid_argument", `${name} must be an integer between ${min} and ${max}.`);
  return n;
}

/** A strict integer setting with its range and default from the settings table. */
export function readSettingInt(env: Env, s: IntSetting): number {
  return readIntEnv(env, s.env, s.default, s.min, s.max);
}

/** Client budgets from UIINSPECT_MAX_*; each 1..100000 per minute. Throws invalid_argument (see readIntEnv). */
export function budgetConfigFromEnv(env: Env): BudgetConfig {
  return {
    discoveryPerMinute: readSettingInt(env, SETTINGS.maxDiscoveryPerMinute),
    inspectionsPerMinute: readSettingInt(env, SETTINGS.maxInspectionsPerMinute),
    clientActionsPerMinute: readSettingInt(env, SETTINGS.maxClientActionsPerMinute),
  };
}

export interface Reservation {
  readonly bytes: number;
  /** Returns the bytes to the budget; safe to call any number of times. */
  release(): void;
}

interface Waiter {
  bytes: number;
  resolve: (r: Reservation) => void;
  reject: (e: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export const MIB = 1024 * 1024;
export const DEFAULT_MEMORY_BUDGET_BYTES = SETTINGS.screenshotMemoryBudgetBytes.default;
export const MIN_MEMORY_BUDGET_BYTES = SETTINGS.screenshotMemoryBudgetBytes.min;
export const MAX_MEMORY_BUDGET_BYTES = SETTINGS.screenshotMemoryBudgetBytes.max;

/**
 * Process-wide byte budget for image work. Waiters are served strictly first in, first out:
 * a small request never overtakes a large one that is waiting, so large ones cannot starve.
 */
export class MemoryBudget {
  private used = 0;
  private high = 0;
  private readonly queue: Waiter[] = [];

  constructor(readonly limitBytes: number) {
    if (!Number.isSafeInteger(limitBytes) || limitBytes < 1)
      throw uiError("invalid_argument", "Memory budget must be a positive integer.");
  }

  get inUse(): number {
    return this.used;
  }

  get peak(): number {
    return this.high;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** A reservation now, or null when it does not fit or others are already waiting. */
  tryReserve(bytes: number): Reservation | null {
    this.check(bytes);
    if (this.queue.length > 0 || this.used + bytes > this.limitBytes) return null;
    return this.grant(bytes);
  }

  /**
   * Waits in FIFO order for `bytes`. More than the whole budget fails at once with
   * memory_budget_exceeded; an aborted signal fails with cancelled and leaves the queue.
   */
  reserve(bytes: number, signal?: AbortSignal): Promise<Reservation> {
    try {
      this.check(bytes);
    } catch (e) {
      return Promise.reject(e);
    }
    if (bytes > this.limitBytes) return Promise.reject(uiError("memory_budget_exceeded"));
    if (signal?.aborted) return Promise.reject(uiError("cancelled"));
    const now = this.tryReserve(bytes);
    if (now) return Promise.resolve(now);
    return new Promise<Reservation>((resolve, reject) => {
      const w: Waiter = { bytes, resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          const i = this.queue.indexOf(w);
          if (i < 0) return; // already granted
          this.queue.splice(i, 1);
          reject(uiError("cancelled"));
          this.drain(); // the head may have been blocking smaller requests behind it
        };
        signal.addEventListener("abort", w.onAbort, { once: true });
      }
      this.queue.push(w);
    });
  }

  private check(bytes: number): void {
    if (!Number.isSafeInteger(bytes) || bytes < 0)
      throw uiError("invalid_argument", "Reserved bytes must be a non-negative integer.");
  }

  private grant(bytes: number): Reservation {
    this.used += bytes;
    if (this.used > this.high) this.high = this.used;
    let released = false;
    return {
      bytes,
      release: () => {
        if (released) return;
        released = true;
        this.used -= bytes;
        this.drain();
      },
    };
  }

  private drain(): void {
    while (this.queue.length > 0) {
      const head = this.queue[0];
      if (this.used + head.bytes > this.limitBytes) return;
      this.queue.shift();
      if (head.signal && head.onAbort) head.signal.removeEventListener("abort", head.onAbort);
      head.resolve(this.grant(head.bytes));
    }
  }
}

/** DESKTOP_AUTOMATION_SCREENSHOT_MEMORY_BUDGET_BYTES (default 128 MiB, 1 MiB..2 GiB); throws invalid_argument. */
export function memoryBudgetBytesFromEnv(env: Env): number {
  return readSettingInt(env, SETTINGS.screenshotMemoryBudgetBytes);
}

/** The process-wide budget, read once at start-up (later env changes have no effect). */
export function memoryBudgetFromEnv(env: Env): MemoryBudget {
  return new MemoryBudget(memoryBudgetBytesFromEnv(env));
}
