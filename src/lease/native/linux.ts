import koffi from "koffi";

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

const UCred = koffi.struct("uiinspect_ucred", { pid: "int32", uid: "uint32", gid: "uint32" });

const libc = koffi.load("libc.so.6");
const getsockopt = libc.func(
  "int getsockopt(int fd, int level, int name, _Out_ uiinspect_ucred *val, _Inout_ uint32_t *len)",
);
const flock = libc.func("int flock(int fd, int op)");
const sysconf = libc.func("long sysconf(int name)");

export interface PeerCred {
  pid: number;
  uid: number;
  gid: number;
}

/** The credentials the kernel recorded when the peer connected, or null when unreadable. */
export function peerCred(fd: number): PeerCred | null {
  if (!Number.isInteger(fd) || fd < 0) return null;
  const out: PeerCred = { pid: 0, uid: 0, gid: 0 };
  const len = [koffi.sizeof(UCred)];
  const rc: number = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, out, len);
  if (rc !== 0 || len[0] !== koffi.sizeof(UCred)) return null;
  return { pid: Number(out.pid), uid: Number(out.uid), gid: Number(out.gid) };
}

/** flock(fd, LOCK_EX | LOCK_NB): true when this process now holds the lock. */
export function tryLockExclusive(fd: number): boolean {
  return flock(fd, LOCK_EX | LOCK_NB) === 0;
}

export function clockTicksPerSecond(): number {
  const n = Number(sysconf(SC_CLK_TCK));
  return Number.isInteger(n) && n > 0 ? n : 100;
}
