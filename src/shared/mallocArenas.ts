/**
 * glibc's malloc gives each thread that contends for the heap its own arena, up to 8 per core,
 * and keeps what an arena once held. Worker threads (capture with libvips, input, a uia worker
 * per grant) each get one, so a thread-isolated server carried 30–40 MiB of mostly idle arenas
 * in the soak (docs/benchmarks.md). Two arenas serve our few busy threads as well.
 *
 * MALLOC_ARENA_MAX is read once when a process starts, so worker processes get the variable,
 * and in a thread-isolated server the first worker thread sets the limit with mallopt() as it
 * starts (src/os/linux/malloc.ts), before the other workers' threads exist: the supervisor
 * thread loads no native code. An operator's own MALLOC_ARENA_MAX is left as it is.
 */
export const MALLOC_ARENA_MAX = 2;

/**
 * Blocks of this size and larger are mapped on their own and unmapped when freed. glibc's
 * default threshold starts at 128 KiB but rises to the largest block freed so far (up to
 * 32 MiB), after which every frame, PNG, deflate window and compiler zone of a burst is carved
 * from the arenas, and an arena keeps what it once held: a burst of 64 calls in flight left two
 * 64 MiB arena heaps fully resident for good (400+ MiB where the server idles at 250). A fixed
 * threshold keeps those blocks out of the arenas (flat at ~245 MiB in the same burst soak,
 * docs/benchmarks.md). An operator's own MALLOC_MMAP_THRESHOLD_ is left as it is.
 */
export const MALLOC_MMAP_THRESHOLD = 128 * 1024;

/** True when the operator set MALLOC_ARENA_MAX: their value stands. */
export function mallocArenasLimited(env: NodeJS.ProcessEnv): boolean {
  return env.MALLOC_ARENA_MAX !== undefined && env.MALLOC_ARENA_MAX !== "";
}

/** True when the operator set MALLOC_MMAP_THRESHOLD_: their value stands. */
export function mallocMmapThresholdSet(env: NodeJS.ProcessEnv): boolean {
  return env.MALLOC_MMAP_THRESHOLD_ !== undefined && env.MALLOC_MMAP_THRESHOLD_ !== "";
}

/** The environment addition for a child process: the cap and the threshold, unless the operator set them. */
export function mallocArenaEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return {
    ...(mallocArenasLimited(env) ? {} : { MALLOC_ARENA_MAX: String(MALLOC_ARENA_MAX) }),
    ...(mallocMmapThresholdSet(env) ? {} : { MALLOC_MMAP_THRESHOLD_: String(MALLOC_MMAP_THRESHOLD) }),
  };
}
