import { z } from "zod";

/** Every stable error code of docs/spec.md §7. Clients and tests depend on these strings. */
export const ERROR_CODES = [
  "invalid_argument",
  "policy_not_configured",
  "policy_conflict",
  "policy_invalid",
  "policy_expired",
  "policy_unreadable",
  /** The policy file or a folder on its path can be written by someone other than the server's user or root. */
  "policy_insecure",
  "action_not_allowed",
  "target_not_allowed",
  "target_not_found",
  "target_ambiguous",
  "target_changed",
  "target_gone",
  "minimized",
  "not_foreground",
  "occluded",
  "out_of_bounds",
  "input_grabbed",
  "consent_required",
  "consent_denied",
  "consent_timeout",
  "consent_pending",
  "capability_expansion_denied",
  "confirmation_required",
  "confirmation_invalid",
  "rate_limited",
  "memory_budget_exceeded",
  "image_too_large",
  "pattern_not_supported",
  "element_stale",
  "worker_crashed",
  "worker_timeout",
  "broker_unavailable",
  "lease_revoked",
  "credential_revoked",
  "platform_unavailable",
  "cancelled",
  /** A wait (wait_for_element) ended without its condition holding. */
  "timeout",
] as const;

export const DenyReasonSchema = z.enum(ERROR_CODES);
/** A stable reason code: the only thing that crosses into results, audit and logs when something fails. */
export type DenyReason = z.infer<typeof DenyReasonSchema>;

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

/** Generic, content-free messages for each code, used when a caller has nothing more specific to say. */
export const DEFAULT_MESSAGES: Record<DenyReason, string> = {
  invalid_argument: "The arguments are invalid.",
  policy_not_configured: "No policy is configured; only health_check is available.",
  policy_conflict: "Both an environment policy and a policy file are configured; use exactly one.",
  policy_invalid: "The policy is invalid.",
  policy_expired: "The policy has expired.",
  policy_unreadable: "The policy file cannot be read.",
  policy_insecure: "The policy file or a folder on its path is writable by another user; it is not obeyed.",
  action_not_allowed: "The policy does not allow this action.",
  target_not_allowed: "The policy does not allow this window.",
  target_not_found: "No matching window was found.",
  target_ambiguous: "More than one window matches; use hwnd.",
  target_changed: "The target process instance changed; access was revoked.",
  target_gone: "The target window no longer exists.",
  minimized: "The target window is minimized.",
  not_foreground: "The target window is not in the foreground.",
  occluded: "The target window is covered at the requested place.",
  out_of_bounds: "A coordinate or region lies outside the target window or the visible screen.",
  input_grabbed: "Another program holds the keyboard or pointer (an open menu or grab); nothing was sent.",
  consent_required: "Access to this window has not been granted; call request_access first.",
  consent_denied: "Access to this window was denied.",
  consent_timeout: "The consent dialog timed out.",
  consent_pending: "A consent or lease dialog of this server is open; no input is sent while it is.",
  capability_expansion_denied: "More capabilities than were approved were requested.",
  confirmation_required: "This action is protected and needs a confirmation token.",
  confirmation_invalid: "The confirmation token is invalid, expired, used or for another target.",
  rate_limited: "Rate limit reached.",
  memory_budget_exceeded: "The screenshot memory budget is exhausted.",
  image_too_large: "The image is larger than allowed.",
  pattern_not_supported: "The element does not support that action.",
  element_stale: "The element reference is no longer valid.",
  worker_crashed: "A platform worker crashed; the request failed.",
  worker_timeout: "A platform worker did not answer in time; the request failed.",
  broker_unavailable: "The lease broker is unavailable.",
  lease_revoked: "The unattended lease was revoked or expired.",
  credential_revoked: "The client's credential was revoked; everything it held has ended.",
  platform_unavailable: "The platform backend is unavailable.",
  cancelled: "The request was cancelled.",
  timeout: "The awaited condition did not hold before the timeout.",
};

export function uiError(code: DenyReason, message?: string, retryAfterMs?: number): UiError {
  return new UiError(code, message ?? DEFAULT_MESSAGES[code], retryAfterMs);
}

/** Turns anything thrown into a UiError without leaking its text. */
export function toUiError(e: unknown, fallback: DenyReason = "platform_unavailable"): UiError {
  if (e instanceof UiError) return e;
  return uiError(fallback);
}
