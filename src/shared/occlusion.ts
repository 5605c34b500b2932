import { isShown } from "./actionable.js";
import { containsPoint, intersect, type Rect } from "./geometry.js";
import { sameInstance } from "./identity.js";
import type { WindowInfo } from "./platform.js";

/**
 * Windows drawn above `target` that a person would see (visible, not minimized) and that belong
 * to another process instance: the target's own popups, menus and dialogs are part of it.
 */
export function windowsAbove(all: readonly WindowInfo[], target: WindowInfo): WindowInfo[] {
  const own = target.instance;
  return all.filter(
    (w) =>
      w.hwnd !== target.hwnd &&
      w.z < target.z &&
      isShown(w) &&
      !(own !== null && w.instance !== null && sameInstance(w.instance, own)),
  );
}

/**
 * Whether a screen point of `target` is covered by another instance's window above it. A point
 * on one of the instance's own windows stacked above the target (a popup, a menu) is judged from
 * the topmost of those there: what lies under it there is hidden.
 */
export function pointOccluded(all: readonly WindowInfo[], target: WindowInfo, x: number, y: number): boolean {
  const own = target.instance;
  const anchor = all
    .filter(
      (w) =>
        isShown(w) &&
        own !== null &&
        w.instance !== null &&
        sameInstance(w.instance, own) &&
        containsPoint(w.rect, x, y),
    )
    .reduce((top, w) => (w.z < top.z ? w : top), target);
  return windowsAbove(all, anchor).some((w) => containsPoint(w.rect, x, y));
}

/** Whether any part of a screen rect of `target` is covered by a window above it. */
export function rectOccluded(all: readonly WindowInfo[], target: WindowInfo, rect: Rect): boolean {
  return windowsAbove(all, target).some((w) => intersect(w.rect, rect) !== null);
}
