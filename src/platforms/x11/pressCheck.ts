import { uiError } from "../../shared/errors.js";
import type { LiveProof } from "../../shared/platform.js";
import { type PointerDeliveries, pointerGrabHeldBy } from "./grabOwner.js";
import { type PassiveVerdict, probePassiveButtonGrabs } from "./passiveButtonGrabs.js";
import type { XConnection } from "./xconn.js";
import { requireXTestRoute } from "./xtestRoute.js";

/**
 * The last look before a press of a mouse button or a scroll notch, against what the check
 * before it proved (`proof`), on the Xlib connection that sends it and under our server grab
 * (so nothing can change before the press): our XTest events still reach the virtual core
 * devices (xtestRoute.ts), the pointer is at a proven point, the windows a press there goes
 * through, from the top-level down to the deepest, are exactly the proven ones (no window of
 * another client was mapped, raised or embedded in between), no other client holds the pointer,
 * and no other client than the window manager and the target's holds a passive grab the press
 * would activate on any window from the root down to the deepest (passiveButtonGrabs.ts), or
 * such a grab lies only on the WM's frame or the client's top-level, where the WM's own bindings
 * sit and the server does not say whose it is ("ambiguous": the caller records the delivery).
 */

const GRAB_MODE_ASYNC = 1;
const GRAB_SUCCESS = 0;

export interface PressParties {
  /** The X client that owns the deepest window under the point: whom the press is meant to reach. */
  owner: number;
  /** The top-level's client (the WM, through its frame; the owner itself without a WM). */
  wm: number;
}

export interface PressCheck extends PressParties {
  verdict: PassiveVerdict;
}

function partiesOf(x: XConnection, path: readonly number[]): PressParties {
  return { owner: x.clientOf(path[path.length - 1] ?? 0), wm: x.clientOf(path[0] ?? 0) };
}

/** The passive-grab probe of one point's path (root first), with its parties and managed windows. */
function probe(x: XConnection, path: readonly number[], button: number, state: number) {
  const { owner, wm } = partiesOf(x, path);
  // A WM's frame (made by another client than the target's) and the client's top-level in it.
  const managed = new Set(wm !== owner ? path.slice(0, 2) : []);
  return probePassiveButtonGrabs(x, [x.root, ...path], button, state, {
    allowed: new Set([owner, wm]),
    managed,
  });
}

/**
 * Throws occluded / input_grabbed unless the press of `button` may happen now (see above).
 * `deliveries`: a recording started before the server grab when the proof names the target's own
 * popup grab, which must name that owner again; null otherwise.
 */
export async function checkPressUnderGrab(
  x: XConnection,
  proof: LiveProof,
  deliveries: PointerDeliveries | null,
  button: number,
): Promise<PressCheck> {
  const n = x.n;
  const dpy = x.dpy;
  const child: Array<bigint | number> = [0];
  const rx = [0];
  const ry = [0];
  const mask = [0];
  n.XQueryPointer(dpy, x.root, [0], child, rx, ry, [0], [0], mask);
  const [px = 0] = rx;
  const [py = 0] = ry;
  // First: a grabbed XTEST slave also leaves the pointer where our motion did not take it.
  requireXTestRoute(x);
  const at = proof.points.find((v) => v.x === px && v.y === py);
  const changed = () => uiError("occluded", "What lies under the pointer changed since the check.");
  if (!at || at.path.length === 0 || String(child[0] ?? 0) !== at.path[0]) throw changed();
  // Each window's child at the point is the next one proven, and the deepest has none.
  for (let i = 0; i < at.path.length; i++) {
    const inner: Array<bigint | number> = [0];
    n.XTranslateCoordinates(dpy, x.root, BigInt(at.path[i] ?? "0"), px, py, [0], [0], inner);
    if (String(inner[0] ?? 0) !== (at.path[i + 1] ?? "0")) throw changed();
  }
  const path = at.path.map(Number);
  // The WM's button bindings grab a press first (through its frame) and replay it to the window.
  const parties = partiesOf(x, path);
  if (n.XGrabPointer(dpy, x.root, 0, 0, GRAB_MODE_ASYNC, GRAB_MODE_ASYNC, 0, 0, 0) === GRAB_SUCCESS) {
    n.XUngrabPointer(dpy, 0);
  } else if (deliveries === null || !(await pointerGrabHeldBy(x, at.grabOwner ?? 0, deliveries, true))) {
    throw uiError("input_grabbed");
  }
  const verdict = probe(x, path, button, mask[0] ?? 0);
  return { ...parties, verdict };
}
