import { z } from "zod";
import { isShown } from "../../shared/actionable.js";
import { uiError } from "../../shared/errors.js";
import { instanceKey, type ProcessInstance } from "../../shared/identity.js";
import type { WindowInfo } from "../../shared/platform.js";
import type { TargetExpectation } from "../../shared/protocol.js";
import type { EffectivePolicy } from "../policy/load.js";
import { windowAllowed } from "../policy/match.js";

/** A window handle as a decimal integer or a string of digits (docs/spec.md §3). */
export const HwndSchema = z
  .union([z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER), z.string().regex(/^\d{1,20}$/)])
  .transform((v) => String(v).replace(/^0+(?=\d)/, ""));

/**
 * Exactly one of hwnd (from list_windows) or title_contains (a title substring that must match
 * exactly one allowed window; the server's instructions say so once instead of in every tool).
 */
export const TargetShape = {
  hwnd: HwndSchema.optional(),
  title_contains: z.string().min(1).max(256).optional(),
};

export function exactlyOneTarget(v: {
  hwnd?: string | undefined;
  title_contains?: string | undefined;
}): boolean {
  return (v.hwnd === undefined) !== (v.title_contains === undefined);
}
export const TARGET_REFINE_MESSAGE = "Give exactly one of hwnd or title_contains.";

export interface TargetArgs {
  hwnd?: string | undefined;
  title_contains?: string | undefined;
}

export interface ResolvedTarget {
  window: WindowInfo;
  instance: ProcessInstance;
  instanceKey: string;
  expectation: TargetExpectation;
  /**
   * The enumeration the target was resolved from, when it was read (Date.now()), and the id the
   * capture worker keeps it under for a moment, when it gave one.
   */
  listing?: { at: number; windows: WindowInfo[]; id?: string };
}

/**
 * The windows list_windows shows (and title_contains searches): visible, not minimized, titled,
 * allowed by title and executable. A minimized window is reached by its hwnd only.
 */
export function allowedWindows(policy: EffectivePolicy, all: readonly WindowInfo[]): WindowInfo[] {
  return all.filter(
    (w) =>
      isShown(w) &&
      w.title !== "" &&
      w.instance !== null &&
      windowAllowed(policy, { title: w.title, exe_path: w.instance.exe_path }),
  );
}

/**
 * Picks the target among live windows. A title match is looked for among allowed
 * windows only, so windows outside the policy neither match nor cause ambiguity.
 */
export function pickTarget(
  policy: EffectivePolicy,
  all: readonly WindowInfo[],
  args: TargetArgs,
): ResolvedTarget {
  let window: WindowInfo | undefined;
  if (args.hwnd !== undefined) {
    window = all.find((w) => w.hwnd === args.hwnd);
    if (!window) throw uiError("target_not_found");
    if (window.owner_exited) throw uiError("target_gone");
    // Minimized windows stay targets (restore_window); a hidden one is found by hwnd so that the
    // call can say what is wrong with it (verification answers target_gone), never by title.
    if (
      !window.instance ||
      !windowAllowed(policy, { title: window.title, exe_path: window.instance.exe_path })
    )
      throw uiError("target_not_allowed");
  } else if (args.title_contains !== undefined) {
    const needle = args.title_contains.toLowerCase();
    // Among the windows list_windows shows: a hidden window with the same title (common for
    // real applications) neither matches nor makes the match ambiguous.
    const matches = allowedWindows(policy, all).filter((w) => w.title.toLowerCase().includes(needle));
    if (matches.length === 0) throw uiError("target_not_found");
    if (matches.length > 1) throw uiError("target_ambiguous");
    window = matches[0];
  } else {
    throw uiError("invalid_argument", "Give exactly one of hwnd or title_contains.");
  }
  const instance = window.instance as ProcessInstance;
  return {
    window,
    instance,
    instanceKey: instanceKey(instance),
    expectation: { hwnd: window.hwnd, instance },
  };
}
