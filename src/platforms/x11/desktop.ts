import { hostname } from "node:os";
import { processExited, resolveInstance } from "../../os/linux/proc.js";
import { isUiError, uiError } from "../../shared/errors.js";
import { intersect, type Rect } from "../../shared/geometry.js";
import { type ProcessInstance, sameInstance } from "../../shared/identity.js";
import type { DesktopPort, LiveCheck, LiveProof, ReadAhead, WindowInfo } from "../../shared/platform.js";
import { provenOwners } from "./connectionOwner.js";
import {
  askRegionCheckAhead,
  confirmLive,
  dropAhead,
  type LiveAhead,
  type LiveHints,
  transientFor,
} from "./liveCheck.js";
import { concealOwnDialogs } from "./ownDialogs.js";
import {
  cardinals,
  type Pending,
  type PropertyValue,
  text,
  XA_WM_CLASS,
  XA_WM_CLIENT_MACHINE,
  XA_WM_NAME,
  type XConnection,
} from "./xconn.js";

/**
 * DesktopPort on an EWMH window manager. hwnd = the client window's XID (decimal). rect = the
 * WM frame in root coordinates, i.e. what a person sees, like GetWindowRect on Win32: the
 * frame window's geometry (the client's ancestor just below the root, from XQueryTree), which
 * the client's own _NET_FRAME_EXTENTS may shrink but never grow. foreground = the X server's
 * input focus (XGetInputFocus) lies in the client's subtree; _NET_ACTIVE_WINDOW is not read.
 * See docs/x11.md.
 */

const ICONIC_STATE = 3;
const NET_WM_STATE_REMOVE = 0;
const SOURCE_PAGER = 2;
const RESTORE_WAIT_MS = 500;

/** targetAndCovers' requests, sent and not yet judged. */
interface TargetBatch {
  xid: number;
  known: FrameOf | undefined;
  p: PendingWindow;
  focus: Pending<number>;
  check: LiveAhead | null;
  frameTree: Pending<{ parent: number; children: number[] }> | null;
  frameGeom: Pending<Geometry> | null;
  ahead: Map<number, Pending<{ parent: number; children: number[] }>>;
  /** The target's owner PID from X-Resource, asked in the batch. */
  pids: Pending<Map<number, number>>;
}

/** A listing's requests asked ahead on the last listing's word (askLastListing). */
interface ListingGuess {
  stacking: readonly number[];
  windows: Map<number, PendingWindow>;
  geoms: Map<number, Pending<Geometry>>;
  pids: Pending<Map<number, number>> | null;
  ahead: Map<number, Pending<{ parent: number; children: number[] }>>;
}

/** Reads every reply of a window's requests nobody will judge (none stays queued). */
function drainWindow(p: PendingWindow): void {
  for (const v of Object.values(p)) if (typeof v === "object" && v !== null && "resolve" in v) settle(v);
}

interface PendingWindow {
  xid: number;
  netName: Pending<PropertyValue | null>;
  name: Pending<PropertyValue | null>;
  klass: Pending<PropertyValue | null>;
  pid: Pending<PropertyValue | null>;
  state: Pending<PropertyValue | null>;
  wmState: Pending<PropertyValue | null>;
  extents: Pending<PropertyValue | null>;
  machine: Pending<PropertyValue | null>;
  attrs: ReturnType<XConnection["getMapState"]>;
  geom: ReturnType<XConnection["getGeometry"]>;
  origin: ReturnType<XConnection["translateToRoot"]>;
  tree: ReturnType<XConnection["queryTree"]>;
}

/** A client window and the top-level window the server stacks for it (its WM frame, or itself). */
export interface FrameOf {
  client: number;
  frame: number;
  /** The frame's outer rect in root coordinates (border included). */
  rect: Rect;
}

/** A window whose connection owner could not be proven is checked again after this long. */
const OWNER_PROOF_RETRY_MS = 2000;

/** How deep a client or focus window may sit below the root before we stop walking up. */
const MAX_TREE_DEPTH = 32;

export function parseHwnd(hwnd: string): number {
  if (!/^\d{1,10}$/.test(hwnd)) throw uiError("invalid_argument", "The window handle is invalid.");
  const v = Number(hwnd);
  if (v <= 0 || v > 0xffffffff) throw uiError("invalid_argument", "The window handle is invalid.");
  return v;
}

export class X11Desktop implements DesktopPort {
  readonly platform = "x11" as const;
  private readonly x: XConnection;
  private readonly host = hostname();

  private readonly proveOwners: typeof provenOwners;

  /** `proveOwners` replaces the connection-owner proof (tests on a stub connection only). */
  constructor(x: XConnection, opts: { proveOwners?: typeof provenOwners } = {}) {
    this.x = x;
    this.proveOwners = opts.proveOwners ?? provenOwners;
  }

  /** Client windows bottom-to-top as the WM reports them. */
  private stacking(asked: Pending<PropertyValue | null>): number[] {
    const a = this.x.atoms;
    const st = cardinals(asked.resolve());
    if (st.length > 0) return st;
    return cardinals(this.x.getProperty(this.x.root, a._NET_CLIENT_LIST).resolve());
  }

  /**
   * The frames of the last listing (client → frame and frame → client), for the last-moment
   * checks of the same worker (see liveCheck.ts). Only ever server truth: the parent chain.
   */
  framesByClient = new Map<number, FrameOf>();
  framesByFrame = new Map<number, FrameOf>();
  /**
   * The root's children, bottom to top, as the last QueryTree of the root said (a listing or a
   * live check): what confirmLive asks about ahead, in its first batch, as the windows likely
   * above the target. Only a guess of what to ask; the judging reads the tree of its own batch.
   */
  lastRootChildren: readonly number[] = [];
  /** What the last live check saw inside its target, asked about ahead by the next one. */
  liveHints: LiveHints | null = null;
  /** The capture's check after the read, asked in targetAndCovers' batch (liveCheck.ts). */
  liveAhead: LiveAhead[] = [];
  /**
   * The focus window and its ancestors (nearest first) as the last focus walk found them: their
   * trees are asked in the next listing's (or after-read check's) batch, so the walk, which
   * judges only the replies of that batch, usually makes no round trip of its own. A guess of
   * what to ask, never of what is true.
   */
  private lastFocusChain: number[] = [];

  /** Trees of the last focus chain's windows, asked now (in the caller's batch), by window. */
  private askFocusChain(focus: number | null): Map<number, Pending<{ parent: number; children: number[] }>> {
    const chain = this.lastFocusChain;
    const ahead = new Map<number, Pending<{ parent: number; children: number[] }>>();
    // With the focus known (the listing's first batch answered it), only a chain from it.
    if (chain.length === 0 || (focus !== null && chain[0] !== focus)) return ahead;
    for (const w of chain) ahead.set(w, this.x.queryTree(w));
    return ahead;
  }

  /**
   * Walks `win` up to the root: its ancestors, nearest first (the last one is a root child).
   * `rootChildren`, when the caller knows them from a QueryTree of the root in the same
   * request batch, ends the walk at the first of them (its parent is the root): one request
   * less per level the server would only answer with "root".
   */
  ancestors(
    win: number,
    first: { parent: number } | null,
    rootChildren?: ReadonlySet<number>,
    ahead?: ReadonlyMap<number, Pending<{ parent: number; children: number[] }>>,
  ): number[] {
    const out: number[] = [];
    // A tree asked in the caller's batch is as fresh as one asked now; else one round trip.
    const tree = (w: number) => (ahead?.get(w) ?? this.x.queryTree(w)).resolve();
    let parent = first ? first.parent : tree(win).parent;
    while (parent !== 0 && parent !== this.x.root && out.length < MAX_TREE_DEPTH) {
      out.push(parent);
      if (rootChildren?.has(parent)) break;
      parent = tree(parent).parent;
    }
    return out;
  }

  private request(xid: number): PendingWindow {
    const x = this.x;
    const a = x.atoms;
    return {
      xid,
      netName: x.getProperty(xid, a._NET_WM_NAME),
      name: x.getProperty(xid, XA_WM_NAME),
      klass: x.getProperty(xid, XA_WM_CLASS),
      pid: x.getProperty(xid, a._NET_WM_PID, 1),
      state: x.getProperty(xid, a._NET_WM_STATE),
      wmState: x.getProperty(xid, a.WM_STATE, 2),
      extents: x.getProperty(xid, a._NET_FRAME_EXTENTS, 4),
      machine: x.getProperty(xid, XA_WM_CLIENT_MACHINE),
      attrs: x.getMapState(xid),
      geom: x.getGeometry(xid),
      origin: x.translateToRoot(xid),
      tree: x.queryTree(xid),
    };
  }

  /** Resolves every reply (all of them, so none is left queued); null when the window vanished. */
  private collect(
    p: PendingWindow,
    z: number,
    focusPath: ReadonlySet<number>,
    rootGeoms: ReadonlyMap<number, Pending<Geometry>>,
    serverPids: ReadonlyMap<number, number>,
  ): WindowInfo | null {
    const results = {
      netName: settle(p.netName),
      name: settle(p.name),
      klass: settle(p.klass),
      pid: settle(p.pid),
      state: settle(p.state),
      wmState: settle(p.wmState),
      extents: settle(p.extents),
      machine: settle(p.machine),
      attrs: settle(p.attrs),
      geom: settle(p.geom),
      origin: settle(p.origin),
      tree: settle(p.tree),
    };
    for (const r of Object.values(results)) {
      if (r.error) {
        if (r.error.code === "target_gone") return null;
        throw r.error;
      }
    }
    const a = this.x.atoms;
    const utf8 = a.UTF8_STRING;
    const title = text(results.netName.value ?? null, utf8) ?? text(results.name.value ?? null, utf8) ?? "";
    // WM_CLASS is "instance\0class\0"; the class part names the application.
    const klassParts = (results.klass.value?.bytes.toString("latin1") ?? "").split("\u0000");
    const windowClass = klassParts[1] || klassParts[0] || "";
    const pid = this.windowPid(p.xid, serverPids, results.pid.value ?? null, results.machine.value ?? null);
    const instance: ProcessInstance | null = pid > 0 ? resolveInstance(pid, this.x.displayName) : null;
    // A window torn down with its client is gone, not an instance-less window (which a call would
    // report as target_not_allowed). Either order happens: the client killed after its properties
    // were read (the window no longer exists now: left out), or the process exited before the X
    // server noticed its closed connection (the window lingers: still listed, because it still
    // covers what is under it, but flagged so that calls on it answer target_gone).
    if (instance === null && this.vanished(p.xid)) return null;
    const ownerExited = instance === null && pid > 0 && processExited(pid);
    const states = cardinals(results.state.value ?? null);
    const wmState = cardinals(results.wmState.value ?? null)[0];
    const iconic = states.includes(a._NET_WM_STATE_HIDDEN) || wmState === ICONIC_STATE;
    const mapState = results.attrs.value?.mapState ?? 0;
    const geom = results.geom.value ?? { x: 0, y: 0, width: 0, height: 0, border: 0 };
    const origin = results.origin.value ?? { x: 0, y: 0 };
    const [el, er, et, eb] = cardinals(results.extents.value ?? null);
    const left = origin.x - (el ?? 0);
    const top = origin.y - (et ?? 0);
    const claimed: Rect = [left, top, origin.x + geom.width + (er ?? 0), origin.y + geom.height + (eb ?? 0)];
    // The client may rewrite _NET_FRAME_EXTENTS after the WM set it: the frame the server
    // stacks bounds the rect, so the claim can only shrink it. An empty overlap keeps the
    // client's own rect (a frame that does not contain its client is not ours to trust either).
    const frame = this.frameOf(p.xid, results.tree.value ?? null, rootGeoms);
    const rect: Rect = frame ? (intersect(claimed, frame.rect) ?? clientRect(origin, geom)) : claimed;
    return {
      hwnd: String(p.xid),
      title,
      window_class: windowClass,
      pid,
      instance,
      rect,
      visible: mapState === 2 || iconic,
      iconic,
      foreground: focusPath.has(p.xid),
      on_top: states.includes(a._NET_WM_STATE_ABOVE),
      z,
      ...(ownerExited ? { owner_exited: true } : {}),
    };
  }

  /**
   * Whether the window no longer exists now (asked after its other replies were read). Any other
   * failure keeps it listed: a window wrongly left out would stop counting as covering others.
   */
  private vanished(xid: number): boolean {
    try {
      this.x.getMapState(xid).resolve();
      return false;
    } catch (e) {
      return isUiError(e) && e.code === "target_gone";
    }
  }

  /**
   * The PID behind a window. With X-Resource: the PID the X server knows for the client that
   * owns the window (from its local connection), never the client's own claim, so a window
   * cannot borrow another process's identity; 0 for remote or unknown clients (`serverPids`:
   * one X-Resource answer for every listed window). Without it: _NET_WM_PID, trusted only when
   * WM_CLIENT_MACHINE is unset or names this host.
   */
  private windowPid(
    xid: number,
    serverPids: ReadonlyMap<number, number>,
    netPid: PropertyValue | null,
    machineProp: PropertyValue | null,
  ): number {
    if (this.x.hasXRes) return serverPids.get(xid) ?? 0;
    const claimed = cardinals(netPid)[0] ?? 0;
    const machine = text(machineProp, this.x.atoms.UTF8_STRING);
    const local = machine === null || machine === "" || machine === this.host || machine === "localhost";
    return local ? claimed : 0;
  }

  /**
   * The top-level window the server stacks for `client`: its ancestor just below the root (the
   * WM frame), or the client itself when it is a child of the root. Null when it vanished.
   */
  private frameOf(
    client: number,
    tree: { parent: number } | null,
    rootGeoms: ReadonlyMap<number, Pending<Geometry>>,
  ): FrameOf | null {
    try {
      let frame = client;
      if (tree && tree.parent !== this.x.root) {
        // Usually the parent is a root child already (openbox: client → frame → root).
        frame = rootGeoms.has(tree.parent) ? tree.parent : (this.ancestors(client, tree).at(-1) ?? client);
      }
      const g = (rootGeoms.get(frame) ?? this.x.getGeometry(frame)).resolve();
      const f: FrameOf = {
        client,
        frame,
        rect: [g.x, g.y, g.x + g.width + 2 * g.border, g.y + g.height + 2 * g.border],
      };
      this.framesByClient.set(client, f);
      this.framesByFrame.set(frame, f);
      return f;
    } catch (e) {
      if (isUiError(e) && e.code === "target_gone") return null;
      throw e;
    }
  }

  /**
   * Fork-then-exec: a window counts as its X-Resource process's only while that process is
   * proven to hold the window's connection (connectionOwner.ts); otherwise it has no instance
   * (never a target). Proofs are kept per window and instance; a failed one is retried after a
   * moment (a legitimate app may be caught between its fork and its exec).
   */
  private requireConnectionOwners(windows: WindowInfo[], whole: boolean): void {
    if (!this.x.hasXRes) return;
    const now = Date.now();
    const keyOf = (w: WindowInfo) =>
      w.instance
        ? `${w.hwnd}\u0000${w.instance.pid}\u0000${w.instance.start_time}\u0000${w.instance.exe_path}`
        : "";
    // Only a whole listing knows which proofs belong to windows that are gone.
    if (whole) {
      const keys = new Set(windows.map(keyOf));
      for (const k of this.ownerProofs.keys()) if (!keys.has(k)) this.ownerProofs.delete(k);
    }
    const due = windows.filter((w) => {
      const p = w.instance ? this.ownerProofs.get(keyOf(w)) : { proven: true, at: now };
      return p === undefined || (!p.proven && now - p.at > OWNER_PROOF_RETRY_MS);
    });
    if (due.length > 0) {
      const proven = this.proveOwners([...new Set(due.map((w) => w.pid))], this.x.displayName, () =>
        this.x.clientCountsByPid(),
      );
      for (const w of due) this.ownerProofs.set(keyOf(w), { proven: proven.has(w.pid), at: now });
    }
    for (const w of windows)
      if (w.instance && this.ownerProofs.get(keyOf(w))?.proven !== true) w.instance = null;
  }

  private readonly ownerProofs = new Map<string, { proven: boolean; at: number }>();

  /** Whether `win` is `ancestor` or lies below it in the server's window tree. */
  inSubtree(win: number, ancestor: number): boolean {
    if (win === ancestor) return true;
    if (win === 0 || win === 1 || win === this.x.root) return false;
    try {
      return this.ancestors(win, null).includes(ancestor);
    } catch (e) {
      if (isUiError(e) && e.code === "target_gone") return false;
      throw e;
    }
  }

  /** confirmLive reads the root's geometry in its first batch (liveCheck.ts). */
  readonly liveCheckCoversScreen = true;

  confirmLive(target: WindowInfo, check: LiveCheck): Promise<LiveProof> {
    return confirmLive(this.x, this, target, check);
  }

  /**
   * The target's popups among windows of its instance: those whose WM_TRANSIENT_FOR chain leads
   * to the target through windows the X server attributes to its process, none of them shown
   * already when the grant began (`shownBefore`). Any other top-level of the process is a window
   * of its own.
   */
  async popupsOf(
    target: WindowInfo,
    candidates: readonly WindowInfo[],
    shownBefore: ReadonlySet<string> = new Set(),
  ): Promise<WindowInfo[]> {
    const fresh = candidates.filter((w) => !shownBefore.has(w.hwnd));
    if (target.pid <= 0 || fresh.length === 0) return [];
    const popups = transientFor(
      this.x,
      Number(target.hwnd),
      target.pid,
      fresh.map((w) => Number(w.hwnd)),
      shownBefore,
    );
    return fresh.filter((w) => popups.has(Number(w.hwnd)));
  }

  /**
   * The target process's mapped override-redirect top-levels (its menus, combo popups,
   * tooltips) not shown already when the grant began: QueryTree of the root, the server's map
   * state, geometry and override-redirect flag of each child, and X-Resource for their owners.
   * Only the server's word.
   */
  async unlistedOwnWindows(
    target: WindowInfo,
    shownBefore: ReadonlySet<string> = new Set(),
  ): Promise<Rect[]> {
    if (target.pid <= 0) return [];
    const shown = this.mappedRootChildren(true).filter((s) => !shownBefore.has(String(s.win)));
    const pids = this.x.clientPids(shown.map((s) => s.win));
    return shown.filter((s) => pids.get(s.win) === target.pid).map((s) => s.rect);
  }

  /** The root's mapped children (only override-redirect ones with `overrideOnly`), with their rects. */
  private mappedRootChildren(overrideOnly: boolean): Array<{ win: number; rect: Rect }> {
    const children = this.x.queryTree(this.x.root).resolve().children;
    // All requests first, then all replies: one round trip for the whole tree.
    const asked = children.map((win) => ({
      win,
      attrs: this.x.getMapState(win),
      geom: this.x.getGeometry(win),
    }));
    const shown: Array<{ win: number; rect: Rect }> = [];
    asked.forEach(({ win, attrs, geom }) => {
      const a = settle(attrs).value;
      const g = settle(geom).value;
      if (!a || !g || a.mapState !== 2 || (overrideOnly && !a.overrideRedirect)) return;
      const { x, y, width, height, border } = g;
      shown.push({ win, rect: [x, y, x + width + 2 * border, y + height + 2 * border] });
    });
    return shown;
  }

  /**
   * The process's top-levels shown now, from the X server: the listed clients that are
   * viewable or minimized (by client window), and every other mapped child of the root it owns
   * (override-redirect menus and tooltips, windows the WM has not framed), by its own id.
   */
  async shownTopLevels(pid: number): Promise<string[]> {
    if (pid <= 0) return [];
    const listed = await this.listWindows();
    const out = new Set(listed.filter((w) => w.pid === pid && w.visible).map((w) => w.hwnd));
    const others = this.mappedRootChildren(false)
      .map((s) => s.win)
      .filter((w) => !this.framesByFrame.has(w));
    const pids = this.x.clientPids(others);
    for (const w of others) if (pids.get(w) === pid) out.add(String(w));
    return [...out];
  }

  /**
   * The focus window and its ancestors: a client is in front when it is one of them. `asked`:
   * the QueryTree requests already in the batch, by window (the focus is usually a listed
   * client, whose parent is then known without a request of its own).
   */
  private focusPath(
    focus: number,
    rootChildren?: ReadonlySet<number>,
    asked?: ReadonlyMap<number, PendingWindow>,
    ahead?: Map<number, Pending<{ parent: number; children: number[] }>>,
  ): Set<number> {
    try {
      const path = this.walkFocus(focus, rootChildren, asked, ahead);
      this.lastFocusChain = [...path];
      return path;
    } finally {
      // Replies nobody read stay queued otherwise; a window gone meanwhile is no error here.
      for (const t of ahead?.values() ?? []) settle(t);
    }
  }

  private walkFocus(
    focus: number,
    rootChildren?: ReadonlySet<number>,
    asked?: ReadonlyMap<number, PendingWindow>,
    ahead?: ReadonlyMap<number, Pending<{ parent: number; children: number[] }>>,
  ): Set<number> {
    if (focus === 0 || focus === 1 || focus === this.x.root) return new Set();
    // A top-level's only ancestor is the root.
    if (rootChildren?.has(focus)) return new Set([focus]);
    try {
      const own = asked?.get(focus);
      const first = own ? settle(own.tree).value : undefined;
      return new Set([focus, ...this.ancestors(focus, first ?? null, rootChildren, ahead)]);
    } catch (e) {
      if (isUiError(e) && e.code === "target_gone") return new Set();
      throw e;
    }
  }

  async listWindows(opts: { regionCheckOf?: string; readAhead?: ReadAhead } = {}): Promise<WindowInfo[]> {
    const stale = this.afterRead;
    this.afterRead = null;
    if (stale) this.dropBatch(stale);
    dropAhead(this);
    const x = this.x;
    const guess = this.askLastListing();
    // The capture's check before the read that follows, asked in this batch (its frame from the
    // last listing; a changed frame is asked about by the check itself).
    // Only a well-formed handle (the listing answers for any other as it always did).
    const checkOf = /^\d{1,10}$/.test(opts.regionCheckOf ?? "") ? Number(opts.regionCheckOf) : null;
    const known = checkOf === null ? undefined : this.framesByClient.get(checkOf);
    const check = checkOf !== null && known ? askRegionCheckAhead(x, this, checkOf, known.frame) : null;
    // Last in the batch: waiting for the stacking's reply sends the batch, and by the time it
    // arrives the replies before it have too (read at once, not one by one as they come).
    const rootTree = x.queryTree(x.root);
    const focus = x.inputFocus();
    const stackingAsked = x.getProperty(x.root, x.atoms._NET_CLIENT_LIST_STACKING);
    // The read, behind every request the checks before it judge (the target's own among the
    // guess's, its region check's), only for a window the guess asked about; its check after
    // the read queues behind it, and the whole shot goes out in this batch's one flush.
    const lastRect =
      checkOf !== null && check && guess.windows.has(checkOf) ? this.lastRects.get(checkOf) : undefined;
    if (lastRect && check && opts.readAhead) this.askReadBehind(check, lastRect, opts.readAhead);
    const bottomToTop = this.stacking(stackingAsked);
    this.lastRootChildren = rootTree.resolve().children;
    const focusWin = focus.resolve();
    const asked = this.takeLastListing(guess, bottomToTop, focusWin);
    // Whatever the guess did not cover goes out now (nothing, on a desktop as the last listing).
    x.flush();
    const { pending, rootGeoms, ahead } = asked;
    const serverPids = asked.pids.resolve();
    const rootChildren = new Set(rootGeoms.keys());
    const focusPath = this.focusPath(focusWin, rootChildren, new Map(pending.map((p) => [p.xid, p])), ahead);
    this.framesByClient = new Map();
    this.framesByFrame = new Map();
    const out: WindowInfo[] = [];
    for (const p of pending) {
      const w = this.collect(p, out.length, focusPath, rootGeoms, serverPids);
      if (w) out.push(w);
    }
    // Replies nobody asked for stay queued otherwise; a vanished top-level is no error here.
    for (const g of rootGeoms.values()) settle(g);
    this.lastStacking = bottomToTop;
    // Our own dialogs lose their identity first (never targets), then every other window's
    // instance must be proven to hold its X connection.
    const shown = concealOwnDialogs(out);
    this.requireConnectionOwners(shown, true);
    if (check && this.liveAhead.includes(check))
      check.target = shown.find((w) => w.hwnd === String(checkOf)) ?? null;
    // What was read ahead is vouched for only by a frame the batch before the read asked about.
    if (lastRect && known && this.framesByClient.get(known.client)?.frame !== known.frame)
      opts.readAhead?.stale();
    this.lastRects = new Map(shown.map((w) => [Number(w.hwnd), w.rect]));
    return shown;
  }

  /**
   * The read asked behind `check`'s requests (the check before it), at `rect`. The check is
   * judged only from the requests asked before the read: if another listing or check drops
   * them first (another shot's, in between), or the check needs a request more (sent after the
   * read), the read is void.
   */
  private askReadBehind(check: LiveAhead, rect: Rect, readAhead: ReadAhead): void {
    check.dropped = () => readAhead.stale();
    this.keepAhead = true;
    try {
      readAhead.ask(rect);
    } finally {
      this.keepAhead = false;
    }
    check.asked.seal(() => readAhead.stale());
  }

  /**
   * DesktopPort.askCheckBeforeRead: the region check of `target` (a window of a listing already
   * made, which the check judges against) asked now, the read at its rect behind it, for the
   * next confirmLive of that very object. Nothing is asked for a window whose frame this
   * desktop's last listing does not know (the check asks it itself, then the read follows).
   */
  askCheckBeforeRead(target: WindowInfo, readAhead: ReadAhead): void {
    if (!/^\d{1,10}$/.test(target.hwnd)) return;
    const known = this.framesByClient.get(Number(target.hwnd));
    if (!known) return;
    const check = askRegionCheckAhead(this.x, this, known.client, known.frame);
    check.target = target;
    this.askReadBehind(check, target.rect, readAhead);
  }

  /** Each window's rect as the last listing found it: where a read asked ahead reads. */
  private lastRects = new Map<number, Rect>();
  /** Set while a read asked ahead queues its check after the read behind the check before it. */
  private keepAhead = false;

  /** The stacking list the last listing judged, bottom to top (what the next one asks ahead). */
  private lastStacking: readonly number[] = [];

  /**
   * A listing's requests asked in its first batch, with the root's tree and the stacking list,
   * on the guess that the desktop is as the last listing found it: each of its windows, the
   * root children's geometry, their owners (X-Resource) and the focus chain. Only a guess of
   * what to ask: the listing judges the replies of the windows this batch's stacking list
   * names, and asks the others after it.
   */
  private askLastListing(): ListingGuess {
    const x = this.x;
    const windows = new Map<number, PendingWindow>();
    for (const xid of [...this.lastStacking].reverse()) windows.set(xid, this.request(xid));
    const geoms = new Map<number, Pending<Geometry>>();
    for (const w of this.lastRootChildren) geoms.set(w, x.getGeometry(w));
    const stacking = this.lastStacking;
    const pids = stacking.length > 0 ? x.askClientPids(stacking) : null;
    return { stacking, windows, geoms, pids, ahead: this.askFocusChain(null) };
  }

  /**
   * The listing's requests for `bottomToTop` and the root's children: those the guess asked,
   * the rest asked now (not yet sent); the guess's other replies are read and dropped.
   */
  private takeLastListing(
    guess: ListingGuess,
    bottomToTop: readonly number[],
    focusWin: number,
  ): {
    pending: PendingWindow[];
    rootGeoms: Map<number, Pending<Geometry>>;
    pids: Pending<Map<number, number>>;
    ahead: Map<number, Pending<{ parent: number; children: number[] }>>;
  } {
    const x = this.x;
    const rootGeoms = new Map<number, Pending<Geometry>>();
    for (const w of this.lastRootChildren) rootGeoms.set(w, guess.geoms.get(w) ?? x.getGeometry(w));
    for (const [w, g] of guess.geoms) if (rootGeoms.get(w) !== g) settle(g);
    const pending = [...bottomToTop].reverse().map((xid) => guess.windows.get(xid) ?? this.request(xid));
    const used = new Set(pending);
    for (const p of guess.windows.values()) if (!used.has(p)) drainWindow(p);
    const same =
      guess.pids !== null &&
      guess.stacking.length === bottomToTop.length &&
      guess.stacking.every((w, i) => bottomToTop[i] === w);
    if (!same) guess.pids?.resolve();
    const pids = same && guess.pids ? guess.pids : x.askClientPids(bottomToTop);
    // The chain asked ahead serves only a walk from the focus this batch answered.
    let ahead = guess.ahead;
    if (this.lastFocusChain[0] !== focusWin) {
      for (const t of ahead.values()) settle(t);
      ahead = new Map();
    }
    return { pending, rootGeoms, pids, ahead };
  }

  /**
   * The capture's check after the read (DesktopPort.targetAndCovers): the target alone, read
   * afresh exactly as listWindows reads it (properties, frame from the server's tree, owner from
   * X-Resource, instance from /proc, connection-owner proof), in one request batch. No window
   * above it is listed: confirmLive judges every top-level stacked above the frame from
   * XQueryTree (override-redirect ones included), which is more than the WM's stacking list says.
   */
  async targetAndCovers(hwnd: string, _region: Rect): Promise<WindowInfo[]> {
    const xid = parseHwnd(hwnd);
    const asked = this.afterRead;
    this.afterRead = null;
    if (asked && asked.xid === xid) return this.judgeTargetBatch(asked);
    if (asked) this.dropBatch(asked);
    return this.judgeTargetBatch(this.askTargetBatch(xid));
  }

  /**
   * targetAndCovers' batch for `hwnd`, sent now (right after the pixels were read), so the X
   * server answers it while the capture worker encodes; the check judges those replies when
   * it runs. The requests go out after the read either way: their replies describe the state
   * after it, as when the check sends them itself.
   */
  askCheckAfterRead(hwnd: string): void {
    const asked = this.afterRead;
    this.afterRead = null;
    if (asked) this.dropBatch(asked);
    this.afterRead = this.askTargetBatch(parseHwnd(hwnd));
  }

  /** targetAndCovers' batch asked ahead and not judged yet (askCheckAfterRead). */
  private afterRead: TargetBatch | null = null;

  /** Reads a batch nobody will judge, so nothing stays queued on the connection. */
  private dropBatch(b: TargetBatch): void {
    try {
      this.judgeTargetBatch(b);
    } catch {
      // Nothing is judged from it.
    }
    dropAhead(this);
  }

  private askTargetBatch(xid: number): TargetBatch {
    const x = this.x;
    const known = this.framesByClient.get(xid);
    const p = this.request(xid);
    const focus = x.inputFocus();
    // The region check that follows (confirmLive on the window this returns), asked in this
    // batch: after the read like the rest of it, and no round trip of its own.
    const check = known ? askRegionCheckAhead(x, this, xid, known.frame, this.keepAhead) : null;
    // The frame of the last listing, confirmed a root child by the same batch (else the walk).
    const frameTree =
      known && known.frame !== xid ? (check?.asked.tree(known.frame) ?? x.queryTree(known.frame)) : null;
    const frameGeom = known ? x.getGeometry(known.frame) : null;
    const ahead = this.askFocusChain(null);
    // The owner from X-Resource, in the same batch (see listWindows).
    const pids = x.askClientPids([xid]);
    x.flush();
    return { xid, known, p, focus, check, frameTree, frameGeom, ahead, pids };
  }

  private judgeTargetBatch(b: TargetBatch): WindowInfo[] {
    const { xid, known, p, focus, check, frameTree, frameGeom, ahead, pids } = b;
    const x = this.x;
    const serverPids = pids.resolve();
    const rootGeoms = new Map<number, Pending<Geometry>>();
    const rootChildren = new Set<number>();
    if (known && frameGeom) {
      const parent = frameTree ? settle(frameTree).value?.parent : x.root;
      if (parent === x.root) {
        rootGeoms.set(known.frame, frameGeom);
        rootChildren.add(known.frame);
      } else settle(frameGeom);
    }
    const w = this.collect(
      p,
      0,
      this.focusPath(settle(focus).value ?? 0, rootChildren, new Map([[xid, p]]), ahead),
      rootGeoms,
      serverPids,
    );
    if (!w) return [];
    const shown = concealOwnDialogs([w]);
    this.requireConnectionOwners(shown, false);
    if (check && this.liveAhead.includes(check)) check.target = shown[0] ?? null;
    return shown;
  }

  async getWindow(hwnd: string): Promise<WindowInfo | null> {
    const xid = parseHwnd(hwnd);
    const all = await this.listWindows();
    return all.find((w) => w.hwnd === String(xid)) ?? null;
  }

  async isInstanceAlive(instance: ProcessInstance): Promise<boolean> {
    const now = resolveInstance(instance.pid, this.x.displayName);
    return now !== null && sameInstance(now, instance);
  }

  async virtualScreen(): Promise<Rect> {
    const g = this.x.getGeometry(this.x.root).resolve();
    return [0, 0, g.width, g.height];
  }

  async health(): Promise<Record<string, string | number | boolean | null>> {
    const x = this.x;
    const n = x.n;
    const zero = (): number[] => [0];
    const xtest = n.XTestQueryExtension(x.dpy, zero(), zero(), zero(), zero()) !== 0;
    const xshm = n.XShmQueryExtension(x.dpy) !== 0;
    let wm: string | null = null;
    const check = cardinals(x.getProperty(x.root, x.atoms._NET_SUPPORTING_WM_CHECK).resolve())[0];
    if (check) {
      try {
        wm = text(x.getProperty(check, x.atoms._NET_WM_NAME).resolve(), x.atoms.UTF8_STRING);
      } catch {
        wm = null;
      }
    }
    const g = x.getGeometry(x.root).resolve();
    return {
      display: x.displayName,
      xtest,
      xshm,
      wm_name: wm,
      ewmh: check !== undefined,
      screen_width: g.width,
      screen_height: g.height,
      x_resource_pid_lookup: x.hasXRes,
      dpi_awareness: "x11-physical-pixels",
    };
  }

  async restoreWindow(hwnd: string): Promise<void> {
    const xid = parseHwnd(hwnd);
    const x = this.x;
    // Un-minimize only: a window its application withdrew (unmapped, not iconic) stays hidden.
    // The WM's declared state decides, not the map state: openbox writes it before it unmaps the
    // window, and a window still mapped in between is on its way to iconic all the same.
    if (!this.declaredIconic(xid)) return;
    // EWMH first: removing _NET_WM_STATE_HIDDEN un-minimizes without focusing (openbox honours it).
    x.sendClientMessage(
      x.root,
      xid,
      x.atoms._NET_WM_STATE,
      [NET_WM_STATE_REMOVE, x.atoms._NET_WM_STATE_HIDDEN, 0, SOURCE_PAGER, 0],
      true,
    );
    const deadline = Date.now() + RESTORE_WAIT_MS;
    while (Date.now() < deadline) {
      if (!this.declaredIconic(xid) && x.getMapState(xid).resolve().mapState === 2) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    // A WM that ignores the EWMH request: the ICCCM way (map request). Some WMs focus on it. A WM
    // merely slow gets it after our request and finds the window restored (openbox ignores it then).
    x.mapWindow(xid);
  }

  /** Minimized by the WM's word: `_NET_WM_STATE_HIDDEN` or `WM_STATE` Iconic. */
  private declaredIconic(xid: number): boolean {
    const x = this.x;
    const states = cardinals(x.getProperty(xid, x.atoms._NET_WM_STATE).resolve());
    const wmState = cardinals(x.getProperty(xid, x.atoms.WM_STATE, 2).resolve())[0];
    return states.includes(x.atoms._NET_WM_STATE_HIDDEN) || wmState === ICONIC_STATE;
  }

  async activateWindow(hwnd: string): Promise<void> {
    const xid = parseHwnd(hwnd);
    const x = this.x;
    x.sendClientMessage(x.root, xid, x.atoms._NET_ACTIVE_WINDOW, [SOURCE_PAGER, 0, 0, 0, 0], true);
  }

  async closeWindow(hwnd: string): Promise<void> {
    const xid = parseHwnd(hwnd);
    const x = this.x;
    const protocols = cardinals(x.getProperty(xid, x.atoms.WM_PROTOCOLS).resolve());
    if (!protocols.includes(x.atoms.WM_DELETE_WINDOW)) {
      // Never XKillClient: a window that cannot be asked politely is refused.
      throw uiError("pattern_not_supported", "The window does not accept a polite close request.");
    }
    x.sendClientMessage(xid, xid, x.atoms.WM_PROTOCOLS, [x.atoms.WM_DELETE_WINDOW, 0, 0, 0, 0], false);
  }

  async dispose(): Promise<void> {}
}

type Geometry = ReturnType<ReturnType<XConnection["getGeometry"]>["resolve"]>;

function clientRect(origin: { x: number; y: number }, geom: { width: number; height: number }): Rect {
  return [origin.x, origin.y, origin.x + geom.width, origin.y + geom.height];
}

interface Settled<T> {
  value?: T;
  error?: ReturnType<typeof uiError>;
}

function settle<T>(p: Pending<T>): Settled<T> {
  try {
    return { value: p.resolve() };
  } catch (e) {
    if (isUiError(e)) return { error: e };
    return { error: uiError("platform_unavailable", "An X request failed.") };
  }
}
