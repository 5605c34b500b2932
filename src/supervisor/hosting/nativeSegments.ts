import type { SharedSegment } from "../../shared/platform.js";
import type { WorkerKind } from "../../shared/protocol.js";

/**
 * Shared-memory segments that terminated worker threads left attached in this process, by worker
 * kind, until the next worker of the kind takes them to detach (src/platforms/x11/shmOrphans.ts:
 * the supervisor has no native code to do it). Process-wide, as the mappings are: a worker
 * host that closes leaves its worker's segments to the next host of the kind.
 */
const orphans = new Map<WorkerKind, SharedSegment[]>();

/** At most this many are kept per kind (a worker reports one segment; the oldest go first). */
const MAX_ORPHANS = 16;

/** A worker thread of `kind` ended with `segments` still attached. */
export function leaveOrphanSegments(kind: WorkerKind, segments: readonly SharedSegment[]): void {
  if (segments.length === 0) return;
  const list = [...(orphans.get(kind) ?? []), ...segments];
  orphans.set(kind, list.slice(-MAX_ORPHANS));
}

/** What the next worker thread of `kind` is to detach; handed over once. */
export function takeOrphanSegments(kind: WorkerKind): SharedSegment[] {
  const list = orphans.get(kind) ?? [];
  orphans.delete(kind);
  return list;
}
