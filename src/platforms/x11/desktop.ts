import { hostname } from "node:os";
import { isUiError, uiError } from "../../shared/errors.js";
import type { Rect } from "../../shared/geometry.js";
import { type ProcessInstance, sameInstance } from "../../shared/identity.js";
import type { DesktopPort, WindowInfo } from "../../shared/platform.js";
import { concealOwnDialogs } from "./ownDialogs.js";
import { processExited, resolveInstance } from "./proc.js";
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
 * WM frame in root coordinates (client rect grown by _NET_FRAME_EXTENTS), i.e. what a person
 * sees, like GetWindowRect on Win32. See docs/x11.md.
 */

const ICONIC_STATE = 3;
const NET_WM_STATE_REMOVE = 0;
const SOURCE_PAGER = 2;
const RESTORE_WAIT_MS = 500;

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
}

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

  constructor(x: XConnection) {
    this.x = x;
  }

  /** Client windows bottom-to-top as the WM reports them. */
  private stacking(): number[] {
    const a = this.x.atoms;
    const st = cardinals(this.x.getProperty(this.x.root, a._NET_CLIENT_LIST_STACKING).resolve());
    if (st.length > 0) return st;
    return cardinals(this.x.getProperty(this.x.root, a._NET_CLIENT_LIST).resolve());
  }

  private activeWindow(): number {
    const v = cardinals(this.x.getProperty(this.x.root, this.x.atoms._NET_ACTIVE_WINDOW).resolve());
    return v[0] ?? 0;
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
    };
  }

  /** Resolves every reply (all of them, so none is left queued); null when the window vanished. */
  private collect(p: PendingWindow, z: number, active: number): WindowInfo | null {
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
    const pid = this.windowPid(p.xid, results.pid.value ?? null, results.machine.value ?? null);
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
    const rect: Rect = [left, top, origin.x + geom.width + (er ?? 0), origin.y + geom.height + (eb ?? 0)];
    return {
      hwnd: String(p.xid),
      title,
      window_class: windowClass,
      pid,
      instance,
      rect,
      visible: mapState === 2 || iconic,
      iconic,
      foreground: active !== 0 && active === p.xid,
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
   * cannot borrow another process's identity; 0 for remote or unknown clients. Without it:
   * _NET_WM_PID, trusted only when WM_CLIENT_MACHINE is unset or names this host.
   */
  private windowPid(xid: number, netPid: PropertyValue | null, machineProp: PropertyValue | null): number {
    if (this.x.hasXRes) return this.x.clientPid(xid) ?? 0;
    const claimed = cardinals(netPid)[0] ?? 0;
    const machine = text(machineProp, this.x.atoms.UTF8_STRING);
    const local = machine === null || machine === "" || machine === this.host || machine === "localhost";
    return local ? claimed : 0;
  }

  async listWindows(): Promise<WindowInfo[]> {
    const bottomToTop = this.stacking();
    const active = this.activeWindow();
    const topFirst = [...bottomToTop].reverse();
    // Pipeline: all requests first, then all replies.
    const pending = topFirst.map((xid) => this.request(xid));
    const out: WindowInfo[] = [];
    for (const p of pending) {
      const w = this.collect(p, out.length, active);
      if (w) out.push(w);
    }
    return concealOwnDialogs(out);
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
    if (x.getMapState(xid).resolve().mapState === 2) return;
    // Un-minimize only: a window its application withdrew (unmapped, not iconic) stays hidden.
    const states = cardinals(x.getProperty(xid, x.atoms._NET_WM_STATE).resolve());
    const wmState = cardinals(x.getProperty(xid, x.atoms.WM_STATE, 2).resolve())[0];
    if (!states.includes(x.atoms._NET_WM_STATE_HIDDEN) && wmState !== ICONIC_STATE) return;
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
      if (x.getMapState(xid).resolve().mapState === 2) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    // A WM that ignores the EWMH request: the ICCCM way (map request). Some WMs focus on it.
    x.mapWindow(xid);
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
