import { isShown, refuseUnactionable } from "../shared/actionable.js";
import { uiError } from "../shared/errors.js";
import { containsPoint, containsRect, offset, type Rect, sameRect } from "../shared/geometry.js";
import { sameInstance } from "../shared/identity.js";
import { pointOccluded, rectOccluded } from "../shared/occlusion.js";
import type { DesktopPort, LiveProof, WindowInfo } from "../shared/platform.js";
import type { TargetExpectation } from "../shared/protocol.js";
import { refuseOffScreen } from "../shared/screenBounds.js";

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
  /** Input devices another client must not hold grabbed (keys: keyboard; clicks: both). */
  grabs?: { keyboard?: boolean; pointer?: boolean };
  /**
   * The listing to judge against instead of enumerating: the supervisor's own, made moments
   * ago, or DesktopPort.targetAndCovers' partial one. Whatever it says, confirmLive still asks
   * the display server.
   */
  windows?: readonly WindowInfo[];
}

export interface VerifiedTarget {
  window: WindowInfo;
  all: readonly WindowInfo[];
  /** What the display server was seen to show (confirmLive), for the event this check clears. */
  proof: LiveProof | null;
}

export async function verifyTarget(
  desktop: DesktopPort,
  expected: TargetExpectation,
  opts: VerifyOptions = {},
): Promise<VerifiedTarget> {
  const all = opts.windows ?? (await desktop.listWindows());
  const window = all.find((w) => w.hwnd === expected.hwnd);
  if (!window || window.owner_exited) throw uiError("target_gone");
  if (!window.instance || !sameInstance(window.instance, expected.instance)) throw uiError("target_changed");
  refuseUnactionable(window, opts.requireForeground === true);
  const bounds: Rect = [0, 0, window.rect[2] - window.rect[0], window.rect[3] - window.rect[1]];
  const points = await pointsInside(desktop, window, all, opts.points ?? []);
  let region: Rect | null = null;
  if (opts.region) {
    if (!containsRect(bounds, opts.region))
      throw uiError(
        "out_of_bounds",
        `The region [${opts.region.join(", ")}] lies outside the target window (${bounds[2]}×${bounds[3]}).`,
      );
    region = offset(opts.region, window.rect[0], window.rect[1]);
  }
  if ((points.length > 0 || region) && !desktop.liveCheckCoversScreen) {
    // Never clamped. A point beyond the edge: XTest (and SendInput) would move the pointer to
    // the edge and press whatever lies there. A region beyond it: the part outside is no one's
    // pixels (the screen read returns black there), so the image would not show what the
    // window shows; the caller asks again for the part on screen (see docs/security.md). A port
    // whose confirmLive reads the screen's bounds in its own batch refuses there instead.
    refuseOffScreen(await desktop.virtualScreen(), points, region);
  }
  for (const p of points) if (pointOccluded(all, window, p.x, p.y)) throw uiError("occluded");
  if (region && rectOccluded(all, window, region)) throw uiError("occluded");
  // Then what the display server itself knows, where the platform can tell (X11).
  const proof =
    (await desktop.confirmLive?.(window, {
      points,
      region,
      focus: opts.requireForeground === true,
      grabs: { keyboard: opts.grabs?.keyboard === true, pointer: opts.grabs?.pointer === true },
    })) ?? null;
  return { window, all, proof };
}

/**
 * The screen points of window-relative `points`, each inside the window or inside one of its
 * process instance's other shown top-levels (its popups, menus, own dialogs: part of it), else
 * out_of_bounds. The instance's other windows are looked up only for a point outside the window.
 */
export async function pointsInside(
  desktop: DesktopPort,
  window: WindowInfo,
  all: readonly WindowInfo[],
  points: ReadonlyArray<{ x: number; y: number }>,
): Promise<Array<{ x: number; y: number }>> {
  const screen = points.map((p) => ({ x: window.rect[0] + p.x, y: window.rect[1] + p.y }));
  const outside = screen.filter((p) => !containsPoint(window.rect, p.x, p.y));
  if (outside.length === 0) return screen;
  const own = window.instance;
  const same = all.filter(
    (w) =>
      w.hwnd !== window.hwnd &&
      isShown(w) &&
      !w.owner_exited &&
      own !== null &&
      w.instance !== null &&
      sameInstance(w.instance, own),
  );
  // Where the platform tells popups from the instance's other top-levels, only popups count.
  const popups = desktop.popupsOf ? await desktop.popupsOf(window, same) : same;
  const areas = popups.map((w) => w.rect);
  if (desktop.unlistedOwnWindows) areas.push(...(await desktop.unlistedOwnWindows(window)));
  const w = window.rect[2] - window.rect[0];
  const h = window.rect[3] - window.rect[1];
  for (const p of outside)
    if (!areas.some((r) => containsPoint(r, p.x, p.y)))
      throw uiError(
        "out_of_bounds",
        `The point (${p.x - window.rect[0]}, ${p.y - window.rect[1]}) lies outside the target window (${w}×${h}); x and y are window-relative, from 0,0 at its top-left corner.`,
      );
  return screen;
}

/**
 * After pixels were read: the window must not have moved, resized or been covered meanwhile.
 * Only what can have changed is read again where the platform can tell (targetAndCovers: the
 * target and the windows above it over the region), else the whole desktop.
 */
export async function verifyUnchangedAfter(
  desktop: DesktopPort,
  expected: TargetExpectation,
  before: WindowInfo,
  region: Rect,
): Promise<void> {
  const windows = await desktop.targetAndCovers?.(expected.hwnd, region);
  const { window } = await verifyTarget(desktop, expected, { region, ...(windows ? { windows } : {}) });
  if (!sameRect(window.rect, before.rect))
    throw uiError("target_changed", "The target window moved or resized.");
}
