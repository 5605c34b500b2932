import { takeXcbError } from "../../os/linux/xlib.js";
import { uiError } from "../../shared/errors.js";
import { refusedCoreGrabs } from "./corePassiveXlib.js";
import { onlyHolders } from "./grabHolders.js";
import type { XConnection } from "./xconn.js";
import { xiEventMask } from "./xiEventMask.js";
import { announce } from "./xtestRoute.js";

/**
 * Passive button grabs another client holds where our press would activate them. A passive grab
 * (core `XGrabButton`, XI2 `XIGrabButton`) on a window activates when its button is pressed with
 * its modifiers while the pointer is in that window: the server looks from the root down to the
 * window under the pointer and the first window holding a matching grab takes the press (and the
 * rest of the click) for the grabbing client, and no active-grab probe shows it beforehand. A
 * scroll notch is a press of button 4–7 and is taken the same way. So before each press, on
 * every window from the root down to the deepest one under the pointer, we try the same grab
 * ourselves: the X server refuses a passive grab that overlaps another client's (same button or
 * AnyButton, same modifiers or AnyModifier) with BadAccess (core) or a failed modifier status
 * (XI2, probed for all devices, which overlaps a grab on any one). Core and XI2 passive button
 * grabs do not conflict with each other (measured on Xorg's Xvfb 21), so both kinds are probed.
 * Our probe grabs are released in the same batch.
 *
 * A conflict says that some other client holds the grab, never which, and a window manager binds
 * the plain buttons on the windows it manages (openbox: Left, Middle and Right press on every
 * client window, to focus and raise it before it replays the press to the window). So a conflict
 * passes when no client besides the window manager and the target's holds any passive grab at
 * all (X-Resource, grabHolders.ts); else, on the WM's frame or the client's top-level only, the
 * press is "ambiguous" (the caller records where it goes); anywhere else input_grabbed.
 */

const BUTTON_EVENTS = (1 << 2) | (1 << 3); // ButtonPress | ButtonRelease
const GRAB_MODE_ASYNC = 1;
const XI_GRAB_MODE_ASYNC = 1;
const XI_ALL_DEVICES = 0;
const XI_BUTTON_PRESS = 4;
const XI_BUTTON_RELEASE = 5;
const X_BAD_ACCESS = 10;
/** The core modifier bits (Shift, Lock, Control, Mod1–Mod5) of a pointer state mask. */
const MODIFIER_BITS = 0xff;

/**
 * The windows of `windows` where another client holds a core passive grab of `button` with
 * `state`: checked requests on the Xlib connection's xcb side (libX11-xcb), else on Xlib itself,
 * judged by X-Resource (corePassiveXlib.ts).
 */
function coreConflicts(x: XConnection, windows: readonly number[], button: number, state: number): number[] {
  const n = x.n;
  const c = x.xlibXcb;
  if (c === null || c === 0n)
    return refusedCoreGrabs(
      x,
      windows.map((window) => ({ kind: "button", code: button, mods: state, window })),
    ).map((g) => g.window);
  // Every grab, then every ungrab (a no-op where ours failed), then the errors: one round trip.
  const cookies = windows.map((w) =>
    n.xcb_grab_button_checked(
      c as never,
      0,
      w,
      BUTTON_EVENTS,
      GRAB_MODE_ASYNC,
      GRAB_MODE_ASYNC,
      0,
      0,
      button,
      state,
    ),
  );
  for (const w of windows) n.xcb_ungrab_button(c as never, button, w, state);
  const taken: number[] = [];
  cookies.forEach((cookie, i) => {
    const code = takeXcbError(n, n.xcb_request_check(c as never, cookie as never));
    if (code === X_BAD_ACCESS) taken.push(windows[i] ?? 0);
    else if (code !== null) throw uiError("occluded", "A window under the pointer is gone.");
  });
  x.checkAlive();
  return taken;
}

/** The same for XI2 grabs of any device: one grab and ungrab per window. */
function xiConflicts(x: XConnection, windows: readonly number[], button: number, state: number): number[] {
  const xi = x.n.xi;
  if (!xi) throw uiError("platform_unavailable", "libXi (XInput 2) is not installed.");
  announce(x);
  const mask = xiEventMask((1 << XI_BUTTON_PRESS) | (1 << XI_BUTTON_RELEASE));
  const mods = Buffer.alloc(8);
  mods.writeInt32LE(state, 0);
  const taken: number[] = [];
  for (const w of windows) {
    const failed = xi.XIGrabButton(
      x.dpy,
      XI_ALL_DEVICES,
      button,
      w,
      0,
      XI_GRAB_MODE_ASYNC,
      XI_GRAB_MODE_ASYNC,
      0,
      mask,
      1,
      mods,
    );
    xi.XIUngrabButton(x.dpy, XI_ALL_DEVICES, button, w, 1, mods);
    if (failed !== 0) taken.push(w);
  }
  x.n.XSync(x.dpy, 0);
  x.checkAlive();
  return taken;
}

/** Where a press may go, as far as the passive grabs on its way tell. */
export type PassiveVerdict =
  /** No other client's grab would take it, or only the WM's or the target's could. */
  | "clear"
  /**
   * Some client's grab on the WM's frame or the client's own top-level would take it first, and
   * clients besides the WM and the target hold passive grabs: it may be the WM's binding (openbox
   * binds the plain buttons there) or another's. Only a recording of the delivery can tell.
   */
  | "ambiguous";

/**
 * Throws input_grabbed when another client than those in `allowed` may hold a passive grab
 * (core or XI2) that a press of `button` with the modifier `state` on the innermost of `windows`
 * (root first) would activate, unless every such window is one of `managed` (the WM's frame and
 * the client's top-level, where the WM's own bindings sit): then "ambiguous". Under our server
 * grab, on the Xlib connection (so the tree and the grabs cannot change before the press).
 */
export function probePassiveButtonGrabs(
  x: XConnection,
  windows: readonly number[],
  button: number,
  state: number,
  parties: { allowed: ReadonlySet<number>; managed: ReadonlySet<number> },
): PassiveVerdict {
  const mods = state & MODIFIER_BITS;
  // Both kinds always probed: they do not overlap each other, and one holder may hold either.
  const taken = [...coreConflicts(x, windows, button, mods), ...xiConflicts(x, windows, button, mods)];
  if (taken.length === 0 || onlyHolders(x, parties.allowed)) return "clear";
  if (taken.every((w) => parties.managed.has(w))) return "ambiguous";
  throw uiError("input_grabbed", "Another client holds a passive grab of our press.");
}
