import { isUiError, uiError } from "../../shared/errors.js";
import { containsPoint, intersect, type Rect } from "../../shared/geometry.js";
import type { LiveCheck, LivePoint, LiveProof, WindowInfo } from "../../shared/platform.js";
import { refuseOffScreen } from "../../shared/screenBounds.js";
import { pointerGrabProvenFor } from "./grabOwner.js";
import { cardinals, type Pending, XA_WM_TRANSIENT_FOR, type XConnection } from "./xconn.js";

/**
 * The X11 last-moment checks, from what only the X server knows (docs/x11.md, "Server truth").
 * One function per check, all judging the replies of one batch of requests:
 *
 * - grabs: a probing GrabKeyboard / GrabPointer on the root, released in the same batch;
 *   AlreadyGrabbed (or Frozen) means another client holds the device → input_grabbed;
 * - stacking: QueryTree on the root (bottom to top, override-redirect windows included). Every
 *   viewable top-level above the target's frame that overlaps a point (any window: InputOnly
 *   ones take clicks) or the region (InputOutput only: they have pixels) occludes, unless it is
 *   one of the target's popups: a top-level the X server attributes to the target's process that
 *   is override-redirect (menus, tooltips) or transient for the target (WM_TRANSIENT_FOR chain);
 * - hit test: TranslateCoordinates at each exact point, from the root down to the deepest window
 *   there: the top-level is the target's frame (then the frame's child is the client, not the
 *   WM's title bar) or a popup, and every window below it was created by the same X client
 *   (the client bits of its id), so no other program's window embedded in the target takes it;
 * - inside: the windows within the target (and its popups over the region) that intersect a
 *   captured region, and for keys every window within the target, are the target's client's;
 * - focus: GetInputFocus is a window of the target's client, in the client's subtree;
 * - screen: every point and the region lie on the root window (its geometry now: RandR may have
 *   resized it), else out_of_bounds, never clamped.
 *
 * Cost: one batch of requests on this worker's xcb connection, then the replies. It also asks
 * ahead about what the last check saw (the windows above the target's frame, the windows inside
 * the target, the path under a point), so in a steady desktop the later steps find their replies
 * already there; only what changed costs a round trip. What is judged is always this check's own
 * replies. X-Resource (PIDs) is asked once, only when a window of another client is in question.
 *
 * Returns what it proved (the focus window, each point's window path) for the input port, which
 * holds its event to exactly that under a server grab.
 */

const GRAB_SUCCESS = 0;
/** Bounds of a walk inside a window: deeper or larger trees are refused, not half-checked. */
const MAX_DEPTH = 32;
const MAX_WINDOWS = 2048;

type Geometry = { x: number; y: number; width: number; height: number; border: number };
type Attrs = { mapState: number; overrideRedirect: boolean; inputOnly: boolean };
type Settled<T> = { value: T } | { error: unknown };

/** The requests of one check, each asked once: later steps reuse what an earlier one asked. */
export class Asked {
  private readonly trees = new Map<number, Pending<{ parent: number; children: number[] }>>();
  private readonly attrMap = new Map<number, Pending<Attrs>>();
  private readonly geomMap = new Map<number, Pending<Geometry>>();
  private readonly hits = new Map<string, Pending<number>>();
  private readonly origins = new Map<number, Pending<{ x: number; y: number }>>();

  /** Told of every request asked after seal() (a read was queued behind those before it). */
  private late: (() => void) | null = null;

  constructor(readonly x: XConnection) {}

  /**
   * A read is queued behind these requests: any request asked from now on goes out after it,
   * and its reply describes the state after the read, so `late` is told (the read is void).
   */
  seal(late: () => void): void {
    this.late = late;
  }

  /** Called before a request this check sends outside these maps (X-Resource, properties). */
  more(): void {
    this.late?.();
  }

  tree(w: number): Pending<{ parent: number; children: number[] }> {
    return once(this.trees, w, () => this.ask(() => this.x.queryTree(w)));
  }
  attrs(w: number): Pending<Attrs> {
    return once(this.attrMap, w, () => this.ask(() => this.x.getMapState(w)));
  }
  geom(w: number): Pending<Geometry> {
    return once(this.geomMap, w, () => this.ask(() => this.x.getGeometry(w)));
  }
  /** The child of `w` that contains root point (px, py), 0 when none. */
  childAt(w: number, px: number, py: number): Pending<number> {
    return once(this.hits, `${w}:${px},${py}`, () => this.ask(() => this.x.childAt(w, px, py)));
  }
  /** Root coordinates of `w`'s origin (inside its border). */
  origin(w: number): Pending<{ x: number; y: number }> {
    return once(this.origins, w, () => this.ask(() => this.x.translateToRoot(w)));
  }

  private ask<T>(request: () => T): T {
    this.more();
    return request();
  }

  /** Reads every reply still unread, so nothing stays queued on the connection. */
  drain(): void {
    const all: Array<Map<unknown, Pending<unknown>>> = [
      this.trees,
      this.attrMap,
      this.geomMap,
      this.hits,
      this.origins,
    ];
    for (const m of all) for (const p of m.values()) settle(p);
  }
}

function once<K, T>(m: Map<K, T>, k: K, make: () => T): T {
  let v = m.get(k);
  if (v === undefined) {
    v = make();
    m.set(k, v);
  }
  return v;
}

/**
 * What the checks read of the worker's desktop port (X11Desktop): the frames its last listing
 * found (server truth: the parent chain), the hints the last check left, and the parent walk.
 */
export interface LiveState {
  readonly framesByClient: ReadonlyMap<number, { frame: number; client: number }>;
  readonly framesByFrame: ReadonlyMap<number, { frame: number; client: number }>;
  lastRootChildren: readonly number[];
  liveHints: LiveHints | null;
  /**
   * Region checks' requests asked in the caller's batch (askRegionCheckAhead), in the order
   * asked: the check before a read and the one after it can share one batch.
   */
  liveAhead: LiveAhead[];
  inSubtree(win: number, ancestor: number): boolean;
}

/**
 * The requests of a region check (a capture's, no points, no focus, no grabs) asked ahead, in
 * the batch of the request that reads the target afresh after the pixels were read
 * (X11Desktop.targetAndCovers), so the check's own batch costs no round trip of its own. Only
 * the check of exactly the window object that read produced (`target`, bound once it exists)
 * reads them; any other check drains and drops them. Their replies are as fresh as that read's.
 */
export interface LiveAhead {
  readonly asked: Asked;
  target: WindowInfo | null;
  /** Told when these requests are dropped unread by their check (a read behind them is void). */
  dropped?: () => void;
}

/** Asks a region check's batch for `client` (framed by `frame`) now, for confirmLive to judge. */
export function askRegionCheckAhead(
  x: XConnection,
  desktop: LiveState,
  client: number,
  frame: number,
  keep = false,
): LiveAhead {
  // `keep`: the checks asked earlier in this batch stay (a check after the read queued behind
  // the check before it); else they are read and dropped.
  if (!keep) dropAhead(desktop);
  const asked = new Asked(x);
  const hints = desktop.liveHints?.client === client ? desktop.liveHints : { client, inside: [], path: [] };
  const regionCheck: LiveCheck = {
    points: [],
    region: [0, 0, 0, 0],
    focus: false,
    grabs: { keyboard: false, pointer: false },
  };
  askBatch(x, desktop, asked, client, frame, regionCheck, hints, true);
  const ahead: LiveAhead = { asked, target: null };
  desktop.liveAhead = [...desktop.liveAhead, ahead];
  return ahead;
}

/** Reads and forgets what was asked ahead and not used (nothing stays queued on the connection). */
export function dropAhead(desktop: LiveState): void {
  const ahead = desktop.liveAhead;
  desktop.liveAhead = [];
  for (const a of ahead) {
    a.asked.drain();
    a.dropped?.();
  }
}

/** What was asked ahead for exactly this target object and a region check, else null (dropped). */
function takeAhead(desktop: LiveState, target: WindowInfo, check: LiveCheck): Asked | null {
  const region =
    check.region !== null &&
    check.points.length === 0 &&
    !check.focus &&
    !check.grabs.keyboard &&
    !check.grabs.pointer;
  const ahead = region ? desktop.liveAhead.find((a) => a.target === target) : undefined;
  if (ahead) {
    // Only that one is taken: a check asked behind it (after the read) stays for its own target.
    desktop.liveAhead = desktop.liveAhead.filter((a) => a !== ahead);
    return ahead.asked;
  }
  dropAhead(desktop);
  return null;
}

/** What the last check of this worker saw, to ask ahead about (never to judge by). */
export interface LiveHints {
  /** The target's client window they are about. */
  client: number;
  /** The windows inside the target (its client's subtree) and its frame's children. */
  inside: number[];
  /** The windows below the top-level on the last verified points' paths. */
  path: number[];
}

export async function confirmLive(
  x: XConnection,
  desktop: LiveState,
  target: WindowInfo,
  check: LiveCheck,
): Promise<LiveProof> {
  const client = Number(target.hwnd);
  const frame = desktop.framesByClient.get(client)?.frame ?? client;
  // Asked ahead in the batch that read this very target after the read, or asked now. Either
  // way each request is asked once (Asked): whatever the batch lacks is asked here.
  const asked = takeAhead(desktop, target, check) ?? new Asked(x);
  try {
    return await judge(x, desktop, asked, target, client, frame, check);
  } finally {
    asked.drain();
  }
}

async function judge(
  x: XConnection,
  desktop: LiveState,
  asked: Asked,
  target: WindowInfo,
  client: number,
  frame: number,
  check: LiveCheck,
): Promise<LiveProof> {
  // A key (no point, no region) goes to the focus or below it: every window inside the target
  // must be its own. Neither the screen's bounds nor what is stacked above it matter to a key.
  const keys = check.focus && check.points.length === 0 && check.region === null;
  const onScreen = check.points.length > 0 || check.region !== null;
  const inside = keys || check.region !== null;

  const hints = desktop.liveHints?.client === client ? desktop.liveHints : { client, inside: [], path: [] };
  const { grabs, rootTree, rootGeom, focus } = askBatch(
    x,
    desktop,
    asked,
    client,
    frame,
    check,
    hints,
    inside,
  );

  const kb = grabs.keyboard ? settle(grabs.keyboard) : null;
  const ptr = grabs.pointer ? settle(grabs.pointer) : null;
  const children = replyValue(settle(rootTree)).children;
  desktop.lastRootChildren = children;
  if (rootGeom) checkScreen(replyValue(settle(rootGeom)), check);
  const focusWin = focus ? replyValue(settle(focus)) : null;
  const mayBeTargetsGrab = checkGrabs(kb, ptr, check);

  const above = stackedAbove(x, asked, children, frame, client, onScreen ? check : null);
  const hitTops = check.points.map((p) => replyValue(settle(asked.childAt(x.root, p.x, p.y))));
  const popups = targetsPopups(
    x,
    desktop,
    asked,
    target,
    client,
    frame,
    [...above.covering.map((c) => c.win), ...hitTops, ...(mayBeTargetsGrab ? above.overrideRedirect : [])],
    check.shownBefore ?? new Set(),
  );
  // Proving a grab's owner moves the pointer a pixel and back (grabOwner.ts), which the grabbing
  // client sees: only try when the target has a popup open that explains a grab of its own.
  if (mayBeTargetsGrab && !above.overrideRedirect.some((w) => popups.has(w))) throw uiError("input_grabbed");
  checkRegionCovers(above.covering, popups, check.region);
  checkPointCovers(above.covering, popups, check.points);

  const paths = walkPoints(x, desktop, asked, client, frame, popups, hitTops, check.points);
  const insideSeen = inside
    ? checkInside(
        x,
        asked,
        client,
        frame,
        popups,
        above.covering,
        check.region,
        keys,
        (top) => desktop.framesByFrame.get(top)?.client ?? top,
      )
    : [];
  if (focusWin !== null) checkFocus(x, desktop, client, focusWin, insideSeen);
  desktop.liveHints = {
    client,
    inside: insideSeen.length > 0 || inside ? insideSeen : hints.inside,
    path: paths.length > 0 ? [...new Set(paths.flatMap((p) => p.slice(1)))] : hints.path,
  };
  const points = await provenPoints(x, target, check, paths, mayBeTargetsGrab);
  return { focus: focusWin === null ? null : String(focusWin), points };
}

/**
 * Every point lands on the target's own windows (its path walked); a grab held meanwhile must be
 * the target's own too, proven now, else input_grabbed.
 */
async function provenPoints(
  x: XConnection,
  target: WindowInfo,
  check: LiveCheck,
  paths: readonly number[][],
  mayBeTargetsGrab: boolean,
): Promise<LivePoint[]> {
  const grabProven = mayBeTargetsGrab && (await pointerGrabProvenFor(x, target.pid));
  if (mayBeTargetsGrab && !grabProven) throw uiError("input_grabbed");
  return check.points.map((p, i) => ({
    x: p.x,
    y: p.y,
    path: (paths[i] ?? []).map(String),
    grabOwner: grabProven ? target.pid : null,
  }));
}

/**
 * The batch: every request of the check asked now (the replies are read by the checks): the
 * grab probes, the root's tree and geometry, the focus, each point's child at the root, the frame
 * and the client, the client's (and the frame's) tree, and ahead of need what the last check saw.
 */
function askBatch(
  x: XConnection,
  desktop: LiveState,
  asked: Asked,
  client: number,
  frame: number,
  check: LiveCheck,
  hints: LiveHints,
  inside: boolean,
) {
  const onScreen = check.points.length > 0 || check.region !== null;
  const grabs = x.probeGrabs(check.grabs.keyboard, check.grabs.pointer);
  const rootTree = asked.tree(x.root);
  const rootGeom = onScreen ? asked.geom(x.root) : null;
  const focus = check.focus ? x.inputFocus() : null;
  for (const p of check.points) {
    asked.childAt(x.root, p.x, p.y);
    if (frame !== client) asked.childAt(frame, p.x, p.y);
    asked.childAt(client, p.x, p.y);
    for (const w of hints.path) asked.childAt(w, p.x, p.y);
  }
  const lastAt = onScreen ? desktop.lastRootChildren.indexOf(frame) : -1;
  if (lastAt >= 0)
    for (const w of desktop.lastRootChildren.slice(lastAt + 1)) {
      asked.attrs(w);
      asked.geom(w);
    }
  if (inside) {
    asked.tree(client);
    if (check.region !== null && frame !== client) asked.tree(frame);
    for (const w of hints.inside) asked.tree(w);
  }
  return { grabs, rootTree, rootGeom, focus };
}

/** Points and the region lie on the root window as it is now, else out_of_bounds. */
function checkScreen(root: Geometry, check: LiveCheck): void {
  refuseOffScreen([0, 0, root.width, root.height], check.points, check.region);
}

/**
 * A held grab is another client's unless proven the target's, and that only for a press: its
 * events follow the pointer grab (a toolkit's popup grabs both devices; see grabOwner.ts).
 * Returns whether the press may still be the target's own popup grab.
 */
function checkGrabs(kb: Settled<number> | null, ptr: Settled<number> | null, check: LiveCheck): boolean {
  const keyboardHeld = kb !== null && replyValue(kb) !== GRAB_SUCCESS;
  const pointerHeld = ptr !== null && replyValue(ptr) !== GRAB_SUCCESS;
  const mayBeTargetsGrab = pointerHeld && check.points.length > 0;
  if ((keyboardHeld || pointerHeld) && !mayBeTargetsGrab) throw uiError("input_grabbed");
  return mayBeTargetsGrab;
}

interface Cover {
  win: number;
  rect: Rect;
  inputOnly: boolean;
  overrideRedirect: boolean;
}

/**
 * The viewable top-levels stacked above the target's frame that meet a point or the region
 * (`check` null: none are looked at), and the override-redirect ones among all above it.
 */
function stackedAbove(
  x: XConnection,
  asked: Asked,
  children: readonly number[],
  frame: number,
  client: number,
  check: LiveCheck | null,
): { covering: Cover[]; overrideRedirect: number[] } {
  const at = children.indexOf(frame);
  if (at < 0) {
    // Destroyed meanwhile (its frame went with it): gone, not changed. Asked only on this path.
    const state = settle(x.getMapState(client));
    if ("error" in state && isUiError(state.error) && state.error.code === "target_gone")
      throw uiError("target_gone");
    throw uiError("target_changed", "The target window's frame changed.");
  }
  const covering: Cover[] = [];
  const overrideRedirect: number[] = [];
  if (check === null) return { covering, overrideRedirect };
  // All requests first (most were asked ahead in the batch), then all replies.
  const above = children.slice(at + 1).map((w) => ({ w, attrs: asked.attrs(w), geom: asked.geom(w) }));
  for (const { w, attrs, geom } of above) {
    const a = settle(attrs);
    const g = settle(geom);
    // A window that vanished meanwhile covers nothing any more.
    if ("error" in a || "error" in g || a.value.mapState !== 2) continue;
    if (a.value.overrideRedirect) overrideRedirect.push(w);
    const r = outerRect(0, 0, g.value);
    const onPoint = check.points.some((p) => containsPoint(r, p.x, p.y));
    const onRegion = !a.value.inputOnly && check.region !== null && intersect(r, check.region) !== null;
    if (onPoint || onRegion)
      covering.push({
        win: w,
        rect: r,
        inputOnly: a.value.inputOnly,
        overrideRedirect: a.value.overrideRedirect,
      });
  }
  return { covering, overrideRedirect };
}

/**
 * Which of the top-levels `wins` are popups of the target: windows the X server attributes to
 * the target's process (X-Resource, one request) that are override-redirect (menus, combo
 * popups, tooltips) or whose client is transient for the target (WM_TRANSIENT_FOR chain), and
 * that were not shown yet when the grant began (`shownBefore`: override-redirect ones by their
 * own id, managed ones by client). Any other top-level of the process is a window of its own
 * (the policy and a grant of its own).
 */
function targetsPopups(
  x: XConnection,
  desktop: LiveState,
  asked: Asked,
  target: WindowInfo,
  client: number,
  frame: number,
  wins: readonly number[],
  shownBefore: ReadonlySet<string>,
): Set<number> {
  const out = new Set<number>();
  const ask = [...new Set(wins)].filter((w) => w !== 0 && w !== frame && w !== client);
  if (ask.length === 0 || target.pid <= 0) return out;
  // Its owners and WM_TRANSIENT_FOR are asked now, outside the batch (after a read behind it).
  asked.more();
  const pids = ownerPids(x, desktop, ask);
  const managed: Array<{ top: number; client: number }> = [];
  for (const w of ask) {
    if (pids.get(w) !== target.pid || shownBefore.has(String(w))) continue;
    const a = settle(asked.attrs(w));
    if ("error" in a) continue;
    const own = desktop.framesByFrame.get(w)?.client ?? w;
    if (a.value.overrideRedirect) out.add(w);
    else if (!shownBefore.has(String(own))) managed.push({ top: w, client: own });
  }
  if (managed.length > 0) {
    const transient = transientFor(
      x,
      client,
      target.pid,
      managed.map((m) => m.client),
      shownBefore,
    );
    for (const m of managed) if (transient.has(m.client)) out.add(m.top);
  }
  return out;
}

/**
 * Which of `clients` (client windows of process `pid`) are transient for `targetClient`,
 * directly or through a chain of windows of the same process (a dialog of a dialog), none of
 * them shown already when the grant began (`shownBefore`). The property is the application's
 * own; who owns each window in the chain is the server's word.
 */
export function transientFor(
  x: XConnection,
  targetClient: number,
  pid: number,
  clients: readonly number[],
  shownBefore: ReadonlySet<string> = new Set(),
): Set<number> {
  const out = new Set<number>();
  let frontier = clients.map((c) => ({ start: c, at: c }));
  for (let step = 0; step < 8 && frontier.length > 0; step++) {
    const props = frontier.map((f) => x.getProperty(f.at, XA_WM_TRANSIENT_FOR, 1));
    const next: Array<{ start: number; at: number }> = [];
    frontier.forEach((f, i) => {
      const prop = props[i];
      const p = prop ? settle(prop) : null;
      const owner = p === null || "error" in p ? undefined : cardinals(p.value)[0];
      if (owner === undefined || owner === 0 || owner === f.start) return;
      if (owner === targetClient) out.add(f.start);
      else if (!shownBefore.has(String(owner))) next.push({ start: f.start, at: owner });
    });
    const pids = x.clientPids(next.map((n) => n.at));
    frontier = next.filter((n) => pids.get(n.at) === pid);
  }
  return out;
}

/** A region (pixels of the window) must be covered by nothing above the frame but popups. */
function checkRegionCovers(
  covering: readonly Cover[],
  popups: ReadonlySet<number>,
  region: Rect | null,
): void {
  if (region === null) return;
  if (covering.some((c) => !c.inputOnly && intersect(c.rect, region) !== null && !popups.has(c.win)))
    throw uiError("occluded");
}

/**
 * A point may lie on one of the target's popups above its frame: another window covers it only
 * when stacked above the topmost popup there.
 */
function checkPointCovers(
  covering: readonly Cover[],
  popups: ReadonlySet<number>,
  points: LiveCheck["points"],
): void {
  for (const p of points) {
    const here = covering.filter((c) => containsPoint(c.rect, p.x, p.y));
    let anchor = -1;
    here.forEach((c, i) => {
      if (popups.has(c.win)) anchor = i;
    });
    if (here.slice(anchor + 1).some((c) => !popups.has(c.win))) throw uiError("occluded");
  }
}

/**
 * The exact points: what the X server would deliver a press to, from the top-level down to the
 * deepest window there. The top-level is the target's frame (whose child there must be the
 * client: not the WM's decorations) or one of its popups; every window below the client (or the
 * popup's client) was created by that same X client. A window of another program embedded in
 * the target (an XEmbed plug, `xterm -into`, a reparented window) is `occluded`. All points walk
 * a level at a time, so a level costs one round trip whatever the number of points (none when
 * the batch asked ahead along the last path).
 */
function walkPoints(
  x: XConnection,
  desktop: LiveState,
  asked: Asked,
  client: number,
  frame: number,
  popups: ReadonlySet<number>,
  hitTops: readonly number[],
  points: LiveCheck["points"],
): number[][] {
  const walks = points.map((p, i) => {
    const top = hitTops[i] ?? 0;
    if (top !== frame && !popups.has(top)) throw uiError("occluded");
    // A managed window's frame belongs to the WM: its child at the point must be the client.
    const inner =
      top === frame ? (frame === client ? null : client) : (desktop.framesByFrame.get(top)?.client ?? null);
    const path = [top];
    if (inner !== null) {
      const child = replyValue(settle(asked.childAt(top, p.x, p.y)));
      if (child !== inner)
        throw uiError("occluded", "The point is on the window manager's frame, not in the window.");
      path.push(inner);
    }
    const last = path[path.length - 1] ?? top;
    return { p, path, owner: x.clientOf(last), done: false };
  });
  for (let depth = 0; depth < MAX_DEPTH && walks.some((w) => !w.done); depth++) {
    const live = walks.filter((w) => !w.done);
    const next = live.map((w) => asked.childAt(w.path[w.path.length - 1] ?? 0, w.p.x, w.p.y));
    live.forEach((w, i) => {
      const child = replyValue(settle(next[i] as Pending<number>));
      if (child === 0) {
        w.done = true;
        return;
      }
      if (x.clientOf(child) !== w.owner)
        throw uiError("occluded", "Another program's window lies inside the target there.");
      w.path.push(child);
    });
  }
  if (walks.some((w) => !w.done)) throw uiError("occluded", "The window tree under the point is too deep.");
  return walks.map((w) => w.path);
}

/**
 * Windows of other programs inside the target, walked a level at a time from the client (and,
 * for a region, from the popups over it and the frame's children above the client): the
 * target's own windows are only descended into (one QueryTree each, no more); a window another
 * client created there is judged from its attributes, geometry and root position, asked then
 * (rare): for a region a viewable InputOutput one that meets it is refused (occluded), for keys
 * any viewable one (not_foreground). The WM's decorations (the frame's other children, the
 * WM's own) are not walked into: they are clipped to the frame outside the client. Returns the
 * target's own windows seen inside the client, for the next check to ask ahead about.
 */
function checkInside(
  x: XConnection,
  asked: Asked,
  client: number,
  frame: number,
  popups: ReadonlySet<number>,
  covering: readonly Cover[],
  region: Rect | null,
  keys: boolean,
  clientOfTop: (top: number) => number,
): number[] {
  const own = x.clientOf(client);
  const seen: number[] = [];
  const foreign: number[] = [];
  let level: Array<{ win: number; owner: number }> = [{ win: client, owner: own }];
  if (region !== null) {
    // A managed popup (a transient dialog) is walked from its client: its frame is the WM's.
    for (const c of covering)
      if (popups.has(c.win) && !c.inputOnly) {
        const top = clientOfTop(c.win);
        level.push({ win: top, owner: x.clientOf(top) });
      }
    if (frame !== client) {
      const t = settle(asked.tree(frame));
      if ("error" in t) throw uiError("target_changed", "The target window's frame changed.");
      const kids = t.value.children;
      const wm = x.clientOf(frame);
      for (const k of kids.slice(kids.indexOf(client) + 1)) {
        const by = x.clientOf(k);
        if (by !== wm && by !== own) foreign.push(k);
      }
    }
  }
  let count = 0;
  for (let depth = 0; level.length > 0; depth++) {
    if (depth >= MAX_DEPTH) throw refusal(keys);
    const trees = level.map((l) => asked.tree(l.win));
    const next: Array<{ win: number; owner: number }> = [];
    level.forEach((l, i) => {
      const t = settle(trees[i] as Pending<{ parent: number; children: number[] }>);
      if ("error" in t) {
        if (l.win === client) throw t.error;
        return; // gone meanwhile: nothing inside it any more
      }
      count += t.value.children.length;
      for (const win of t.value.children) {
        if (x.clientOf(win) !== l.owner) foreign.push(win);
        else {
          if (l.owner === own) seen.push(win);
          next.push({ win, owner: l.owner });
        }
      }
    });
    if (count > MAX_WINDOWS) throw refusal(keys);
    level = next;
  }
  if (foreign.length > 0) {
    const facts = foreign.map((w) => ({ a: asked.attrs(w), g: asked.geom(w), o: asked.origin(w) }));
    for (const f of facts) {
      const a = settle(f.a);
      const g = settle(f.g);
      const o = settle(f.o);
      // Gone meanwhile, or not shown (its ancestors unmapped): it neither shows nor takes keys.
      if ("error" in a || "error" in g || "error" in o || a.value.mapState !== 2) continue;
      if (region === null) throw refusal(keys);
      const b = g.value.border;
      const r: Rect = [
        o.value.x - b,
        o.value.y - b,
        o.value.x + g.value.width + b,
        o.value.y + g.value.height + b,
      ];
      // Pixels: InputOnly windows have none, and what lies outside the region is not read.
      if (!a.value.inputOnly && intersect(r, region) !== null) throw refusal(keys);
    }
  }
  return seen;
}

function refusal(keys: boolean) {
  return keys
    ? uiError("not_foreground", "Another program's window lies inside the target window.")
    : uiError("occluded", "Another program's window lies inside the target window.");
}

/**
 * The focus is a window of the target's own client, in the client's subtree (a window of
 * another program embedded in it would get the keys). `inside`: the windows a walk inside the
 * target saw, else the parent chain is asked.
 */
function checkFocus(
  x: XConnection,
  desktop: LiveState,
  client: number,
  focusWin: number,
  inside: readonly number[],
): void {
  const within =
    focusWin === client ||
    (x.clientOf(focusWin) === x.clientOf(client) &&
      (inside.includes(focusWin) || desktop.inSubtree(focusWin, client)));
  if (!within) throw uiError("not_foreground", "The keyboard focus is not in the target window.");
}

/** A window's rect with its border, its position taken relative to (ox, oy). */
function outerRect(ox: number, oy: number, g: Geometry): Rect {
  return [ox + g.x, oy + g.y, ox + g.x + g.width + 2 * g.border, oy + g.y + g.height + 2 * g.border];
}

/**
 * The PID the X server knows for each window's owner; a WM frame counts as its client's (the
 * frame itself belongs to the WM). One X-Resource request for all of them.
 */
function ownerPids(x: XConnection, desktop: LiveState, wins: readonly number[]): Map<number, number> {
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
