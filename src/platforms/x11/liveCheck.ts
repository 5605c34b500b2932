import { isUiError, uiError } from "../../shared/errors.js";
import { containsPoint, intersect, type Rect } from "../../shared/geometry.js";
import type { LiveCheck, WindowInfo } from "../../shared/platform.js";
import { refuseOffScreen } from "../../shared/screenBounds.js";
import type { X11Desktop } from "./desktop.js";
import { pointerGrabProvenFor } from "./grabOwner.js";
import type { Pending, XConnection } from "./xconn.js";

/**
 * The X11 last-moment checks, from what only the X server knows (docs/x11.md, "Server truth"):
 *
 * - grabs: a probing GrabKeyboard / GrabPointer on the root, released in the same batch;
 *   AlreadyGrabbed (or Frozen) means another client holds the device → input_grabbed;
 * - stacking: QueryTree on the root (bottom to top, override-redirect windows included). Every
 *   viewable top-level above the target's frame that overlaps a point (any window: InputOnly
 *   ones take clicks) or the region (InputOutput only: they have pixels) occludes, unless the
 *   X server names the target's own process as its owner (its popups, menus, tooltips);
 * - hit test: TranslateCoordinates at each exact point: the top-level there is the target's
 *   frame and the frame's child there is the client (not the WM's title bar or buttons), or a
 *   top-level of the target's own process;
 * - focus: GetInputFocus lies in the client's subtree;
 * - screen: every point and the region lie on the root window (its geometry now: RandR may have
 *   resized it), else out_of_bounds, never clamped.
 *
 * One batch of requests on this worker's xcb connection, then the replies; a second one only for
 * windows above the target that the first did not ask about (attributes, geometry), and one
 * X-Resource request for owners. The first batch asks about the windows that were above the
 * target's frame at the last look at the root's children, so the second is usually empty; what
 * is judged is still the stacking of this batch's own QueryTree.
 */

const GRAB_SUCCESS = 0;

export async function confirmLive(
  x: XConnection,
  desktop: X11Desktop,
  target: WindowInfo,
  check: LiveCheck,
): Promise<void> {
  const client = Number(target.hwnd);
  if (check.focus) x.confirmedFocus = null;
  if (check.grabs.pointer) x.confirmedPoints = null;
  const grabs = x.probeGrabs(check.grabs.keyboard, check.grabs.pointer);
  const rootTree = x.queryTree(x.root);
  // A key (no point, no region) goes to the focus, which is checked below: neither the screen's
  // bounds nor what is stacked above the target matter to it (a key check runs per character).
  const onScreen = check.points.length > 0 || check.region !== null;
  const rootGeom = onScreen ? x.getGeometry(x.root) : null;
  const focus = check.focus ? x.inputFocus() : null;
  const hits = check.points.map((p) => x.childAt(x.root, p.x, p.y));
  const frame = desktop.framesByClient.get(client)?.frame ?? client;
  const lastAt = onScreen ? desktop.lastRootChildren.indexOf(frame) : -1;
  const early = new Map(
    (lastAt >= 0 ? desktop.lastRootChildren.slice(lastAt + 1) : []).map((w) => [
      w,
      { attrs: x.getMapState(w), geom: x.getGeometry(w) },
    ]),
  );
  // Read every reply of the batch before judging, so nothing stays queued on the connection.
  const kb = grabs.keyboard ? settle(grabs.keyboard) : null;
  const ptr = grabs.pointer ? settle(grabs.pointer) : null;
  const tree = settle(rootTree);
  const screen = rootGeom ? settle(rootGeom) : null;
  const focused = focus ? settle(focus) : null;
  const topAt = hits.map(settle);
  for (const e of early.values()) {
    settle(e.attrs);
    settle(e.geom);
  }
  if (screen) {
    const g = replyValue(screen);
    refuseOffScreen([0, 0, g.width, g.height], check.points, check.region);
  }
  const keyboardHeld = kb !== null && replyValue(kb) !== GRAB_SUCCESS;
  const pointerHeld = ptr !== null && replyValue(ptr) !== GRAB_SUCCESS;
  const children = replyValue(tree).children;
  desktop.lastRootChildren = children;
  const hitTops = topAt.map(replyValue);
  const focusWin = focused ? replyValue(focused) : null;
  // A held grab is another client's unless proven the target's, and that only for a press: its
  // events follow the pointer grab (a toolkit's popup grabs both devices; see grabOwner.ts).
  const mayBeTargetsGrab = pointerHeld && check.points.length > 0;
  if ((keyboardHeld || pointerHeld) && !mayBeTargetsGrab) throw uiError("input_grabbed");

  const at = children.indexOf(frame);
  if (at < 0) {
    // Destroyed meanwhile (its frame went with it): gone, not changed. Asked only on this path.
    const state = settle(x.getMapState(client));
    if ("error" in state && isUiError(state.error) && state.error.code === "target_gone")
      throw uiError("target_gone");
    throw uiError("target_changed", "The target window's frame changed.");
  }
  const above = onScreen ? children.slice(at + 1) : [];
  // Asked in the first batch, else now: all requests first, then all replies (one round trip for
  // whatever the first batch did not cover).
  const asked = above.map((w) => ({
    w,
    ...(early.get(w) ?? { attrs: x.getMapState(w), geom: x.getGeometry(w) }),
  }));
  const candidates: Array<{ win: number; rect: Rect; inputOnly: boolean }> = [];
  // Mapped override-redirect windows above the frame (menus, popups): a grab can be the target's
  // own only while one of them is its process's.
  const popupsAbove: number[] = [];
  asked.forEach(({ w, attrs, geom }) => {
    const a = settle(attrs);
    const g = settle(geom);
    // A window that vanished meanwhile covers nothing any more.
    if ("error" in a || "error" in g || a.value.mapState !== 2) return;
    if (a.value.overrideRedirect) popupsAbove.push(w);
    const r: Rect = [
      g.value.x,
      g.value.y,
      g.value.x + g.value.width + 2 * g.value.border,
      g.value.y + g.value.height + 2 * g.value.border,
    ];
    const onPoint = check.points.some((p) => containsPoint(r, p.x, p.y));
    const onRegion = !a.value.inputOnly && check.region !== null && intersect(r, check.region) !== null;
    if (onPoint || onRegion) candidates.push({ win: w, rect: r, inputOnly: a.value.inputOnly });
  });

  const owners = ownerPids(x, desktop, [
    ...candidates.map((c) => c.win),
    ...hitTops.filter((w) => w !== frame && w !== 0),
    ...(mayBeTargetsGrab ? popupsAbove : []),
  ]);
  const ours = (w: number) => target.pid > 0 && owners.get(w) === target.pid;
  // Proving a grab's owner moves the pointer a pixel and back (grabOwner.ts), which the grabbing
  // client sees: only try when the target has a popup open that explains a grab of its own.
  if (mayBeTargetsGrab && !popupsAbove.some(ours)) throw uiError("input_grabbed");
  // A region (pixels of the window) must be covered by nothing of another process above the frame.
  const region = check.region;
  if (
    region !== null &&
    candidates.some((c) => !c.inputOnly && intersect(c.rect, region) !== null && !ours(c.win))
  )
    throw uiError("occluded");
  // A point may lie on one of the target process's own top-levels above its frame (a popup, a
  // menu): another process's window covers it only when stacked above the topmost of those there.
  for (const p of check.points) {
    const here = candidates.filter((c) => containsPoint(c.rect, p.x, p.y));
    let anchor = -1;
    here.forEach((c, i) => {
      if (ours(c.win)) anchor = i;
    });
    if (here.slice(anchor + 1).some((c) => !ours(c.win))) throw uiError("occluded");
  }

  // The exact points: what the X server would deliver a press to.
  const insideFrame = check.points.map((p, i) =>
    hitTops[i] === frame && frame !== client ? x.childAt(frame, p.x, p.y) : null,
  );
  hitTops.forEach((top, i) => {
    const inner = insideFrame[i] ? replyValue(settle(insideFrame[i])) : null;
    if (top === frame) {
      if (inner !== null && inner !== client)
        throw uiError("occluded", "The point is on the window manager's frame, not in the window.");
      return;
    }
    if (!ours(top)) throw uiError("occluded");
  });

  // Every point lands on the target's own windows; a grab held meanwhile must be its own too.
  const grabProven = mayBeTargetsGrab && (await pointerGrabProvenFor(x, target.pid));
  if (mayBeTargetsGrab && !grabProven) throw uiError("input_grabbed");

  if (check.grabs.pointer) {
    x.confirmedPoints = new Map(
      // A point without a top (there is one per point) is left out: a press there is refused.
      check.points.flatMap((p, i) => {
        const top = hitTops[i];
        if (top === undefined) return [];
        return [
          [`${p.x},${p.y}`, { top, frame, client, grabOwner: grabProven ? target.pid : null }] as const,
        ];
      }),
    );
  }

  if (focusWin !== null) {
    if (!desktop.inSubtree(focusWin, client))
      throw uiError("not_foreground", "The keyboard focus is not in the target window.");
    x.confirmedFocus = focusWin;
  }
}

/**
 * The PID the X server knows for each window's owner; a WM frame counts as its client's (the
 * frame itself belongs to the WM). One X-Resource request for all of them.
 */
function ownerPids(x: XConnection, desktop: X11Desktop, wins: readonly number[]): Map<number, number> {
  const ask = new Map<number, number>();
  for (const w of wins) ask.set(w, desktop.framesByFrame.get(w)?.client ?? w);
  const pids = x.clientPids([...new Set(ask.values())]);
  const out = new Map<number, number>();
  for (const [w, owner] of ask) {
    const pid = pids.get(owner);
    if (pid !== undefined) out.set(w, pid);
  }
  return out;
}

type Settled<T> = { value: T } | { error: unknown };

function replyValue<T>(r: Settled<T>): T {
  if ("error" in r) throw r.error;
  return r.value;
}

function settle<T>(p: Pending<T>): Settled<T> {
  try {
    return { value: p.resolve() };
  } catch (e) {
    return { error: isUiError(e) ? e : uiError("platform_unavailable", "An X request failed.") };
  }
}
