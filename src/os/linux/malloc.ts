import {
  MALLOC_ARENA_MAX,
  MALLOC_MMAP_THRESHOLD,
  mallocArenasLimited,
  mallocMmapThresholdSet,
} from "../../shared/mallocArenas.js";
import { libc } from "./libc.js";

/**
 * glibc's malloc tuning, done from a worker (thread or process), never from the supervisor
 * thread, which loads no native code: the arena cap at a worker's start and the trim the
 * supervisor asks a live thread worker for when another one ended (src/shared/mallocArenas.ts
 * says why). Not glibc (musl, Windows): nothing to do.
 */
const M_ARENA_MAX = -8;
const M_MMAP_THRESHOLD = -3;

let limited = false;

function glibc(): ReturnType<typeof libc> | null {
  if (process.platform !== "linux") return null;
  try {
    return libc();
  } catch {
    // Another C library: it has its own allocator policy.
    return null;
  }
}

/**
 * Caps this process's malloc arenas and fixes its mmap threshold (once; a no-op without glibc,
 * and each left alone when the operator set its variable).
 */
export function limitMallocArenas(env: NodeJS.ProcessEnv = process.env): void {
  if (limited) return;
  limited = true;
  const c = glibc();
  if (!mallocArenasLimited(env)) c?.mallopt(M_ARENA_MAX, MALLOC_ARENA_MAX);
  if (!mallocMmapThresholdSet(env)) c?.mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD);
}

/**
 * Hands memory that malloc holds free back to the system, for the whole process (every arena).
 * Asked for when a worker thread ended: its isolate and buffers were freed into the arenas, and
 * would otherwise stay resident.
 */
export function trimMalloc(): void {
  glibc()?.mallocTrim(0);
}
