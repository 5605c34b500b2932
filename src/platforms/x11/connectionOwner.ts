import { readdirSync, readlinkSync } from "node:fs";
import { libc } from "../../os/linux/libc.js";

/**
 * Proof that the process the X server names for a window (X-Resource: the PID its local
 * connection had when it connected) still is the one that holds that connection.
 *
 * The fork-then-exec trick: a program creates its window, forks (the child keeps the X
 * connection and reads the window's keys), and the parent execs an allowed binary. The X server
 * still names the parent, which now runs the allowed binary. So a window counts only when:
 *
 * 1. the named process holds at least one client end of a connection to this display's X
 *    socket: the kernel's unix-socket table (NETLINK_SOCK_DIAG, UNIX_DIAG_PEER and NAME) gives
 *    each server-side socket of `/tmp/.X11-unix/X<n>` (path or abstract) and its peer, and
 *    /proc/PID/fd lists the sockets the process holds (`socket:[inode]`);
 * 2. no other process holds any of those client ends (a scan of /proc/<pid>/fd of every process
 *    this user may read).
 *
 * Anything that cannot be proven (no sock_diag, a TCP display) is no proof: the window is
 * refused. See docs/x11.md ("Who holds the connection").
 */

const AF_NETLINK = 16;
const AF_UNIX = 1;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;
const NETLINK_SOCK_DIAG = 4;
const SOCK_DIAG_BY_FAMILY = 20;
const NLM_F_REQUEST = 0x1;
const NLM_F_DUMP = 0x300;
const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;
const UDIAG_SHOW_NAME = 0x1;
const UDIAG_SHOW_PEER = 0x4;
const UNIX_DIAG_NAME = 0;
const UNIX_DIAG_PEER = 2;
const NLMSG_HDR = 16;
const UNIX_DIAG_MSG = 16;
const RECV_BUFFER = 65536;

interface UnixSocket {
  peer: number;
  name: string | null;
}

/** Every unix socket of this network namespace: inode → peer inode and bound name. */
export function unixSockets(): Map<number, UnixSocket> | null {
  const c = libc();
  const fd = c.socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return null;
  try {
    const req = Buffer.alloc(NLMSG_HDR + 24);
    req.writeUInt32LE(req.length, 0);
    req.writeUInt16LE(SOCK_DIAG_BY_FAMILY, 4);
    req.writeUInt16LE(NLM_F_REQUEST | NLM_F_DUMP, 6);
    req.writeUInt8(AF_UNIX, NLMSG_HDR);
    req.writeUInt32LE(0xffffffff, NLMSG_HDR + 4); // every state
    req.writeUInt32LE(UDIAG_SHOW_NAME | UDIAG_SHOW_PEER, NLMSG_HDR + 12);
    if (c.send(fd, req, req.length, 0) !== req.length) return null;
    const out = new Map<number, UnixSocket>();
    const buf = Buffer.alloc(RECV_BUFFER);
    for (;;) {
      const n = Number(c.recv(fd, buf, buf.length, 0));
      if (n <= 0) return null;
      for (let off = 0; off + NLMSG_HDR <= n; ) {
        const len = buf.readUInt32LE(off);
        const type = buf.readUInt16LE(off + 4);
        if (len < NLMSG_HDR || off + len > n) return null;
        if (type === NLMSG_DONE) return out;
        if (type === NLMSG_ERROR) return null;
        const msg = off + NLMSG_HDR;
        const ino = buf.readUInt32LE(msg + 4);
        const sock: UnixSocket = { peer: 0, name: null };
        for (let a = msg + UNIX_DIAG_MSG; a + 4 <= off + len; ) {
          const alen = buf.readUInt16LE(a);
          const atype = buf.readUInt16LE(a + 2);
          if (alen < 4) break;
          if (atype === UNIX_DIAG_PEER) sock.peer = buf.readUInt32LE(a + 4);
          if (atype === UNIX_DIAG_NAME) sock.name = buf.toString("latin1", a + 4, a + alen);
          a += (alen + 3) & ~3;
        }
        out.set(ino, sock);
        off += (len + 3) & ~3;
      }
    }
  } finally {
    c.close(fd);
  }
}

/** The X socket names of a local display (":N", ":N.S", "unix:N"), or null (a TCP display). */
export function xSocketNames(display: string): string[] | null {
  const m = /^(?:unix)?:(\d+)(?:\.\d+)?$/.exec(display);
  if (!m) return null;
  const path = `/tmp/.X11-unix/X${m[1]}`;
  return [path, `\u0000${path}`];
}

/** Socket inodes a process holds open (`socket:[N]` links of /proc/PID/fd); null if unreadable. */
function socketInodes(pid: number | string): number[] | null {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return null;
  }
  const out: number[] = [];
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) out.push(Number(m[1]));
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/**
 * Of `pids`, those proven to hold their windows' X connections: each holds client ends of
 * connections to `display`, no other process holds any of them, and their number equals the
 * number of clients the X server attributes to that PID (`serverCounts`, from X-Resource). The
 * count closes the exec variant in which the parent's copy was closed (CLOEXEC) and the exec'd
 * binary opened a connection of its own. The server is asked before the socket dump and again
 * after the /proc scan, and a PID whose count changed in between is not proven: a count taken
 * before the exec'd binary connected and a scan after it would otherwise agree (one each).
 * One socket-table dump and one /proc scan for all.
 */
export function provenOwners(
  pids: readonly number[],
  display: string,
  serverCounts: () => ReadonlyMap<number, number>,
): Set<number> {
  const proven = new Set<number>();
  const before = pids.length > 0 ? serverCounts() : new Map<number, number>();
  const names = xSocketNames(display);
  const socks = names && pids.length > 0 ? unixSockets() : null;
  if (!names || !socks) return proven;
  const clientEnds = new Set<number>();
  for (const s of socks.values())
    if (s.peer !== 0 && s.name !== null && names.includes(s.name)) clientEnds.add(s.peer);
  // Client end → every process holding it (threads share their process's fd table).
  const holders = new Map<number, Set<number>>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    for (const ino of socketInodes(entry) ?? []) {
      if (!clientEnds.has(ino)) continue;
      const set = holders.get(ino) ?? new Set<number>();
      set.add(Number(entry));
      holders.set(ino, set);
    }
  }
  const held = new Map<number, number[]>();
  for (const [ino, who] of holders) for (const pid of who) held.set(pid, [...(held.get(pid) ?? []), ino]);
  const after = serverCounts();
  for (const pid of pids) {
    const mine = held.get(pid) ?? [];
    const alone = mine.every((ino) => holders.get(ino)?.size === 1);
    const count = after.get(pid);
    if (mine.length > 0 && alone && mine.length === count && before.get(pid) === count) proven.add(pid);
  }
  return proven;
}
