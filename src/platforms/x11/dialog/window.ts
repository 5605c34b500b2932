import koffi from "koffi";
import { sleep } from "../../../shared/sleep.js";
import { type DialogNative, dialogNative, type Ptr, type Xid } from "./native.js";
import {
  isXtestDeviceName,
  PersonInputFilter,
  XI_FLOATING_SLAVE,
  XI_SLAVE_KEYBOARD,
  XI_SLAVE_POINTER,
} from "./personInput.js";

/**
 * Our own consent / lease dialog window, drawn by us: no dialog
 * program is looked up anywhere. It runs in a child process of the server (or of the lease
 * broker), shows exactly the text it was given, has Deny focused by default, and accepts only
 * what PersonInputFilter says a person did. The window keeps itself above (_NET_WM_STATE_ABOVE
 * plus a raise whenever it is obscured) and holds an XInput2 grab of every master keyboard
 * while shown, so typed keys (ours or anyone's) reach nothing else and are judged here.
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
}

export type DialogAnswer = "approve" | "deny";

const EXPOSE = 12;
const FOCUS_IN = 9;
const VISIBILITY_NOTIFY = 15;
const MAP_NOTIFY = 19;
const CONFIGURE_NOTIFY = 22;
const CLIENT_MESSAGE = 33;
const GENERIC_EVENT = 35;
const EXPOSURE_MASK = 1 << 15;
const VISIBILITY_CHANGE_MASK = 1 << 16;
const STRUCTURE_NOTIFY_MASK = 1 << 17;
const FOCUS_CHANGE_MASK = 1 << 21;
const XI_ALL_MASTER_DEVICES = 1;
const XI_MASTER_KEYBOARD = 2;
const XI_KEY_PRESS = 2;
const XI_BUTTON_PRESS = 4;
const XI_BUTTON_RELEASE = 5;
const IS_VIEWABLE = 2;
const XI_GRAB_MODE_ASYNC = 1;
const PROP_MODE_REPLACE = 0;
const XA_ATOM = 4;
const XA_STRING = 31;
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
const WRAP_COLUMNS = 100;
const TICK_MS = 20;

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

const xidNum = (v: Xid): number => Number(v);

/** Lines wrapped at WRAP_COLUMNS code points (long paths are broken, never cut off). */
export function wrapLines(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split("\n")) {
    const cps = Array.from(line);
    if (cps.length === 0) out.push("");
    for (let i = 0; i < cps.length; i += WRAP_COLUMNS) out.push(cps.slice(i, i + WRAP_COLUMNS).join(""));
  }
  return out;
}

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
  private readonly root: Xid;
  private readonly win: Xid;
  private readonly filter: PersonInputFilter;
  private readonly lines: string[];
  private readonly width: number;
  private readonly height: number;
  private readonly lineHeight: number;
  private readonly ascent: number;
  private readonly xiOpcode: number;
  private readonly wmDelete: number;
  private readonly gc: Ptr;
  private readonly draw: Ptr;
  private readonly font: Ptr;
  private readonly colors: Record<"ink" | "muted" | "paper" | "button", Buffer>;
  private readonly masks: Array<{ struct: Buffer; keep: unknown }> = [];
  private focused: Button = "deny";
  private pressed: Button | null = null;
  private grabbed = false;
  private mapped = false;
  private drawnArmed = false;
  private lastOrigin: string | null = null;
  private answer: DialogAnswer | null = null;

  constructor(private readonly req: DialogRequest) {
    this.n = dialogNative();
    const n = this.n;
    const dpy = n.XOpenDisplay(null);
    if (dpy === null || dpy === 0n) throw new Error("no display");
    this.dpy = dpy;
    // A window that vanishes under our stacking check must not end the process (Xlib's default).
    n.XSetErrorHandler(n.noopErrorHandler);
    const op = [0];
    if (n.XQueryExtension(dpy, "XInputExtension", op, [0], [0]) === 0) throw new Error("no XInput");
    this.xiOpcode = op[0] ?? 0;
    const major = [2];
    const minor = [0];
    if (n.XIQueryVersion(dpy, major, minor) !== 0 || (major[0] ?? 0) < 2) throw new Error("no XInput2");
    this.filter = new PersonInputFilter(req.allowInjected);
    this.screen = n.XDefaultScreen(dpy);
    this.root = n.XRootWindow(dpy, this.screen);
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
    this.lines = wrapLines(req.text);
    const columns = Math.max(40, ...this.lines.map((l) => Array.from(l).length));
    this.width = Math.min(n.XDisplayWidth(dpy, this.screen) - 40, columns * m.max_advance_width + 2 * MARGIN);
    this.height = MARGIN + this.lines.length * this.lineHeight + MARGIN + BUTTON_H + BOTTOM;
    const x = Math.max(0, Math.floor((n.XDisplayWidth(dpy, this.screen) - this.width) / 2));
    const y = Math.max(0, Math.floor((n.XDisplayHeight(dpy, this.screen) - this.height) / 3));
    this.win = n.XCreateSimpleWindow(dpy, this.root, x, y, this.width, this.height, 1, 0x000000, 0xf4f4f4);
    n.XSelectInput(
      dpy,
      this.win,
      EXPOSURE_MASK | VISIBILITY_CHANGE_MASK | STRUCTURE_NOTIFY_MASK | FOCUS_CHANGE_MASK,
    );
    // Input only through XInput2: every event then names its source device.
    const input = eventMask(XI_ALL_MASTER_DEVICES, [XI_KEY_PRESS, XI_BUTTON_PRESS, XI_BUTTON_RELEASE]);
    this.masks.push(input);
    n.XISelectEvents(dpy, this.win, input.struct, 1);
    n.XStoreName(dpy, this.win, req.title);
    const atom = (s: string) => n.XInternAtom(dpy, s, 0);
    const klass = Buffer.from("uiinspect-dialog\0uiinspect-dialog\0", "latin1");
    n.XChangeProperty(dpy, this.win, XA_WM_CLASS, XA_STRING, 8, PROP_MODE_REPLACE, klass, klass.length);
    this.wmDelete = xidNum(atom("WM_DELETE_WINDOW"));
    n.XSetWMProtocols(dpy, this.win, new BigUint64Array([BigInt(this.wmDelete)]), 1);
    const type = new BigUint64Array([BigInt(atom("_NET_WM_WINDOW_TYPE_DIALOG"))]);
    n.XChangeProperty(dpy, this.win, atom("_NET_WM_WINDOW_TYPE"), XA_ATOM, 32, PROP_MODE_REPLACE, type, 1);
    const state = new BigUint64Array([BigInt(atom("_NET_WM_STATE_ABOVE"))]);
    n.XChangeProperty(dpy, this.win, atom("_NET_WM_STATE"), XA_ATOM, 32, PROP_MODE_REPLACE, state, 1);
    this.gc = n.XCreateGC(dpy, this.win, 0, null);
    const draw = n.XftDrawCreate(dpy, this.win, visual, cmap);
    if (draw === null || draw === 0n) throw new Error("no draw");
    this.draw = draw;
    const color = (name: string) => {
      const b = Buffer.alloc(16);
      if (n.XftColorAllocName(dpy, visual, cmap, name, b) === 0) throw new Error("no color");
      return b;
    };
    this.colors = {
      ink: color("#000000"),
      muted: color("#9a9a9a"),
      paper: color("#f4f4f4"),
      button: color("#dedede"),
    };
    n.XMapRaised(dpy, this.win);
    n.XFlush(dpy);
  }

  /** The X window id (the caller may report it; nothing identifies the dialog by its title). */
  get windowId(): number {
    return xidNum(this.win);
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
        if (this.mapped && !this.grabbed) this.grabKeyboards();
        const armed = this.filter.armed(performance.now());
        if (this.mapped && armed !== this.drawnArmed) this.paint();
        this.n.XFlush(this.dpy);
        if (this.answer === null) await sleep(TICK_MS);
      }
      return this.answer ?? "deny";
    } finally {
      this.n.XDestroyWindow(this.dpy, this.win);
      this.n.XSync(this.dpy, 0);
      this.n.XCloseDisplay(this.dpy);
    }
  }

  private handle(ev: Buffer): void {
    const type = ev.readInt32LE(0) & 0x7f;
    const now = performance.now();
    switch (type) {
      case MAP_NOTIFY:
        this.mapped = true;
        this.filter.rearm(now);
        break;
      case EXPOSE:
        this.paint();
        break;
      case VISIBILITY_NOTIFY:
        // state (offset 40): 0 unobscured; anything else: raise again, and the delay restarts.
        if (ev.readInt32LE(40) !== 0) this.n.XRaiseWindow(this.dpy, this.win);
        this.filter.rearm(now);
        break;
      case FOCUS_IN:
        this.filter.rearm(now);
        break;
      case CONFIGURE_NOTIFY: {
        // A moved dialog may have been slid under the pointer: the delay restarts.
        const origin = `${ev.readInt32LE(48)},${ev.readInt32LE(52)}`;
        if (this.lastOrigin !== null && origin !== this.lastOrigin) this.filter.rearm(now);
        this.lastOrigin = origin;
        break;
      }
      case CLIENT_MESSAGE:
        // Closing the dialog (WM_DELETE_WINDOW) is a denial, whoever asks for it.
        if (Number(ev.readBigUInt64LE(56)) === this.wmDelete) this.answer = "deny";
        break;
      case GENERIC_EVENT:
        this.handleXi(ev, now);
        break;
    }
  }

  private handleXi(cookie: Buffer, now: number): void {
    if (cookie.readInt32LE(32) !== this.xiOpcode) return;
    if (this.n.XGetEventData(this.dpy, cookie) === 0) return;
    try {
      const evtype = cookie.readInt32LE(36);
      const data = cookie.readBigUInt64LE(48);
      // XIDeviceEvent (LP64): send_event 16, sourceid 52, detail 56, event_x 104, event_y 112.
      const raw = Buffer.from(new Uint8Array(koffi.view(data, 128) as ArrayBuffer));
      const synthetic = raw.readInt32LE(16) !== 0;
      const sourceid = raw.readInt32LE(52);
      const detail = raw.readInt32LE(56);
      const x = raw.readDoubleLE(104);
      const y = raw.readDoubleLE(112);
      const verdict = this.filter.judge({
        now,
        synthetic,
        injected: this.injectedSource(sourceid),
        overlapped: this.overlapped(),
      });
      if (verdict !== "accept") {
        this.pressed = null;
        if (verdict === "overlapped") this.paint();
        return;
      }
      if (evtype === XI_KEY_PRESS) this.onKey(detail);
      else if (evtype === XI_BUTTON_PRESS && detail === 1) this.pressed = this.buttonAt(x, y);
      else if (evtype === XI_BUTTON_RELEASE && detail === 1) {
        const hit = this.buttonAt(x, y);
        if (hit !== null && hit === this.pressed) this.answer = hit === "allow" ? "approve" : "deny";
        this.pressed = null;
      }
    } finally {
      this.n.XFreeEventData(this.dpy, cookie);
    }
  }

  private onKey(keycode: number): void {
    const ks = xidNum(this.n.XkbKeycodeToKeysym(this.dpy, keycode, 0, 0));
    if (ks === KS_TAB || ks === KS_ISO_LEFT_TAB || ks === KS_LEFT || ks === KS_RIGHT) {
      this.focused = this.focused === "deny" ? "allow" : "deny";
      this.paint();
    } else if (ks === KS_RETURN || ks === KS_KP_ENTER || ks === KS_SPACE) {
      this.answer = this.focused === "allow" ? "approve" : "deny";
    } else if (ks === KS_ESCAPE) {
      this.answer = "deny";
    }
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

  /** Any viewable top-level window above our frame (X server stacking, XQueryTree) that intersects it. */
  private overlapped(): boolean {
    const top = this.topLevel();
    if (top === null) return true;
    const mine = this.rectOf(top);
    if (mine === null) return true;
    const kids = this.children(this.root);
    const at = kids.indexOf(top);
    if (at < 0) return true;
    for (const w of kids.slice(at + 1)) {
      const r = this.rectOf(w);
      if (r === null || !r.viewable) continue;
      if (r.x < mine.x + mine.w && mine.x < r.x + r.w && r.y < mine.y + mine.h && mine.y < r.y + r.h)
        return true;
    }
    return false;
  }

  /** Our window's ancestor just below the root (the WM frame, or the window itself). */
  private topLevel(): number | null {
    let w = xidNum(this.win);
    for (let depth = 0; depth < 16; depth++) {
      const root: Xid[] = [0];
      const parent: Xid[] = [0];
      const kids: Array<Ptr | null> = [null];
      const count = [0];
      if (this.n.XQueryTree(this.dpy, w, root, parent, kids, count) === 0) return null;
      if (kids[0]) this.n.XFree(kids[0]);
      const p = xidNum(parent[0] ?? 0);
      if (p === 0) return null;
      if (p === xidNum(this.root)) return w;
      w = p;
    }
    return null;
  }

  private children(w: Xid): number[] {
    const root: Xid[] = [0];
    const parent: Xid[] = [0];
    const kids: Array<Ptr | null> = [null];
    const count = [0];
    if (this.n.XQueryTree(this.dpy, w, root, parent, kids, count) === 0) return [];
    const p = kids[0];
    if (!p) return [];
    try {
      const list = koffi.decode(p, "unsigned long", count[0] ?? 0) as ArrayLike<bigint | number>;
      return Array.from(list, (v) => Number(v));
    } finally {
      this.n.XFree(p);
    }
  }

  private rectOf(w: number): (Box & { viewable: boolean }) | null {
    const a = Buffer.alloc(XWINDOWATTRIBUTES_BYTES);
    if (this.n.XGetWindowAttributes(this.dpy, w, a) === 0) return null;
    // x, y, width, height, border_width: the first five ints; map_state at offset 92 (LP64).
    const border = a.readInt32LE(16);
    return {
      x: a.readInt32LE(0),
      y: a.readInt32LE(4),
      w: a.readInt32LE(8) + 2 * border,
      h: a.readInt32LE(12) + 2 * border,
      viewable: a.readInt32LE(92) === IS_VIEWABLE,
    };
  }

  private grabKeyboards(): void {
    const count = [0];
    const info = this.n.XIQueryDevice(this.dpy, XI_ALL_MASTER_DEVICES, count);
    if (info === null || info === 0n) return;
    let all = true;
    try {
      const devices = koffi.decode(info, this.n.XIDeviceInfo, count[0] ?? 0) as Array<{
        deviceid: number;
        use: number;
      }>;
      for (const d of devices) {
        if (d.use !== XI_MASTER_KEYBOARD) continue;
        const mask = eventMask(d.deviceid, [XI_KEY_PRESS]);
        this.masks.push(mask);
        const status = this.n.XIGrabDevice(
          this.dpy,
          d.deviceid,
          this.win,
          0,
          0,
          XI_GRAB_MODE_ASYNC,
          XI_GRAB_MODE_ASYNC,
          0,
          mask.struct,
        );
        if (status !== 0) all = false;
      }
    } finally {
      this.n.XIFreeDeviceInfo(info);
    }
    this.grabbed = all;
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

  private paint(): void {
    const n = this.n;
    const armed = this.filter.armed(performance.now());
    this.drawnArmed = armed;
    n.XSetForeground(this.dpy, this.gc, 0xf4f4f4);
    n.XFillRectangle(this.dpy, this.win, this.gc, 0, 0, this.width, this.height);
    this.lines.forEach((l, i) => {
      this.text(l, MARGIN, MARGIN + this.ascent + i * this.lineHeight, this.colors.ink);
    });
    for (const b of ["deny", "allow"] as const) {
      const r = this.buttonBox(b);
      n.XSetForeground(this.dpy, this.gc, 0xdedede);
      n.XFillRectangle(this.dpy, this.win, this.gc, r.x, r.y, r.w, r.h);
      n.XSetForeground(this.dpy, this.gc, 0x000000);
      n.XDrawRectangle(this.dpy, this.win, this.gc, r.x, r.y, r.w - 1, r.h - 1);
      if (b === this.focused)
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
