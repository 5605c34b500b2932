import koffi from "koffi";

/**
 * glibc's malloc gives each thread that contends for the heap its own arena, up to 8 per core,
 * and keeps what an arena once held. Worker threads (capture with libvips, input, a uia worker
 * per grant) each get one, so a thread-isolated server carried 30–40 MiB of mostly idle arenas
 * in the soak (docs/benchmarks.md). Two arenas serve our few busy threads as well.
 *
 * MALLOC_ARENA_MAX is read once when a process starts, so the server sets the limit with
 * mallopt() before its first worker thread exists, and child processes get the variable. An
 * operator's own MALLOC_ARENA_MAX is left as it is. Not glibc (musl, Windows): nothing to do.
 */
export const MALLOC_ARENA_MAX = 2;
const M_ARENA_MAX = -8;

interface Glibc {
  mallopt(param: number, value: number): number;
  mallocTrim(pad: number): number;
}

let glibc: Glibc | null | undefined;

function loadGlibc(): Glibc | null {
  if (glibc !== undefined) return glibc;
  glibc = null;
  if (process.platform !== "linux") return glibc;
  try {
    const libc = koffi.load("libc.so.6");
    const mallopt = libc.func("int mallopt(int param, int value)");
    const mallocTrim = libc.func("int malloc_trim(size_t pad)");
    glibc = {
      mallopt: (p, v) => Number(mallopt(p, v)),
      mallocTrim: (pad) => Number(mallocTrim(pad)),
    };
  } catch {
    // Another C library: it has its own allocator policy.
  }
  return glibc;
}

let limited = false;

/** Caps this process's malloc arenas (once; a no-op without glibc or with the operator's own value). */
export function limitMallocArenas(env: NodeJS.ProcessEnv = process.env): void {
  if (limited) return;
  limited = true;
  if (env.MALLOC_ARENA_MAX !== undefined && env.MALLOC_ARENA_MAX !== "") return;
  loadGlibc()?.mallopt(M_ARENA_MAX, MALLOC_ARENA_MAX);
}

/** The environment addition for a child process: the same cap, unless the operator set one. */
export function mallocArenaEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  if (env.MALLOC_ARENA_MAX !== undefined && env.MALLOC_ARENA_MAX !== "") return {};
  return { MALLOC_ARENA_MAX: String(MALLOC_ARENA_MAX) };
}

/**
 * Hands memory that malloc holds free back to the system. Called when a worker thread ended:
 * its isolate and buffers were freed into the arenas, and would otherwise stay resident.
 */
export function trimMalloc(): void {
  loadGlibc()?.mallocTrim(0);
}
