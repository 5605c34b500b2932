import koffi from "koffi";
import { type Ptr, takeXcbError } from "../../os/linux/xlib.js";
import { uiError } from "../../shared/errors.js";
import { type CoreGrab, refusedCoreGrabs } from "./corePassiveXlib.js";
import type { XConnection } from "./xconn.js";
import { xiEventMask } from "./xiEventMask.js";
import { announce } from "./xtestRoute.js";

/**
 * Passive key grabs another client holds where our keys would activate them. A passive grab
 * (core `XGrabKey`, XI2 `XIGrabKeycode`) on a window activates when its key is pressed with its
 * modifiers while the focus is that window or inside it (or, with the pointer inside the focus,
 * a window between the focus and the pointer): the key then goes to the grabbing client, not to
 * the focus, and nothing a probe of the devices sees (an active grab) shows it beforehand. So
 * before each key we press, on every window from the root down to the focus and on to the window
 * under the pointer inside it, we try the same grab ourselves: the X server refuses a passive
 * grab that overlaps another client's (same key or AnyKey, same modifiers or AnyModifier) with
 * BadAccess (core) or a failed modifier status (XI2). Core and XI2 passive grabs do not conflict
 * with each other in the X server (measured on Xorg's Xvfb 21), so both kinds are probed; the XI2
 * probe names all devices, which overlaps a grab on any one. Our own probe grabs are released in
 * the same batch. Runs under the server grab of the keys it clears, on the Xlib connection that
 * sends them (so the window tree and the grabs cannot change before the keys): the core requests
 * through that connection's xcb side (libX11-xcb) when there is one, else on Xlib itself, judged
 * by X-Resource (corePassiveXlib.ts).
 */

/** One key press we are about to send: its keycode and whether Shift is held by us for it. */
export interface KeyPress {
  kc: number;
  shifted: boolean;
}

const SHIFT_MASK = 1;
/** The core modifier bits (Shift, Lock, Control, Mod1–Mod5). */
const MODIFIER_BITS = 0xff;
const GRAB_MODE_ASYNC = 1;
const XI_GRAB_MODE_ASYNC = 1;
const XI_ALL_DEVICES = 0;
const XI_KEY_PRESS = 2;
const XI_KEY_RELEASE = 3;
const X_BAD_ACCESS = 10;
/** A deeper window tree is refused, not half-checked. */
const MAX_DEPTH = 32;

/** The parent of `w` (0 for the root), or null when `w` is gone. */
function parentOf(x: XConnection, w: number): number | null {
  const n = x.n;
  const c = x.xlibXcb;
  if (c !== null && c !== 0n) {
    const err: Array<Ptr | null> = [null];
    const r = n.xcb_query_tree_reply(c, n.xcb_query_tree(c, w), err);
    const code = takeXcbError(n, err[0] ?? null);
    if (r === null || r === 0n || code !== null) return null;
    const parent = koffi.decode(r, 12, "uint32") as number;
    n.free(r);
    return parent;
  }
  const parent: Array<bigint | number> = [0];
  const kids: Array<Ptr | null> = [null];
  if (n.XQueryTree(x.dpy, w, [0], parent, kids, [0]) === 0) return null;
  const list = kids[0] ?? null;
  if (list !== null && list !== 0n) n.XFree(list);
  return Number(parent[0] ?? 0);
}

/**
 * The windows a press could be grabbed on: the root, the focus's ancestors, the focus, and the
 * windows inside the focus that contain the pointer. On the Xlib connection (or its xcb side),
 * under the server grab.
 */
function grabWindows(x: XConnection, focus: number): { windows: number[]; state: number } {
  const n = x.n;
  const chain: number[] = [focus];
  let at = focus;
  for (let i = 0; at !== x.root; i++) {
    if (i >= MAX_DEPTH) throw uiError("input_grabbed", "The focus lies too deep to prove.");
    const parent = parentOf(x, at);
    if (parent === null) throw uiError("not_foreground", "The keyboard focus window is gone.");
    if (parent === 0) break;
    chain.unshift(parent);
    at = parent;
  }
  // Below the focus: the windows under the pointer, while they lie inside it.
  let state = 0;
  let inner = focus;
  for (let i = 0; i < MAX_DEPTH; i++) {
    const child: Array<bigint | number> = [0];
    const mask = [0];
    const same = n.XQueryPointer(x.dpy, inner, [0], child, [0], [0], [0], [0], mask);
    state = (mask[0] ?? 0) & MODIFIER_BITS;
    const next = Number(child[0] ?? 0);
    if (same === 0 || next === 0) break;
    chain.push(next);
    inner = next;
  }
  return { windows: chain, state };
}

/** Whether another client's core passive grab overlaps one of ours (see the module comment). */
function coreTaken(
  x: XConnection,
  windows: readonly number[],
  byKey: ReadonlyMap<number, Set<number>>,
): boolean {
  const n = x.n;
  const c = x.xlibXcb;
  if (c === null || c === 0n) {
    const grabs: CoreGrab[] = [];
    for (const window of windows)
      for (const [code, mods] of byKey)
        for (const m of mods) grabs.push({ kind: "key", code, mods: m, window });
    return refusedCoreGrabs(x, grabs).length > 0;
  }
  // Every grab, then every ungrab (a no-op where ours failed), then the errors: one round trip.
  const cookies: unknown[] = [];
  for (const w of windows)
    for (const [kc, mods] of byKey)
      for (const m of mods)
        cookies.push(n.xcb_grab_key_checked(c, 0, w, m, kc, GRAB_MODE_ASYNC, GRAB_MODE_ASYNC));
  for (const w of windows)
    for (const [kc, mods] of byKey) for (const m of mods) n.xcb_ungrab_key(c, kc, w, m);
  let taken = false;
  for (const cookie of cookies) {
    const code = takeXcbError(n, n.xcb_request_check(c, cookie as never));
    if (code === X_BAD_ACCESS) taken = true;
    else if (code !== null) throw uiError("not_foreground", "A window on the focus path is gone.");
  }
  x.checkAlive();
  return taken;
}

/**
 * Throws input_grabbed when another client holds a passive grab (core or XI2) that one of
 * `presses` would activate, judged with the modifier state the X server holds now plus Shift
 * where we hold it. Under our server grab, on the Xlib connection.
 */
export function requireNoPassiveKeyGrab(x: XConnection, focus: number, presses: readonly KeyPress[]): void {
  if (presses.length === 0) return;
  const xi = x.n.xi;
  if (!xi) throw uiError("platform_unavailable", "libXi (XInput 2) is not installed.");
  const { windows, state } = grabWindows(x, focus);
  // Each keycode with every modifier state it will be pressed in.
  const byKey = new Map<number, Set<number>>();
  for (const p of presses) {
    const mods = byKey.get(p.kc) ?? new Set<number>();
    mods.add(p.shifted ? state | SHIFT_MASK : state);
    byKey.set(p.kc, mods);
  }
  if (coreTaken(x, windows, byKey))
    throw uiError("input_grabbed", "Another client holds a passive grab of a key we would press.");
  // XI2, for all devices: one request per window and keycode, with all its modifier states.
  announce(x);
  const mask = xiEventMask((1 << XI_KEY_PRESS) | (1 << XI_KEY_RELEASE));
  for (const w of windows)
    for (const [kc, mods] of byKey) {
      const list = [...mods];
      const buf = Buffer.alloc(8 * list.length);
      list.forEach((m, i) => {
        buf.writeInt32LE(m, 8 * i);
      });
      const failed = xi.XIGrabKeycode(
        x.dpy,
        XI_ALL_DEVICES,
        kc,
        w,
        XI_GRAB_MODE_ASYNC,
        XI_GRAB_MODE_ASYNC,
        0,
        mask,
        list.length,
        buf,
      );
      xi.XIUngrabKeycode(x.dpy, XI_ALL_DEVICES, kc, w, list.length, buf);
      if (failed !== 0) {
        x.n.XSync(x.dpy, 0);
        throw uiError("input_grabbed", "Another client holds a passive grab of a key we would press.");
      }
    }
  x.checkAlive();
}
