import koffi from "koffi";
import { type Ptr, x11Native, xKeyboardState } from "../os/linux/xlib.js";
import { autoRepeatingKeys, keyAutoRepeats, setKeyAutoRepeat } from "../platforms/x11/autoRepeat.js";
import { keysymForKey } from "../platforms/x11/keys.js";
import type { HeldEntry } from "../shared/pressLedger.js";
import type { Releaser } from "./guardian.js";

const BUTTONS = { left: 1, middle: 2, right: 3 } as const;
/** Button1Mask … Button3Mask of XQueryPointer's mask. */
const BUTTON_MASK = { 1: 0x100, 2: 0x200, 3: 0x400 } as const;

/** What the guardian and the tests read back from the X server: nothing a client can write. */
export interface X11InputState {
  /** Keycodes down (XQueryKeymap). */
  keysDown(): number[];
  /** Buttons 1–3 down (XQueryPointer's mask). */
  buttonsDown(): number[];
  /** The keysyms of one keycode, every column (XGetKeyboardMapping). */
  keysyms(code: number): bigint[];
  /** The keycodes that auto-repeat (XGetKeyboardControl). */
  autoRepeating(): number[];
}

/**
 * The guardian's own X connection: XTest ups for what is still down, the spare keycodes put
 * back to NoSymbol when they still carry the keysym we mapped there (one someone else changed
 * since is theirs now and left alone), and auto-repeat turned back on for the keys a hold had
 * turned it off for (after the key is up, so the server cannot start repeating it).
 */
export class X11Releaser implements Releaser, X11InputState {
  private readonly n = x11Native();
  private readonly extra = xKeyboardState();
  private readonly dpy: Ptr;
  private readonly root: bigint | number;
  private readonly per: number;
  /** A core-protocol connection: Xlib answers XGetKeyboardMapping from an XKB cache that only
   * follows the server when its events are read, which this process never does. */
  private readonly c: Ptr;

  constructor(display: string | null = null) {
    const n = this.n;
    n.XInitThreads();
    // Xlib's default handlers exit the process: ours return (an error ends one release, not all).
    n.XSetErrorHandler(n.noopErrorHandler);
    n.XSetIOErrorHandler(n.noopErrorHandler);
    const dpy = n.XOpenDisplay(display);
    if (dpy === null || dpy === 0n) throw new Error("no display");
    this.dpy = dpy;
    this.root = n.XRootWindow(dpy, n.XDefaultScreen(dpy));
    const zero = (): number[] => [0];
    if (n.XTestQueryExtension(dpy, zero(), zero(), zero(), zero()) === 0) throw new Error("no XTest");
    const min = [0];
    const max = [0];
    n.XDisplayKeycodes(dpy, min, max);
    const per = [0];
    const p = n.XGetKeyboardMapping(dpy, min[0] ?? 0, 1, per);
    if (p !== null && p !== 0n) n.XFree(p);
    this.per = per[0] || 1;
    const c = n.xcb_connect(display, [0]);
    if (c === null || c === 0n || n.xcb_connection_has_error(c) !== 0) throw new Error("no xcb");
    this.c = c;
  }

  keysDown(): number[] {
    const bits = new Uint8Array(32);
    this.extra.XQueryKeymap(this.dpy, bits);
    const out: number[] = [];
    for (let kc = 0; kc < 256; kc++) if ((bits[kc >> 3] ?? 0) & (1 << (kc & 7))) out.push(kc);
    return out;
  }

  buttonsDown(): number[] {
    const mask = [0];
    this.n.XQueryPointer(this.dpy, this.root, [0], [0], [0], [0], [0], [0], mask);
    return ([1, 2, 3] as const).filter((b) => ((mask[0] ?? 0) & BUTTON_MASK[b]) !== 0);
  }

  keysyms(code: number): bigint[] {
    const cookie = this.extra.xcb_get_keyboard_mapping(this.c, code, 1);
    const err: Array<Ptr | null> = [null];
    const reply = this.extra.xcb_get_keyboard_mapping_reply(this.c, cookie, err);
    if (err[0] !== null && err[0] !== 0n) this.n.free(err[0]);
    if (reply === null || reply === 0n) return [];
    try {
      // xcb_get_keyboard_mapping_reply_t: 32-byte header (length in 4-byte units at 4), then CARD32s.
      const head = Buffer.from(koffi.decode(reply, "uint8", 8) as Uint8Array);
      const count = head.readUInt32LE(4);
      const body = Buffer.from(koffi.decode(reply, "uint8", 32 + count * 4) as Uint8Array);
      return Array.from({ length: count }, (_, i) => BigInt(body.readUInt32LE(32 + i * 4)));
    } finally {
      this.n.free(reply);
    }
  }

  private keycodeOf(e: HeldEntry): number | null {
    if (e.kind === "keycode") return e.code;
    if (e.kind !== "key") return null;
    const ks = keysymForKey(e.key);
    if (ks === null) return null;
    const kc = this.n.XKeysymToKeycode(this.dpy, ks);
    return kc === 0 ? null : kc;
  }

  /**
   * True when `code` still carries the keysym our remap wrote there (in some column: XKB keeps
   * only some of the columns we wrote, and may case-convert the others). A spare someone remapped
   * to anything else since is theirs and is left alone.
   */
  ownsRemap(code: number, keysym: number): boolean {
    return this.keysyms(code).includes(BigInt(keysym));
  }

  restoreRemap(code: number, keysym: number): void {
    if (!this.ownsRemap(code, keysym)) return;
    this.n.XChangeKeyboardMapping(this.dpy, code, this.per, new BigUint64Array(this.per), 1);
    this.n.XSync(this.dpy, 0);
  }

  autoRepeating(): number[] {
    return autoRepeatingKeys(this.n, this.dpy);
  }

  /** Auto-repeat of `code` back on (a no-op where it already is). */
  restoreRepeat(code: number): void {
    if (keyAutoRepeats(this.n, this.dpy, code)) return;
    setKeyAutoRepeat(this.n, this.dpy, code, true);
    this.n.XSync(this.dpy, 0);
  }

  async release(entries: readonly HeldEntry[]): Promise<void> {
    const n = this.n;
    const keys = new Set(this.keysDown());
    const buttons = new Set(this.buttonsDown());
    for (const e of entries) {
      try {
        if (e.kind === "button") {
          const b = BUTTONS[e.button];
          if (buttons.delete(b)) n.XTestFakeButtonEvent(this.dpy, b, 0, 0);
          continue;
        }
        if (e.kind === "remap" || e.kind === "repeat") continue; // after every key is up (below)
        const kc = this.keycodeOf(e);
        if (kc !== null && keys.delete(kc)) n.XTestFakeKeyEvent(this.dpy, kc, 0, 0);
      } catch {
        // one failed release does not stop the others
      }
    }
    n.XSync(this.dpy, 0);
    for (const e of entries) {
      try {
        if (e.kind === "remap") this.restoreRemap(e.code, e.keysym);
        else if (e.kind === "repeat") this.restoreRepeat(e.code);
      } catch {
        // as above
      }
    }
    n.XSync(this.dpy, 0);
  }

  close(): void {
    try {
      this.n.xcb_disconnect(this.c);
      this.n.XCloseDisplay(this.dpy);
    } catch {
      // the server may be gone
    }
  }
}
