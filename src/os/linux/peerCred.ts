import type { Socket } from "node:net";
import { libc } from "./libc.js";

/**
 * The peer credentials of a connected Unix socket (SO_PEERCRED): what the kernel recorded of the
 * process on the other end when the connection was made (for a connecting client, the listener's
 * credentials at its listen()). Neither end can write them afterwards, so a check on them holds
 * for the whole life of the connection, unlike a look at the socket's path before connecting.
 */

const SOL_SOCKET = 1;
const SO_PEERCRED = 17;

export interface PeerCred {
  pid: number;
  uid: number;
  gid: number;
}

/** The credentials the kernel recorded for the peer of `fd`, or null when unreadable. */
export function peerCred(fd: number): PeerCred | null {
  if (!Number.isInteger(fd) || fd < 0) return null;
  const c = libc();
  const out: PeerCred = { pid: 0, uid: 0, gid: 0 };
  const len = [c.ucredSize];
  const rc = c.getsockoptUcred(fd, SOL_SOCKET, SO_PEERCRED, out, len);
  if (rc !== 0 || len[0] !== c.ucredSize) return null;
  return { pid: Number(out.pid), uid: Number(out.uid), gid: Number(out.gid) };
}

/** The file descriptor under a connected node:net socket (its libuv handle's), or -1. */
export function socketFd(socket: Socket): number {
  const handle: unknown = (socket as unknown as { _handle?: unknown })._handle;
  if (handle && typeof handle === "object" && "fd" in handle && typeof handle.fd === "number")
    return handle.fd;
  return -1;
}
