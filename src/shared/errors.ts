import { z } from "zod";

/**
 * Every stable error code (docs/spec.md §7), in one table: the generic, content-free message a
 * caller uses when it has nothing more specific to say, and whether the code is a denial (the
 * policy, a person, a token, a budget or a lease said no: audited as `deny`) rather than a
 * failure (audited as `error`). Clients and tests depend on these strings.
 */
export const ERROR_TABLE = {
  invalid_argument: { message: "The arguments are invalid.", denial: false },
  policy_not_configured: {
    message: "No policy is configured; only health_check is available.",
    denial: true,
  },
  policy_conflict: {
    message: "Both an environment policy and a policy file are configured; use exactly one.",
    denial: true,
  },
  policy_invalid: { message: "The policy is invalid.", denial: true },
  policy_expired: { message: "The policy has expired.", denial: true },
  policy_unreadable: { message: "The policy file cannot be read.", denial: true },
  /** The policy file or a folder on its path can be written by someone other than the server's user or root. */
  policy_insecure: {
    message: "The policy file or a folder on its path is writable by another user; it is not obeyed.",
    denial: true,
  },
  action_not_allowed: { message: "The policy does not allow this action.", denial: true },
  target_not_allowed: { message: "The policy does not allow this window.", denial: true },
  target_not_found: { message: "No matching window was found.", denial: false },
  target_ambiguous: { message: "More than one window matches; use hwnd.", denial: false },
  target_changed: { message: "The target process instance changed; access was revoked.", denial: false },
  target_gone: { message: "The target window no longer exists.", denial: false },
  minimized: { message: "The target window is minimized.", denial: false },
  not_foreground: { message: "The target window is not in the foreground.", denial: false },
  occluded: { message: "The target window is covered at the requested place.", denial: false },
  out_of_bounds: {
    message: "A coordinate or region lies outside the target window or the visible screen.",
    denial: false,
  },
  input_grabbed: {
    message: "Another program holds the keyboard or pointer (an open menu or grab); nothing was sent.",
    denial: false,
  },
  consent_required: {
    message: "Access to this window has not been granted; call request_access first.",
    denial: true,
  },
  consent_denied: { message: "Access to this window was denied.", denial: true },
  consent_timeout: { message: "The consent dialog timed out.", denial: false },
  consent_pending: {
    message: "A consent or lease dialog of this server is open; no input is sent while it is.",
    denial: false,
  },
  capability_expansion_denied: {
    message: "More capabilities than were approved were requested.",
    denial: true,
  },
  confirmation_required: {
    message: "This action is protected and needs a confirmation token.",
    denial: true,
  },
  confirmation_invalid: {
    message: "The confirmation token is invalid, expired, used or for another target.",
    denial: true,
  },
  rate_limited: { message: "Rate limit reached.", denial: true },
  memory_budget_exceeded: { message: "The screenshot memory budget is exhausted.", denial: true },
  image_too_large: { message: "The image is larger than allowed.", denial: false },
  pattern_not_supported: { message: "The element does not support that action.", denial: false },
  element_stale: { message: "The element reference is no longer valid.", denial: false },
  worker_crashed: { message: "A platform worker crashed; the request failed.", denial: false },
  worker_timeout: { message: "A platform worker did not answer in time; the request failed.", denial: false },
  broker_unavailable: { message: "The lease broker is unavailable.", denial: false },
  lease_revoked: { message: "The unattended lease was revoked or expired.", denial: true },
  credential_revoked: {
    message: "The client's credential was revoked; everything it held has ended.",
    denial: true,
  },
  platform_unavailable: { message: "The platform backend is unavailable.", denial: false },
  cancelled: { message: "The request was cancelled.", denial: false },
  /** A wait (wait_for_element) ended without its condition holding. */
  timeout: { message: "The awaited condition did not hold before the timeout.", denial: false },
  /** The configured audit file cannot be written: nothing that acts on a window runs until it can. */
  audit_unavailable: {
    message: "The configured audit file cannot be written; no action runs until it can.",
    denial: false,
  },
} as const satisfies Record<string, { message: string; denial: boolean }>;

export type DenyReason = keyof typeof ERROR_TABLE;

/** The codes, in the table's order. */
export const ERROR_CODES = Object.keys(ERROR_TABLE) as [DenyReason, ...DenyReason[]];

/** A stable reason code: the only thing that crosses into results, audit and logs when something fails. */
export const DenyReasonSchema = z.enum(ERROR_CODES);

export const UiErrorBodySchema = z.object({
  code: DenyReasonSchema,
  message: z.string(),
  retry_after_ms: z.number().int().nonnegative().optional(),
});
export type UiErrorBody = z.infer<typeof UiErrorBodySchema>;

/**
 * An error as a value with a code. Messages are written by us from fixed text and
 * numbers only: never titles, typed text, values or raw provider exceptions.
 */
export class UiError extends Error {
  readonly code: DenyReason;
  readonly retryAfterMs: number | undefined;

  constructor(code: DenyReason, message: string, retryAfterMs?: number) {
    super(message);
    this.name = "UiError";
    this.code = code;
    this.retryAfterMs = retryAfterMs;
  }

  toBody(): UiErrorBody {
    const body: UiErrorBody = { code: this.code, message: this.message };
    if (this.retryAfterMs !== undefined) body.retry_after_ms = Math.max(0, Math.ceil(this.retryAfterMs));
    return body;
  }

  static fromBody(body: UiErrorBody): UiError {
    return new UiError(body.code, body.message, body.retry_after_ms);
  }
}

export function isUiError(e: unknown): e is UiError {
  return e instanceof UiError;
}

/** Generic, content-free messages for each code (the table's). */
export const DEFAULT_MESSAGES = Object.fromEntries(
  ERROR_CODES.map((c) => [c, ERROR_TABLE[c].message]),
) as Record<DenyReason, string>;

/** True for the codes that say no (audited as `deny`), false for failures (`error`). */
export function isDenial(code: DenyReason): boolean {
  return ERROR_TABLE[code].denial;
}

export function uiError(code: DenyReason, message?: string, retryAfterMs?: number): UiError {
  return new UiError(code, message ?? DEFAULT_MESSAGES[code], retryAfterMs);
}

/** Turns anything thrown into a UiError without leaking its text. */
export function toUiError(e: unknown, fallback: DenyReason = "platform_unavailable"): UiError {
  if (e instanceof UiError) return e;
  return uiError(fallback);
}
