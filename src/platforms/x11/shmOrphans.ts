import { readFileSync } from "node:fs";
import type { X11Native } from "../../os/linux/xlib.js";
import type { SharedSegment } from "../../shared/platform.js";

/**
 * The MIT-SHM segments a terminated capture worker thread left attached. `worker.terminate()`
 * runs none of the thread's clean-up, and a thread's shmat() mapping belongs to the process, so
 * each teardown left one frame-sized segment mapped (1.9 MB for 800×600) until the server
 * exited. The host remembers what each thread reported (Platform.onSharedSegments) and hands
 * it to the next worker of the kind, which detaches it here.
 *
 * Only what is provably that segment is detached: the mapping that starts at the reported
 * address must be a System V segment (/SYSV… in /proc/self/maps) whose inode is the reported
 * shmid. Anything else at that address now (the segment went, the range was reused) is left
 * alone.
 */
export function stillMapped(maps: string, orphans: readonly SharedSegment[]): SharedSegment[] {
  const byStart = new Map<string, { inode: string; path: string }>();
  for (const line of maps.split("\n")) {
    // start-end perms offset dev inode path
    const m = /^([0-9a-f]+)-[0-9a-f]+ \S+ \S+ \S+ (\d+)\s+(.*)$/.exec(line);
    if (m?.[1] && m[2] && m[3] !== undefined)
      byStart.set(BigInt(`0x${m[1]}`).toString(), { inode: m[2], path: m[3] });
  }
  return orphans.filter((o) => {
    const at = byStart.get(o.addr);
    return at?.path.startsWith("/SYSV") === true && at.inode === String(o.shmid);
  });
}

/** Detaches the orphans still mapped where they were; returns how many were detached. */
export function detachOrphanSegments(
  n: Pick<X11Native, "shmdt">,
  orphans: readonly SharedSegment[],
  readMaps: () => string = () => readFileSync("/proc/self/maps", "utf8"),
): number {
  if (orphans.length === 0) return 0;
  let detached = 0;
  for (const o of stillMapped(readMaps(), orphans)) if (n.shmdt(BigInt(o.addr)) === 0) detached += 1;
  return detached;
}
