import koffi from "koffi";
import type { Ptr } from "../../os/linux/xlib.js";
import { uiError } from "../../shared/errors.js";
import type { XConnection } from "./xconn.js";

/**
 * Which X clients hold passive grabs, from the X server's own resource table: every passive
 * grab (core, XI 1.x or XI2, of a key or a button) is a "PASSIVE GRAB" resource of the client
 * that made it, and X-Resource `QueryClientResources` counts a client's resources by type. A
 * grab conflict (passiveButtonGrabs.ts) tells only that *some* other client holds an
 * overlapping grab on a window, never which; this tells who could.
 */

/** sizeof(XResClient) (resource_base, resource_mask) and sizeof(XResType) (Atom, uint) on LP64. */
const CLIENT_SIZE = 16;
const TYPE_SIZE = 16;

const atoms = new WeakMap<XConnection, number>();

function passiveGrabAtom(x: XConnection): number {
  const known = atoms.get(x);
  if (known !== undefined) return known;
  const atom = Number(x.n.XInternAtom(x.dpy, "PASSIVE GRAB", 0));
  atoms.set(x, atom);
  return atom;
}

/**
 * Whether every client holding a passive grab is one of `allowed` (client resource bases). On the
 * Xlib connection: meant to run under the server grab of the press it clears, so no client can
 * grab in between.
 */
export function onlyHolders(x: XConnection, allowed: ReadonlySet<number>): boolean {
  const xres = x.n.xres;
  if (!xres) throw uiError("platform_unavailable", "libXRes (X-Resource) is not installed.");
  const count = [0];
  const out: Array<Ptr | null> = [null];
  if (xres.XResQueryClients(x.dpy, count, out) === 0)
    throw uiError("platform_unavailable", "The X clients cannot be listed.");
  const bases: number[] = [];
  const list = out[0] ?? null;
  if (list !== null) {
    try {
      for (let i = 0; i < (count[0] ?? 0); i++)
        bases.push(Number(koffi.decode(list, i * CLIENT_SIZE, "unsigned long") as bigint | number) >>> 0);
    } finally {
      x.n.XFree(list);
    }
  }
  for (const base of bases) {
    if (allowed.has(base)) continue;
    // libXRes answers 0 for a client without any resource (measured: a bare xcb connection) and
    // for one gone since the list (BadValue); neither holds a grab. A lost server: checkAlive.
    if ((passiveGrabCount(x, base) ?? 0) > 0) return false;
  }
  x.checkAlive();
  return true;
}

/**
 * How many passive grabs the client that `xid` belongs to holds (its "PASSIVE GRAB" resources),
 * or null when X-Resource does not answer for it (no resource at all, or gone). One round trip on
 * the Xlib connection.
 */
export function passiveGrabCount(x: XConnection, xid: number): number | null {
  const xres = x.n.xres;
  if (!xres) throw uiError("platform_unavailable", "libXRes (X-Resource) is not installed.");
  const atom = passiveGrabAtom(x);
  const n = [0];
  const types: Array<Ptr | null> = [null];
  const ok = xres.XResQueryClientResources(x.dpy, xid, n, types) !== 0;
  const p = types[0] ?? null;
  if (!ok || p === null) return null;
  let count = 0;
  try {
    for (let i = 0; i < (n[0] ?? 0); i++) {
      const type = Number(koffi.decode(p, i * TYPE_SIZE, "unsigned long") as bigint | number);
      if (type === atom) count += koffi.decode(p, i * TYPE_SIZE + 8, "uint32") as number;
    }
  } finally {
    x.n.XFree(p);
  }
  return count;
}
