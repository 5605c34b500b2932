import { uiError } from "../shared/errors.js";
import { containsPoint, containsRect, offset, type Rect, sameRect } from "../shared/geometry.js";
import { sameInstance } from "../shared/identity.js";
import { pointOccluded, rectOccluded } from "../shared/occlusion.js";
import type { DesktopPort, WindowInfo } from "../shared/platform.js";
import type { TargetExpectation } from "../shared/protocol.js";

/**
 * The last-moment checks. They run inside the worker that produces the effect,
 * immediately before it, against a fresh enumeration of the live desktop.
 */
export interface VerifyOptions {
  /** Input needs the window in front; observation does not. */
  requireForeground?: boolean;
  /** Window-relative points that must lie inside the window and be uncovered. */
  points?: ReadonlyArray<{ x: number; y: number }>;
  /** Window-relative region that must lie inside the window and be uncovered. */
  region?: Rect;
}

export interface VerifiedTarget {
  window: WindowInfo;
  all: WindowInfo[];
}

export async function verifyTarget(
  desktop: DesktopPort,
  expected: TargetExpectation,
  opts: VerifyOptions = {},
): Promise<VerifiedTarget> {
  const all = await desktop.listWindows();
  const window = all.find((w) => w.hwnd === expected.hwnd);
  if (!window || window.owner_exited) throw uiError("target_gone");
  if (!window.instance || !sameInstance(window.instance, expected.instance)) throw uiError("target_changed");
  if (window.iconic) throw uiError("minimized");
  if (!window.visible) throw uiError("target_gone", "The target window is not visible.");
  if (opts.requireForeground && !window.foreground) throw uiError("not_foreground");
  const bounds: Rect = [0, 0, window.rect[2] - window.rect[0], window.rect[3] - window.rect[1]];
  for (const p of opts.points ?? []) {
    if (!containsPoint(bounds, p.x, p.y)) throw uiError("out_of_bounds");
    if (pointOccluded(all, window, window.rect[0] + p.x, window.rect[1] + p.y)) throw uiError("occluded");
  }
  if (opts.region) {
    if (!containsRect(bounds, opts.region)) throw uiError("out_of_bounds");
    if (rectOccluded(all, window, offset(opts.region, window.rect[0], window.rect[1])))
      throw uiError("occluded");
  }
  return { window, all };
}

/** After pixels were read: the window must not have moved, resized or been covered meanwhile. */
export async function verifyUnchangedAfter(
  desktop: DesktopPort,
  expected: TargetExpectation,
  before: WindowInfo,
  region: Rect,
): Promise<void> {
  const { window } = await verifyTarget(desktop, expected, { region });
  if (!sameRect(window.rect, before.rect))
    throw uiError("target_changed", "The target window moved or resized.");
}
