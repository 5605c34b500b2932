import { uiError } from "../../shared/errors.js";
import { SETTINGS } from "../../shared/settings.js";
import { type Env, readSetting } from "../../shared/settingsReader.js";
import { type Clock, MINUTE_MS, SlidingWindowLimiter, type Usage } from "./limiter.js";

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
  /** Where the operator raises this limit, named in the refusal. */
  setting: string;
}

const KIND_TEXT: Record<BudgetKind, string> = {
  discovery: "discovery calls",
  inspection: "inspections",
  action: "actions",
};

const KIND_SETTING: Record<BudgetKind, string> = {
  discovery: SETTINGS.maxDiscoveryPerMinute.env,
  inspection: SETTINGS.maxInspectionsPerMinute.env,
  action: SETTINGS.maxClientActionsPerMinute.env,
};

/** An application limit is the policy file's `limits` field, or its environment variable. */
const appSetting = (field: keyof ApplicationLimits, env: string) =>
  `the policy file's limits.${field} or ${env}`;

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
   * Whether take() would let a call of `kind` through now; nothing is taken. For work begun
   * before the call is authorized (ToolDef.observeAhead): a client out of budget starts none.
   */
  wouldAllow(kind: BudgetKind, client: string, app?: ApplicationBudgetRequest): boolean {
    return this.plan(kind, client, app).every((s) => s.limiter.peek(s.key, s.amount, s.limit).ok);
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
   * Call it right after the take (the chain does, and hands it to the handler as call.charge):
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
    let worst: { retryAfterMs: number; step: Step; never: boolean } | undefined;
    for (const s of steps) {
      const r = s.limiter.peek(s.key, s.amount, s.limit);
      if (!r.ok) {
        const never = r.exceedsLimit === true;
        if (
          !worst ||
          (never && !worst.never) ||
          (never === worst.never && r.retryAfterMs > worst.retryAfterMs)
        )
          worst = { retryAfterMs: r.retryAfterMs, step: s, never };
      }
    }
    if (worst) {
      const { what, limit, setting } = worst.step;
      if (worst.never)
        // Retrying cannot help: no retry_after_ms, so a client does not loop on it.
        throw uiError(
          "rate_limited",
          `This call needs more than the whole per-minute budget for ${what} (${limit}, set by ${setting}).`,
        );
      throw uiError(
        "rate_limited",
        `Rate limit reached: ${limit} ${what} per minute (set by ${setting}); retry after retry_after_ms.`,
        worst.retryAfterMs,
      );
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
        setting: KIND_SETTING[kind],
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
        setting: appSetting("max_actions_per_minute", SETTINGS.maxActionsPerMinute.env),
      });
    if (app.textChars !== undefined && app.textChars > 0)
      steps.push({
        limiter: this.appText,
        key: app.key,
        amount: app.textChars,
        limit: app.limits.max_text_chars_per_minute,
        what: "typed characters on this application",
        setting: appSetting("max_text_chars_per_minute", SETTINGS.maxTextCharsPerMinute.env),
      });
    if (app.screenshotPixels !== undefined && app.screenshotPixels > 0)
      steps.push({
        limiter: this.appPixels,
        key: app.key,
        amount: app.screenshotPixels,
        limit: app.limits.max_screenshot_pixels_per_minute,
        what: "screenshot pixels on this application",
        setting: appSetting("max_screenshot_pixels_per_minute", SETTINGS.maxScreenshotPixelsPerMinute.env),
      });
    return steps;
  }
}

/**
 * Client budgets from UIINSPECT_MAX_*; each 1..100000 per minute. A set but bad value throws
 * invalid_argument naming the variable, never its value (the table's strictness): a budget the
 * operator meant to set must not silently fall back to a default.
 */
export function budgetConfigFromEnv(env: Env): BudgetConfig {
  return {
    discoveryPerMinute: readSetting(env, SETTINGS.maxDiscoveryPerMinute),
    inspectionsPerMinute: readSetting(env, SETTINGS.maxInspectionsPerMinute),
    clientActionsPerMinute: readSetting(env, SETTINGS.maxClientActionsPerMinute),
  };
}
