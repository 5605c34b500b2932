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

/** True when the operator set MALLOC_ARENA_MAX: their value stands. */
export function mallocArenasLimited(env: NodeJS.ProcessEnv): boolean {
  return env.MALLOC_ARENA_MAX !== undefined && env.MALLOC_ARENA_MAX !== "";
}

/** The environment addition for a child process: the cap, unless the operator set one. */
export function mallocArenaEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return mallocArenasLimited(env) ? {} : { MALLOC_ARENA_MAX: String(MALLOC_ARENA_MAX) };
}
