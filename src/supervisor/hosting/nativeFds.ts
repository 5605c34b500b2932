import { closeSync, fstatSync } from "node:fs";

/** A descriptor a worker thread reported, with the file it named when reported. */
export interface NativeFd {
  fd: number;
  dev: bigint;
  ino: bigint;
}

/**
 * Records what each reported descriptor names now (device and inode), so that closing it later
 * can tell it still is that socket: one that was closed meanwhile and whose number went to
 * another file of this process is left alone. Descriptors that are not open are dropped.
 */
export function adoptNativeFds(fds: readonly number[]): NativeFd[] {
  const out: NativeFd[] = [];
  for (const fd of fds) {
    try {
      const s = fstatSync(fd, { bigint: true });
      out.push({ fd, dev: s.dev, ino: s.ino });
    } catch {
      // Not open (any more): nothing to close later.
    }
  }
  return out;
}

/**
 * After a worker thread ended: closes the descriptors it opened in native code and left open
 * (Node closes only what it opened through Node), each only while it still names the file it
 * named when adopted. For an X connection the server then drops that client, and any grab it
 * held ends with it.
 */
export function closeNativeFds(fds: readonly NativeFd[]): number {
  let closed = 0;
  for (const { fd, dev, ino } of fds) {
    try {
      const s = fstatSync(fd, { bigint: true });
      if (s.dev !== dev || s.ino !== ino) continue;
      closeSync(fd);
      closed += 1;
    } catch {
      // Closed already.
    }
  }
  return closed;
}
