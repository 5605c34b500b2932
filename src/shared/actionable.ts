import { uiError } from "./errors.js";
import type { WindowInfo } from "./platform.js";

/**
 * The one "window is actionable" predicate: not minimized, shown, and in front when the effect
 * is input (in the passive focus mode). The worker applies it right before every effect
 * (src/workers/verify.ts), and request_confirmation before it issues a token, so a token is
 * never handed out for an action that would be refused for these reasons.
 */
export function refuseUnactionable(
  window: Pick<WindowInfo, "iconic" | "visible" | "foreground">,
  requireForeground: boolean,
): void {
  if (window.iconic) throw uiError("minimized");
  if (!window.visible) throw uiError("target_gone", "The target window is not visible.");
  if (requireForeground && !window.foreground) throw uiError("not_foreground");
}
