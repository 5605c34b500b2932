import { uiError } from "./errors.js";
import type { WindowInfo } from "./platform.js";

type WindowState = Pick<WindowInfo, "iconic" | "visible" | "foreground">;

/** Why an effect on a window would be refused for the window's own state. */
export type Unactionable = "minimized" | "target_gone" | "not_foreground";

/** Shown on screen: visible and not minimized (what lists, searches and popups count). */
export function isShown(window: Pick<WindowInfo, "iconic" | "visible">): boolean {
  return window.visible && !window.iconic;
}

/**
 * The one "window is actionable" predicate: not minimized, shown, and in front when the effect
 * is input (in the passive focus mode). The worker applies it right before every effect
 * (src/workers/verify.ts); the supervisor's access decision applies it before a confirmation
 * token is issued, so a token is never handed out for an action refused for these reasons.
 */
export function unactionable(window: WindowState, requireForeground: boolean): Unactionable | null {
  if (window.iconic) return "minimized";
  if (!window.visible) return "target_gone";
  if (requireForeground && !window.foreground) return "not_foreground";
  return null;
}

/** The fixed wording of each refusal (undefined: the code's default message). */
export const UNACTIONABLE_MESSAGES: Readonly<Record<Unactionable, string | undefined>> = {
  minimized: undefined,
  target_gone: "The target window is not visible.",
  not_foreground: undefined,
};

/** The refusal of `unactionable` as an error (its fixed wording), or nothing. */
export function refuseUnactionable(
  window: WindowState,
  requireForeground: boolean,
  minimizedHint?: string,
): void {
  const why = unactionable(window, requireForeground);
  if (why === null) return;
  throw uiError(why, why === "minimized" ? minimizedHint : UNACTIONABLE_MESSAGES[why]);
}
