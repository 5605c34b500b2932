import { libc } from "../../os/linux/libc.js";

/**
 * The few libc calls the Linux broker needs and Node does not offer: the peer credentials of
 * a connected Unix socket (SO_PEERCRED), an exclusive non-blocking flock, and the clock-tick
 * rate. Loaded only by the broker process, never by the MCP server.
 */

const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
const LOCK_EX = 2;
const LOCK_NB = 4;
const SC_CLK_TCK = 2;

const c = libc();

export interface PeerCred {
  pid: number;
  uid: number;
  gid: number;
}

/** The credentials the kernel recorded when the peer connected, or null when unreadable. */
export function peerCred(fd: number): PeerCred | null {
  if (!Number.isInteger(fd) || fd < 0) return null;
  const out: PeerCred = { pid: 0, uid: 0, gid: 0 };
  const len = [c.ucredSize];
  const rc = c.getsockoptUcred(fd, SOL_SOCKET, SO_PEERCRED, out, len);
  if (rc !== 0 || len[0] !== c.ucredSize) return null;
  return { pid: Number(out.pid), uid: Number(out.uid), gid: Number(out.gid) };
}

/** flock(fd, LOCK_EX | LOCK_NB): true when this process now holds the lock. */
export function tryLockExclusive(fd: number): boolean {
  return c.flock(fd, LOCK_EX | LOCK_NB) === 0;
}

export function clockTicksPerSecond(): number {
  const n = Number(c.sysconf(SC_CLK_TCK));
  return Number.isInteger(n) && n > 0 ? n : 100;
}
