import { uiError } from "../../shared/errors.js";
import { passiveGrabCount } from "./grabHolders.js";
import type { XConnection } from "./xconn.js";

/**
 * Core passive-grab probes on Xlib's own connection, for when libX11-xcb is missing (no xcb view
 * of that connection, so no checked request whose BadAccess we could read: Xlib hands every error
 * to the process-wide no-op handler). The probes must still run under our server grab, on the
 * connection that holds it (a request on another connection would wait for the grab's end), or a
 * client could grab between the probe and the press. So the X server is asked how many passive
 * grabs our Xlib client holds (X-Resource "PASSIVE GRAB" resources, grabHolders.ts) before and
 * after our probe grabs: a grab the server refused (BadAccess: another client's overlapping grab)
 * adds none. Only when the batch comes up short is each grab tried alone, to tell which.
 */

/** One core passive grab to try: a key (keycode) or a button, with modifiers, on a window. */
export interface CoreGrab {
  kind: "key" | "button";
  code: number;
  mods: number;
  window: number;
}

const GRAB_MODE_ASYNC = 1;
const BUTTON_EVENTS = (1 << 2) | (1 << 3); // ButtonPress | ButtonRelease

/** An XID of our Xlib client (a 1×1 bitmap made once per connection), to ask X-Resource about it. */
const own = new WeakMap<XConnection, number>();

function ownXid(x: XConnection): number {
  const known = own.get(x);
  if (known !== undefined) return known;
  const id = Number(x.n.XCreatePixmap(x.dpy, x.root, 1, 1, 1));
  if (id === 0) throw uiError("platform_unavailable", "An X pixmap cannot be made.");
  own.set(x, id);
  return id;
}

function ownCount(x: XConnection, xid: number): number {
  const n = passiveGrabCount(x, xid);
  x.checkAlive();
  if (n === null) throw uiError("platform_unavailable", "X-Resource does not answer for our own client.");
  return n;
}

function grab(x: XConnection, g: CoreGrab): void {
  if (g.kind === "key") x.n.XGrabKey(x.dpy, g.code, g.mods, g.window, 0, GRAB_MODE_ASYNC, GRAB_MODE_ASYNC);
  else
    x.n.XGrabButton(
      x.dpy,
      g.code,
      g.mods,
      g.window,
      0,
      BUTTON_EVENTS,
      GRAB_MODE_ASYNC,
      GRAB_MODE_ASYNC,
      0,
      0,
    );
}

function ungrab(x: XConnection, g: CoreGrab): void {
  if (g.kind === "key") x.n.XUngrabKey(x.dpy, g.code, g.mods, g.window);
  else x.n.XUngrabButton(x.dpy, g.code, g.mods, g.window);
}

/**
 * The grabs of `grabs` the X server refused us (all distinct: no two on the same window with the
 * same code and modifiers, which would replace each other), each tried and released at once.
 * A refusal is another client's overlapping grab, or a window gone (the caller proved the windows
 * under the same server grab, so none can go). Two round trips when nothing is refused.
 */
export function refusedCoreGrabs(x: XConnection, grabs: readonly CoreGrab[]): CoreGrab[] {
  if (grabs.length === 0) return [];
  const xid = ownXid(x);
  const before = ownCount(x, xid);
  for (const g of grabs) grab(x, g);
  const after = ownCount(x, xid);
  for (const g of grabs) ungrab(x, g);
  if (after - before === grabs.length) return [];
  const refused: CoreGrab[] = [];
  for (const g of grabs) {
    grab(x, g);
    if (ownCount(x, xid) === before) refused.push(g);
    ungrab(x, g);
  }
  // Every one held alone yet not all together: count it refused as a whole rather than guess.
  return refused.length > 0 ? refused : [...grabs];
}
