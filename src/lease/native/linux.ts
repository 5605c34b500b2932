import { libc } from "../../os/linux/libc.js";

/**
 * The libc calls the Linux broker needs and Node does not offer, besides the peer credentials
 * (os/linux/peerCred.ts): an exclusive non-blocking flock and the clock-tick rate. Loaded only
 * by the broker process, never by the MCP server.
 */

const LOCK_EX = 2;
const LOCK_NB = 4;
const SC_CLK_TCK = 2;

const c = libc();

/** flock(fd, LOCK_EX | LOCK_NB): true when this process now holds the lock. */
export function tryLockExclusive(fd: number): boolean {
  return c.flock(fd, LOCK_EX | LOCK_NB) === 0;
}

export function clockTicksPerSecond(): number {
  const n = Number(c.sysconf(SC_CLK_TCK));
  return Number.isInteger(n) && n > 0 ? n : 100;
}
