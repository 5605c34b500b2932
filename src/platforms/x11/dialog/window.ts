import koffi from "koffi";
import type { DialogReport } from "../../../shared/consentReport.js";
import { sleep } from "../../../shared/sleep.js";
import { type DialogNative, dialogNative, type Ptr, type Xid } from "./native.js";
import {
  ConsentGesture,
  isXtestDeviceName,
  type KeyRole,
  type Spot,
  XI_FLOATING_SLAVE,
  XI_SLAVE_KEYBOARD,
  XI_SLAVE_POINTER,
} from "./personInput.js";
import { ARMED_TEXT, DEFAULT_COLUMNS, KEYBOARD_TEXT, statusLine, WAIT_TEXT, wrapLines } from "./text.js";

/**
 * Our own consent / lease dialog window, drawn by us: no dialog program is looked up anywhere.
 * It runs in a child process of the server (or of the lease broker), shows exactly the text it
 * was given, has Deny focused by default, and accepts only what ConsentGesture says a person
 * did, judged by X server timestamps. On every event it judges it proves its own window from the
 * X server (XQueryTree, X-Resource): nothing inside it, its parent chain root → (the window
 * manager's frame →) dialog with nothing foreign in the frame, nothing clipping it, nothing
 * stacked over it. A window inside it or a reparenting after it was shown closes it as a denial
 * that says so (the report's `tampered`). It grabs no keyboard and asks the window manager not to
 * focus it when it appears, so a person typing elsewhere keeps typing there.
 *
 * Layout facts tests rely on: Allow is the bottom-right button with its centre 55 px from the
 * right and 24 px from the bottom of the client window; Deny sits left of it.
 */

export interface DialogRequest {
  title: string;
  text: string;
  timeoutMs: number;
  /** UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT: XTEST devices count as a person (tests under Xvfb). */
  allowInjected: boolean;
  /** Called whenever what the dialog ignored changes (counts and kinds only). */
  onReport?: (r: DialogReport) => void;
}

export type DialogAnswer = "approve" | "deny";

const EXPOSE = 12;
const VISIBILITY_NOTIFY = 15;
const CREATE_NOTIFY = 16;
const UNMAP_NOTIFY = 18;
const MAP_NOTIFY = 19;
const REPARENT_NOTIFY = 21;
const CONFIGURE_NOTIFY = 22;
const PROPERTY_NOTIFY = 28;
const CLIENT_MESSAGE = 33;
const GENERIC_EVENT = 35;
const EXPOSURE_MASK = 1 << 15;
const VISIBILITY_CHANGE_MASK = 1 << 16;
const STRUCTURE_NOTIFY_MASK = 1 << 17;
const SUBSTRUCTURE_NOTIFY_MASK = 1 << 19;
const PROPERTY_CHANGE_MASK = 1 << 22;
const XI_ALL_DEVICES = 0;
const XI_ALL_MASTER_DEVICES = 1;
const XI_KEY_PRESS = 2;
const XI_BUTTON_PRESS = 4;
const XI_BUTTON_RELEASE = 5;
const XI_MOTION = 6;
const XI_ENTER = 7;
const XI_LEAVE = 8;
const XI_FOCUS_IN = 9;
/** XINotifyGrab, XINotifyUngrab, XINotifyPassiveGrab, XINotifyPassiveUngrab. */
const FOCUS_GRAB_MODES = new Set([1, 2, 4, 5]);
const IS_VIEWABLE = 2;
const PROP_MODE_REPLACE = 0;
const PROP_MODE_APPEND = 2;
const XA_ATOM = 4;
const XA_CARDINAL = 6;
const XA_INTEGER = 19;
const XA_STRING = 31;
const XA_WINDOW = 33;
const XA_WM_CLASS = 67;

const KS_TAB = 0xff09;
const KS_ISO_LEFT_TAB = 0xfe20;
const KS_LEFT = 0xff51;
const KS_RIGHT = 0xff53;
const KS_RETURN = 0xff0d;
const KS_KP_ENTER = 0xff8d;
const KS_SPACE = 0x20;
const KS_ESCAPE = 0xff1b;

const MARGIN = 20;
const BUTTON_W = 90;
const BUTTON_H = 28;
const BUTTON_GAP = 10;
const BOTTOM = 10;
const TICK_MS = 20;
/** Bounds of the tree proof: ancestors below the root, children of one level of the frame. */
const MAX_DEPTH = 4;
const MAX_FRAME_WINDOWS = 256;

/** sizeof(XEvent) is 24 longs; XWindowAttributes is 136 bytes on LP64 (both rounded up). */
const XEVENT_BYTES = 192;
const XWINDOWATTRIBUTES_BYTES = 160;

type Button = "deny" | "allow";
interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}
interface Geo extends Box {
  border: number;
  viewable: boolean;
}
interface Client {
  base: number;
  mask: number;
}
type Proof = "ok" | "covered" | "tampered";

const xidNum = (v: Xid): number => Number(v);
const intersects = (a: Box, b: Box): boolean =>
  a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

/** The XIEventMask array with one entry, its mask bits set for the given XI2 event types. */
function eventMask(deviceid: number, types: readonly number[]): { struct: Buffer; keep: unknown } {
  const bits = new Uint8Array(4);
  for (const t of types) bits[t >> 3] = (bits[t >> 3] ?? 0) | (1 << (t & 7));
  const mem = koffi.alloc("uint8_t", 4);
  koffi.encode(mem, koffi.array("uint8_t", 4), Array.from(bits));
  const struct = Buffer.alloc(16);
  struct.writeInt32LE(deviceid, 0);
  struct.writeInt32LE(4, 4);
  struct.writeBigUInt64LE(BigInt(koffi.address(mem)), 8);
  return { struct, keep: mem };
}

export class ConsentWindow {
  private readonly n: DialogNative;
  private readonly dpy: Ptr;
  private readonly screen: number;
  private readonly root: number;
  private readonly win: number;
  private readonly gesture: ConsentGesture;
  private readonly lines: string[];
  private readonly width: number;
  private readonly height: number;
  private readonly lineHeight: number;
  private readonly ascent: number;
  private readonly xiOpcode: number;
  private readonly wmDelete: number;
  private readonly stampAtom: number;
  private readonly wmCheckAtom: number;
  private readonly gc: Ptr;
  private readonly draw: Ptr;
  private readonly font: Ptr;
  private readonly colors: Record<"ink" | "muted", Buffer>;
  private readonly masks: Array<{ struct: Buffer; keep: unknown }> = [];
  private readonly virtualDisplay: boolean;
  private mapped = false;
  private shownOnce = false;
  private reparents = 0;
  private tampered = false;
  private drawn = "";
  private lastOrigin: Record<"real" | "sent", string | null> = { real: null, sent: null };
  private lastProvenAt: string | null = null;
  /** The latest X server time we know of, and when (monotonic) we learnt it. */
  private serverClock: { server: number; local: number } | null = null;
  private lastReport = "";
  private answer: DialogAnswer | null = null;

  constructor(private readonly req: DialogRequest) {
    this.n = dialogNative();
    const n = this.n;
    const dpy = n.XOpenDisplay(null);
    if (dpy === null || dpy === 0n) throw new Error("no display");
    this.dpy = dpy;
    // A window that vanishes under our tree proof must not end the process (Xlib's default).
    n.XSetErrorHandler(n.noopErrorHandler);
    const op = [0];
    if (n.XQueryExtension(dpy, "XInputExtension", op, [0], [0]) === 0) throw new Error("no XInput");
    this.xiOpcode = op[0] ?? 0;
    const major = [2];
    const minor = [0];
    if (n.XIQueryVersion(dpy, major, minor) !== 0 || (major[0] ?? 0) < 2) throw new Error("no XInput2");
    this.gesture = new ConsentGesture(req.allowInjected);
    this.virtualDisplay = !req.allowInjected && this.onlyVirtualDevices();
    this.screen = n.XDefaultScreen(dpy);
    this.root = xidNum(n.XRootWindow(dpy, this.screen));
    const visual = n.XDefaultVisual(dpy, this.screen);
    const cmap = n.XDefaultColormap(dpy, this.screen);
    const font = n.XftFontOpenName(dpy, this.screen, "monospace:size=10");
    if (font === null || font === 0n) throw new Error("no font");
    this.font = font;
    const m = koffi.decode(font, this.n.XftFontMetrics) as {
      ascent: number;
      height: number;
      max_advance_width: number;
    };
    this.ascent = m.ascent;
    this.lineHeight = m.height + 2;
    const advance = Math.max(1, m.max_advance_width);
    const screenW = n.XDisplayWidth(dpy, this.screen);
    const screenH = n.XDisplayHeight(dpy, this.screen);
    // As many columns as the screen holds (at most the default): wrapped, never cut at the edge.
    const fit = Math.floor((screenW - 40 - 2 * MARGIN) / advance);
    this.lines = wrapLines(req.text, Math.max(20, Math.min(DEFAULT_COLUMNS, fit)));
    const status = [WAIT_TEXT, ARMED_TEXT, KEYBOARD_TEXT].map((t) => t.length);
    const columns = Math.max(40, ...status, ...this.lines.map((l) => Array.from(l).length));
    this.width = Math.min(screenW - 40, columns * advance + 2 * MARGIN);
    this.height = MARGIN + (this.lines.length + 1) * this.lineHeight + MARGIN + BUTTON_H + BOTTOM;
    const x = Math.max(0, Math.floor((screenW - this.width) / 2));
    const y = Math.max(0, Math.floor((screenH - this.height) / 3));
    this.win = xidNum(
      n.XCreateSimpleWindow(dpy, this.root, x, y, this.width, this.height, 1, 0x000000, 0xf4f4f4),
    );
    this.selectInput();
    n.XStoreName(dpy, this.win, req.title);
    const atom = (s: string) => xidNum(n.XInternAtom(dpy, s, 0));
    this.stampAtom = atom("_UIINSPECT_DIALOG_STAMP");
    this.wmCheckAtom = atom("_NET_SUPPORTING_WM_CHECK");
    this.wmDelete = atom("WM_DELETE_WINDOW");
    this.setWindowProperties(atom);
    this.gc = n.XCreateGC(dpy, this.win, 0, null);
    const draw = n.XftDrawCreate(dpy, this.win, visual, cmap);
    if (draw === null || draw === 0n) throw new Error("no draw");
    this.draw = draw;
    const color = (name: string) => {
      const b = Buffer.alloc(16);
      if (n.XftColorAllocName(dpy, visual, cmap, name, b) === 0) throw new Error("no color");
      return b;
    };
    this.colors = { ink: color("#000000"), muted: color("#8a8a8a") };
    n.XMapRaised(dpy, this.win);
    n.XFlush(dpy);
  }

  /** Structure, substructure, visibility and property events; input and focus through XInput2. */
  private selectInput(): void {
    const n = this.n;
    const dpy = this.dpy;
    n.XSelectInput(
      dpy,
      this.win,
      EXPOSURE_MASK |
        VISIBILITY_CHANGE_MASK |
        STRUCTURE_NOTIFY_MASK |
        SUBSTRUCTURE_NOTIFY_MASK |
        PROPERTY_CHANGE_MASK,
    );
    // Input only through XInput2: every event then names its source device and carries the
    // server's time. Enter, leave and motion are the pointer's own history; XI2 focus-in carries
    // the server time of the focus change (the core FocusIn carries none), which decides whether
    // a person's press caused it.
    const input = eventMask(XI_ALL_MASTER_DEVICES, [
      XI_KEY_PRESS,
      XI_BUTTON_PRESS,
      XI_BUTTON_RELEASE,
      XI_MOTION,
      XI_ENTER,
      XI_LEAVE,
      XI_FOCUS_IN,
    ]);
    this.masks.push(input);
    n.XISelectEvents(dpy, this.win, input.struct, 1);
  }

  /** What the window manager reads: class, close protocol, dialog type, above, no focus on map. */
  private setWindowProperties(atom: (s: string) => number): void {
    const n = this.n;
    const dpy = this.dpy;
    const klass = Buffer.from("uiinspect-dialog\0uiinspect-dialog\0", "latin1");
    n.XChangeProperty(dpy, this.win, XA_WM_CLASS, XA_STRING, 8, PROP_MODE_REPLACE, klass, klass.length);
    n.XSetWMProtocols(dpy, this.win, new BigUint64Array([BigInt(this.wmDelete)]), 1);
    const type = new BigUint64Array([BigInt(atom("_NET_WM_WINDOW_TYPE_DIALOG"))]);
    n.XChangeProperty(dpy, this.win, atom("_NET_WM_WINDOW_TYPE"), XA_ATOM, 32, PROP_MODE_REPLACE, type, 1);
    const state = new BigUint64Array([BigInt(atom("_NET_WM_STATE_ABOVE"))]);
    n.XChangeProperty(dpy, this.win, atom("_NET_WM_STATE"), XA_ATOM, 32, PROP_MODE_REPLACE, state, 1);
    // EWMH: a user time of 0 asks the window manager not to focus the window when it appears,
    // so keys a person is typing into another window keep going there.
    const zero = new BigUint64Array([0n]);
    n.XChangeProperty(dpy, this.win, atom("_NET_WM_USER_TIME"), XA_CARDINAL, 32, PROP_MODE_REPLACE, zero, 1);
  }

  /** The X window id (the caller may report it; nothing identifies the dialog by its title). */
  get windowId(): number {
    return this.win;
  }

  /** What the dialog ignored so far, whether the display looks virtual, whether it was tampered with. */
  report(): DialogReport {
    return { ...this.gesture.counts(), virtual_display: this.virtualDisplay, tampered: this.tampered };
  }

  /** Runs until answered, timed out (deny) or aborted (deny); always closes the window. */
  async run(signal: AbortSignal): Promise<DialogAnswer> {
    const deadline = Date.now() + this.req.timeoutMs;
    const ev = Buffer.alloc(XEVENT_BYTES);
    try {
      while (this.answer === null && !signal.aborted && Date.now() < deadline) {
        while (this.answer === null && this.n.XPending(this.dpy) > 0) {
          this.n.XNextEvent(this.dpy, ev);
          this.handle(ev);
        }
        this.sendReport();
        if (this.mapped && this.answer === null && this.statusKey() !== this.drawn) this.paint();
        this.n.XFlush(this.dpy);
        if (this.answer === null) await sleep(TICK_MS);
      }
      return this.answer ?? "deny";
    } finally {
      this.sendReport();
      this.n.XDestroyWindow(this.dpy, this.win);
      this.n.XSync(this.dpy, 0);
      this.n.XCloseDisplay(this.dpy);
    }
  }

  private sendReport(): void {
    const r = this.report();
    const s = JSON.stringify(r);
    if (s === this.lastReport) return;
    this.lastReport = s;
    this.req.onReport?.(r);
  }

  private tamper(): void {
    this.tampered = true;
    this.answer = "deny";
  }

  /** The delay restarts at a server time we ask for now (a zero-length append to our own property). */
  private restart(): void {
    // The pointer's place now (a place the history did not have is a landing).
    this.gesture.queried(this.queryPointer(), null);
    this.gesture.filter.restartPending();
    const empty = new BigUint64Array(1);
    this.n.XChangeProperty(this.dpy, this.win, this.stampAtom, XA_INTEGER, 32, PROP_MODE_APPEND, empty, 0);
  }

  private learnTime(server: number): void {
    this.serverClock = { server, local: performance.now() };
  }

  /** An estimate of the server's time now (only for drawing; decisions use event times). */
  private serverNow(): number | null {
    const c = this.serverClock;
    return c ? (c.server + Math.floor(performance.now() - c.local)) >>> 0 : null;
  }

  private handle(ev: Buffer): void {
    const type = ev.readInt32LE(0) & 0x7f;
    const sent = ev.readInt32LE(16) !== 0;
    switch (type) {
      case MAP_NOTIFY:
        this.onMap(xidNum(ev.readBigUInt64LE(40)), sent);
        break;
      case UNMAP_NOTIFY:
        if (xidNum(ev.readBigUInt64LE(40)) === this.win && !sent) this.mapped = false;
        break;
      case CREATE_NOTIFY:
        // Only our own window's substructure is selected: a child created inside it.
        if (!sent) this.tamper();
        break;
      case REPARENT_NOTIFY:
        if (!sent) this.onReparent(xidNum(ev.readBigUInt64LE(40)), xidNum(ev.readBigUInt64LE(48)));
        break;
      case EXPOSE:
        this.paint();
        break;
      case VISIBILITY_NOTIFY:
        this.onVisibility(ev.readInt32LE(40));
        break;
      case CONFIGURE_NOTIFY: {
        if (xidNum(ev.readBigUInt64LE(40)) !== this.win) break;
        // Moved or resized: the dialog may have been slid under the pointer. Real events carry
        // parent-relative origins, the window manager's sent ones root-relative ones.
        const key = sent ? "sent" : "real";
        const shape = `${ev.readInt32LE(48)},${ev.readInt32LE(52)},${ev.readInt32LE(56)},${ev.readInt32LE(60)}`;
        if (this.lastOrigin[key] !== null && shape !== this.lastOrigin[key]) this.restart();
        this.lastOrigin[key] = shape;
        break;
      }
      case PROPERTY_NOTIFY:
        if (sent) break;
        this.learnTime(Number(ev.readBigUInt64LE(48) & 0xffffffffn));
        if (xidNum(ev.readBigUInt64LE(40)) === this.stampAtom)
          this.gesture.filter.stamped(Number(ev.readBigUInt64LE(48) & 0xffffffffn));
        break;
      case CLIENT_MESSAGE:
        // Closing the dialog (WM_DELETE_WINDOW) is a denial, whoever asks for it.
        if (Number(ev.readBigUInt64LE(56)) === this.wmDelete) this.answer = "deny";
        break;
      case GENERIC_EVENT:
        this.handleXi(ev);
        break;
    }
  }

  private onMap(w: number, sent: boolean): void {
    if (w !== this.win) {
      if (!sent) this.tamper(); // a window inside ours
      return;
    }
    this.mapped = true;
    this.shownOnce = true;
    // Shown: prove the tree now (a frame that is not the window manager's closes it before
    // any input), and remember where it is, so a later move without an event is seen.
    if (this.proveTree(null) === "tampered") {
      this.tamper();
      return;
    }
    this.restart();
  }

  private onReparent(w: number, parent: number): void {
    if (w !== this.win) {
      if (parent === this.win) this.tamper(); // another window moved into ours
      return;
    }
    // The window manager frames us once, before we are first shown; any other reparenting
    // (into someone's window, or after it was shown) is not ours to trust.
    this.reparents++;
    if (this.shownOnce || this.reparents > 1) this.tamper();
  }

  /**
   * state 0 is unobscured; anything else: something foreign in the frame is tampering, anything
   * else is raised over again. The delay restarts.
   */
  private onVisibility(state: number): void {
    if (state !== 0) {
      if (this.proveTree(null) === "tampered") {
        this.tamper();
        return;
      }
      this.n.XRaiseWindow(this.dpy, this.win);
    }
    this.restart();
  }

  private spotAt(x: number, y: number): Spot {
    if (x < 0 || y < 0 || x >= this.width || y >= this.height) return "outside";
    return this.buttonAt(x, y) ?? "window";
  }

  private handleXi(cookie: Buffer): void {
    if (cookie.readInt32LE(32) !== this.xiOpcode) return;
    if (this.n.XGetEventData(this.dpy, cookie) === 0) return;
    try {
      const evtype = cookie.readInt32LE(36);
      const data = cookie.readBigUInt64LE(48);
      // XIDeviceEvent / XIEnterEvent (LP64): send_event 16, time 40, sourceid 52, detail 56,
      // event_x 104, event_y 112; XIEnterEvent (focus too): mode 120.
      const raw = Buffer.from(new Uint8Array(koffi.view(data, 128) as ArrayBuffer));
      const time = Number(raw.readBigUInt64LE(40) & 0xffffffffn);
      const detail = raw.readInt32LE(56);
      const spot = this.spotAt(raw.readDoubleLE(104), raw.readDoubleLE(112));
      this.learnTime(time);
      if (evtype === XI_FOCUS_IN) {
        // mode (offset 120): a keyboard grab's start or end (every grab probe, hotkey tool or
        // menu) hands the focus back where it was; nothing the person sees changed.
        const mode = raw.readInt32LE(120);
        if (raw.readInt32LE(16) !== 0 || FOCUS_GRAB_MODES.has(mode)) return;
        this.gesture.focusIn(time);
        // A pointer the history does not have where it is now landed unseen: the whole delay.
        if (this.queryPointer() !== this.gesture.pointerSpot) this.restart();
        return;
      }
      if (evtype === XI_ENTER || evtype === XI_LEAVE || evtype === XI_MOTION) {
        this.gesture.pointer(
          evtype === XI_ENTER ? "enter" : evtype === XI_LEAVE ? "leave" : "motion",
          spot,
          time,
        );
        return;
      }
      const judged =
        evtype === XI_KEY_PRESS ||
        ((evtype === XI_BUTTON_PRESS || evtype === XI_BUTTON_RELEASE) && detail === 1);
      if (!judged) return;
      const proof = this.proveTree(time);
      if (proof === "tampered") {
        this.tamper();
        return;
      }
      const facts = {
        time,
        synthetic: raw.readInt32LE(16) !== 0,
        injected: this.injectedSource(raw.readInt32LE(52)),
        covered: proof === "covered",
      };
      const answer =
        evtype === XI_KEY_PRESS
          ? this.gesture.key(this.keyRole(detail), facts)
          : this.gesture.button(evtype === XI_BUTTON_PRESS ? "press" : "release", spot, facts);
      if (answer !== null) this.answer = answer;
      else this.paint();
    } finally {
      this.n.XFreeEventData(this.dpy, cookie);
    }
  }

  private keyRole(keycode: number): KeyRole {
    const ks = xidNum(this.n.XkbKeycodeToKeysym(this.dpy, keycode, 0, 0));
    if (ks === KS_TAB || ks === KS_ISO_LEFT_TAB || ks === KS_LEFT || ks === KS_RIGHT) return "toggle";
    if (ks === KS_RETURN || ks === KS_KP_ENTER || ks === KS_SPACE) return "activate";
    if (ks === KS_ESCAPE) return "escape";
    return "other";
  }

  /**
   * Whether the event's source is not a physical slave device, or is one of the XTEST devices
   * the X server creates for every master (their names are the server's, not a client's).
   */
  private injectedSource(sourceid: number): boolean {
    const count = [0];
    const info = this.n.XIQueryDevice(this.dpy, sourceid, count);
    if (info === null || info === 0n || (count[0] ?? 0) < 1) return true;
    try {
      const d = koffi.decode(info, this.n.XIDeviceInfo) as { use: number; name: string | null };
      const physical =
        d.use === XI_SLAVE_POINTER || d.use === XI_SLAVE_KEYBOARD || d.use === XI_FLOATING_SLAVE;
      return !physical || isXtestDeviceName(d.name ?? "");
    } finally {
      this.n.XIFreeDeviceInfo(info);
    }
  }

  /** No input device but XTEST ones and Xvfb's idle ones: nobody's hand can answer here. */
  private onlyVirtualDevices(): boolean {
    const count = [0];
    const info = this.n.XIQueryDevice(this.dpy, XI_ALL_DEVICES, count);
    if (info === null || info === 0n) return false;
    try {
      const devices = koffi.decode(info, this.n.XIDeviceInfo, count[0] ?? 0) as Array<{
        use: number;
        name: string | null;
      }>;
      const slaves = devices.filter(
        (d) => d.use === XI_SLAVE_POINTER || d.use === XI_SLAVE_KEYBOARD || d.use === XI_FLOATING_SLAVE,
      );
      return slaves.every(
        (d) => isXtestDeviceName(d.name ?? "") || /^Xvfb (keyboard|mouse)$/.test(d.name ?? ""),
      );
    } finally {
      this.n.XIFreeDeviceInfo(info);
    }
  }

  private queryPointer(): Spot {
    const wx = [0];
    const wy = [0];
    const ok = this.n.XQueryPointer(this.dpy, this.win, [0], [0], [0], [0], wx, wy, [0]);
    if (ok === 0) return "outside";
    return this.spotAt(wx[0] ?? -1, wy[0] ?? -1);
  }

  /**
   * The dialog proves its window from the X server: no window inside it; its parent chain is
   * root → dialog, or root → frame (→ …) → dialog with every window of the frame owned by the
   * window manager's client (X-Resource); no level clips it; nothing stacked above it overlaps
   * it, at the root or inside the frame. A moved dialog restarts the delay at `time` (the
   * judged event's), or at a fresh stamp when there is none.
   */
  private proveTree(time: number | null): Proof {
    const own = this.tree(this.win);
    if (own === null || own.children.length > 0) return "tampered";
    const chain = [this.win];
    let parent = own.parent;
    while (parent !== this.root) {
      if (parent === 0 || chain.length > MAX_DEPTH) return "tampered";
      chain.push(parent);
      const t = this.tree(parent);
      if (t === null) return "tampered";
      parent = t.parent;
    }
    const geos: Geo[] = [];
    for (const w of chain) {
      const g = this.attrs(w);
      if (g === null) return "tampered";
      geos.push(g);
    }
    // Root positions (outer corners) from the top down: a child's origin is inside its parent's border.
    const pos: Array<{ x: number; y: number }> = new Array(chain.length);
    for (let i = chain.length - 1; i >= 0; i--) {
      const g = geos[i] as Geo;
      const above = i + 1 < chain.length ? pos[i + 1] : null;
      const pb = i + 1 < chain.length ? (geos[i + 1] as Geo).border : 0;
      pos[i] = above ? { x: above.x + pb + g.x, y: above.y + pb + g.y } : { x: g.x, y: g.y };
    }
    const outer = (i: number): Box => {
      const g = geos[i] as Geo;
      const p = pos[i] as { x: number; y: number };
      return { x: p.x, y: p.y, w: g.w + 2 * g.border, h: g.h + 2 * g.border };
    };
    for (let i = 0; i + 1 < chain.length; i++) {
      const c = geos[i] as Geo;
      const p = geos[i + 1] as Geo;
      if (c.x < 0 || c.y < 0 || c.x + c.w + 2 * c.border > p.w || c.y + c.h + 2 * c.border > p.h)
        return "tampered";
    }
    const mine = outer(0);
    const at = `${mine.x},${mine.y},${mine.w},${mine.h}`;
    if (this.lastProvenAt !== null && at !== this.lastProvenAt) {
      if (time === null) this.restart();
      else this.gesture.filter.restartAt(time);
    }
    this.lastProvenAt = at;
    // The children of every level of the frame, bottom to top (one XQueryTree each).
    const levelKids: number[][] = chain.map((w, i) => (i === 0 ? [] : (this.tree(w)?.children ?? [])));
    if (chain.length > 1 && this.frameForeign(chain, levelKids) === true) return "tampered";
    if (!geos.every((g) => g.viewable)) return "covered";
    const top = outer(chain.length - 1);
    const sw = this.n.XDisplayWidth(this.dpy, this.screen);
    const sh = this.n.XDisplayHeight(this.dpy, this.screen);
    if (top.x < 0 || top.y < 0 || top.x + top.w > sw || top.y + top.h > sh) return "covered";
    // Inside the frame: the window manager's windows stacked above our branch over the dialog.
    for (let i = 1; i < chain.length; i++) {
      const kids = levelKids[i] ?? [];
      const idx = kids.indexOf(chain[i - 1] as number);
      if (idx < 0) return "tampered";
      const base = pos[i] as { x: number; y: number };
      const b = (geos[i] as Geo).border;
      for (const k of kids.slice(idx + 1)) {
        const g = this.attrs(k);
        if (g === null || !g.viewable) continue;
        const r = { x: base.x + b + g.x, y: base.y + b + g.y, w: g.w + 2 * g.border, h: g.h + 2 * g.border };
        if (intersects(r, mine)) return "covered";
      }
    }
    // At the root: any viewable top-level above our frame (override-redirect ones included)
    // that meets it. A top-level's inferiors are clipped to it, so its rectangle bounds them.
    const kids = this.tree(this.root)?.children ?? [];
    const idx = kids.indexOf(chain[chain.length - 1] as number);
    if (idx < 0) return "tampered";
    for (const k of kids.slice(idx + 1)) {
      const g = this.attrs(k);
      if (g === null || !g.viewable) continue;
      if (intersects({ x: g.x, y: g.y, w: g.w + 2 * g.border, h: g.h + 2 * g.border }, top)) return "covered";
    }
    return "ok";
  }

  /**
   * Whether the frame holds a window that is not the window manager's: every ancestor of ours
   * below the root and every child of each of them but our own branch must belong to the client
   * that owns the `_NET_SUPPORTING_WM_CHECK` window, and that client is not us. Deeper windows
   * are clipped to those children, so a foreign one there can only draw where a window
   * manager's window already is (over the dialog that is "covered"). Owners come from
   * X-Resource (the server's client table), never from a property; without X-Resource it cannot
   * be proven and only the geometry and stacking rules apply (null).
   */
  private frameForeign(chain: number[], levelKids: number[][]): boolean | null {
    const clients = this.clients();
    if (clients === null) return null;
    const owner = (w: number): number => {
      for (const c of clients) if ((w & ~c.mask) >>> 0 === c.base) return c.base;
      return -1;
    };
    const wm = this.wmWindow();
    const wmOwner = wm === null ? -1 : owner(wm);
    if (wmOwner < 0 || wmOwner === owner(this.win)) return true;
    const branch = new Set(chain);
    for (let i = 1; i < chain.length; i++) {
      if (owner(chain[i] as number) !== wmOwner) return true;
      const kids = levelKids[i] ?? [];
      if (kids.length > MAX_FRAME_WINDOWS) return true;
      for (const k of kids) if (!branch.has(k) && owner(k) !== wmOwner) return true;
    }
    return false;
  }

  /** The window manager's check window: the root's `_NET_SUPPORTING_WM_CHECK`, naming itself too. */
  private wmWindow(): number | null {
    const w = this.windowProp(this.root, this.wmCheckAtom);
    return w !== null && this.windowProp(w, this.wmCheckAtom) === w ? w : null;
  }

  private windowProp(w: number, prop: number): number | null {
    const data: Array<Ptr | null> = [null];
    const nItems = [0];
    const status = this.n.XGetWindowProperty(
      this.dpy,
      w,
      prop,
      0,
      1,
      0,
      XA_WINDOW,
      [0],
      [0],
      nItems,
      [0],
      data,
    );
    const p = data[0];
    try {
      if (status !== 0 || !p || (nItems[0] ?? 0) < 1) return null;
      return Number((koffi.decode(p, "unsigned long") as bigint | number) ?? 0) || null;
    } finally {
      if (p) this.n.XFree(p);
    }
  }

  private clients(): Client[] | null {
    const q = this.n.XResQueryClients;
    if (q === null) return null;
    const count = [0];
    const out: Array<Ptr | null> = [null];
    if (q(this.dpy, count, out) === 0) return null;
    const p = out[0];
    if (!p) return [];
    try {
      const flat = koffi.decode(p, "unsigned long", 2 * (count[0] ?? 0)) as ArrayLike<bigint | number>;
      const list: Client[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2)
        list.push({ base: Number(flat[i]) >>> 0, mask: Number(flat[i + 1]) >>> 0 });
      return list;
    } finally {
      this.n.XFree(p);
    }
  }

  private tree(w: number): { parent: number; children: number[] } | null {
    const parent: Xid[] = [0];
    const kids: Array<Ptr | null> = [null];
    const count = [0];
    if (this.n.XQueryTree(this.dpy, w, [0], parent, kids, count) === 0) return null;
    const p = kids[0];
    let children: number[] = [];
    if (p) {
      try {
        const list = koffi.decode(p, "unsigned long", count[0] ?? 0) as ArrayLike<bigint | number>;
        children = Array.from(list, (v) => Number(v));
      } finally {
        this.n.XFree(p);
      }
    }
    return { parent: xidNum(parent[0] ?? 0), children };
  }

  private attrs(w: number): Geo | null {
    const a = Buffer.alloc(XWINDOWATTRIBUTES_BYTES);
    if (this.n.XGetWindowAttributes(this.dpy, w, a) === 0) return null;
    // x, y, width, height, border_width: the first five ints; map_state at offset 92 (LP64).
    return {
      x: a.readInt32LE(0),
      y: a.readInt32LE(4),
      w: a.readInt32LE(8),
      h: a.readInt32LE(12),
      border: a.readInt32LE(16),
      viewable: a.readInt32LE(92) === IS_VIEWABLE,
    };
  }

  private buttonBox(b: Button): Box {
    const y = this.height - BOTTOM - BUTTON_H;
    const allowX = this.width - BUTTON_GAP - BUTTON_W;
    return { x: b === "allow" ? allowX : allowX - BUTTON_GAP - BUTTON_W, y, w: BUTTON_W, h: BUTTON_H };
  }

  private buttonAt(x: number, y: number): Button | null {
    for (const b of ["deny", "allow"] as const) {
      const r = this.buttonBox(b);
      if (x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h) return b;
    }
    return null;
  }

  private text(s: string, x: number, y: number, color: Buffer): void {
    const bytes = Buffer.from(s, "utf8");
    this.n.XftDrawStringUtf8(this.draw, color, this.font, x, y, bytes, bytes.length);
  }

  private armedNow(): boolean {
    const now = this.serverNow();
    return now !== null && this.gesture.filter.armedBy(now);
  }

  /** What the drawing depends on besides the fixed text (repainted when it changes). */
  private statusKey(): string {
    return `${this.armedNow()}|${this.gesture.focused}|${this.gesture.keyboardRefused}`;
  }

  private paint(): void {
    const n = this.n;
    const armed = this.armedNow();
    this.drawn = this.statusKey();
    n.XSetForeground(this.dpy, this.gc, 0xf4f4f4);
    n.XFillRectangle(this.dpy, this.win, this.gc, 0, 0, this.width, this.height);
    this.lines.forEach((l, i) => {
      this.text(l, MARGIN, MARGIN + this.ascent + i * this.lineHeight, this.colors.ink);
    });
    const status = statusLine(armed, this.gesture.keyboardRefused);
    const statusY = MARGIN + this.ascent + this.lines.length * this.lineHeight + MARGIN / 2;
    this.text(status, MARGIN, statusY, armed ? this.colors.ink : this.colors.muted);
    for (const b of ["deny", "allow"] as const) {
      const r = this.buttonBox(b);
      n.XSetForeground(this.dpy, this.gc, armed ? 0xdedede : 0xececec);
      n.XFillRectangle(this.dpy, this.win, this.gc, r.x, r.y, r.w, r.h);
      n.XSetForeground(this.dpy, this.gc, armed ? 0x000000 : 0xa0a0a0);
      n.XDrawRectangle(this.dpy, this.win, this.gc, r.x, r.y, r.w - 1, r.h - 1);
      if (b === this.gesture.focused)
        n.XDrawRectangle(this.dpy, this.win, this.gc, r.x + 3, r.y + 3, r.w - 7, r.h - 7);
      const label = b === "allow" ? "Allow" : "Deny";
      this.text(
        label,
        r.x + Math.floor((r.w - label.length * 8) / 2),
        r.y + Math.floor(r.h / 2) + Math.floor(this.ascent / 2) - 1,
        armed ? this.colors.ink : this.colors.muted,
      );
    }
    n.XFlush(this.dpy);
  }
}
