import koffi from "koffi";
import { keysymForKey } from "../platforms/x11/keys.js";
import { type Ptr, x11Native } from "../platforms/x11/native.js";
import type { HeldEntry } from "./entries.js";
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
}

interface Extra {
  XQueryKeymap: (dpy: Ptr, keys: Uint8Array) => number;
  XQueryPointer: (
    dpy: Ptr,
    w: bigint | number,
    root: Array<bigint | number>,
    child: Array<bigint | number>,
    rx: number[],
    ry: number[],
    wx: number[],
    wy: number[],
    mask: number[],
  ) => number;
}

function extraBindings(): Extra {
  const lib = koffi.load("libX11.so.6");
  return {
    XQueryKeymap: lib.func("int XQueryKeymap(void *dpy, _Out_ uint8_t *keys)") as Extra["XQueryKeymap"],
    XQueryPointer: lib.func(
      "int XQueryPointer(void *dpy, unsigned long w, _Out_ unsigned long *root, _Out_ unsigned long *child, _Out_ int *rx, _Out_ int *ry, _Out_ int *wx, _Out_ int *wy, _Out_ unsigned int *mask)",
    ) as Extra["XQueryPointer"],
  };
}

/**
 * The guardian's own X connection: XTest ups for what is still down, and the spare keycodes put
 * back to NoSymbol when they still carry the keysym we mapped there (one someone else changed
 * since is theirs now and left alone).
 */
export class X11Releaser implements Releaser, X11InputState {
  private readonly n = x11Native();
  private readonly extra = extraBindings();
  private readonly dpy: Ptr;
  private readonly root: bigint | number;
  private readonly per: number;

  constructor(display: string | null = null) {
    const n = this.n;
    n.XInitThreads();
    // Xlib's default handlers exit the process: ours return (an error ends one release, not all).
    const noop = koffi.load("libX11.so.6").symbol("XConnectionNumber") as Ptr;
    n.XSetErrorHandler(noop);
    n.XSetIOErrorHandler(noop);
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
    const p = n.XGetKeyboardMapping(dpy, min[0]!, 1, per);
    if (p !== null && p !== 0n) n.XFree(p);
    this.per = per[0] || 1;
  }

  keysDown(): number[] {
    const bits = new Uint8Array(32);
    this.extra.XQueryKeymap(this.dpy, bits);
    const out: number[] = [];
    for (let kc = 0; kc < 256; kc++) if (bits[kc >> 3]! & (1 << (kc & 7))) out.push(kc);
    return out;
  }

  buttonsDown(): number[] {
    const mask = [0];
    this.extra.XQueryPointer(this.dpy, this.root, [0], [0], [0], [0], [0], [0], mask);
    return ([1, 2, 3] as const).filter((b) => (mask[0]! & BUTTON_MASK[b]) !== 0);
  }

  keysyms(code: number): bigint[] {
    const per = [0];
    const p = this.n.XGetKeyboardMapping(this.dpy, code, 1, per);
    if (p === null || p === 0n) return [];
    try {
      const raw = koffi.decode(p, "unsigned long", per[0]!) as ArrayLike<bigint | number>;
      return Array.from(raw, (v) => BigInt(v));
    } finally {
      this.n.XFree(p);
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

  /** True when every column of `code` is `keysym`: exactly what our remap wrote there. */
  ownsRemap(code: number, keysym: number): boolean {
    const syms = this.keysyms(code);
    return syms.length > 0 && syms.every((s) => s === BigInt(keysym));
  }

  restoreRemap(code: number, keysym: number): void {
    if (!this.ownsRemap(code, keysym)) return;
    this.n.XChangeKeyboardMapping(this.dpy, code, this.per, new BigUint64Array(this.per), 1);
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
        if (e.kind === "remap") continue; // after every key is up (below)
        const kc = this.keycodeOf(e);
        if (kc !== null && keys.delete(kc)) n.XTestFakeKeyEvent(this.dpy, kc, 0, 0);
      } catch {
        // one failed release does not stop the others
      }
    }
    n.XSync(this.dpy, 0);
    for (const e of entries) {
      if (e.kind !== "remap") continue;
      try {
        this.restoreRemap(e.code, e.keysym);
      } catch {
        // as above
      }
    }
    n.XSync(this.dpy, 0);
  }

  close(): void {
    try {
      this.n.XCloseDisplay(this.dpy);
    } catch {
      // the server may be gone
    }
  }
}
