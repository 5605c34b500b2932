import { setFlagsFromString } from "node:v8";

/**
 * V8 grows an isolate's young generation while many objects survive its scavenges, up to two
 * 16 MiB semi-spaces, and keeps it. The supervisor thread of a busy server (many sessions,
 * calls in flight across collections) got there within its first minute: 32 MiB resident for
 * objects that live a few milliseconds (docs/benchmarks.md, 38 MiB of a remote server's 286).
 * A size can only be given on the command line, which the server does not own (MCP clients
 * start it as `node dist/cli.js`), but the growth factor is read at each growth decision, so
 * setting it to 1 at start keeps every isolate of the process at its initial 1 MiB semi-spaces.
 * V8 flags are process-wide: the worker threads keep theirs at that size too (their
 * `resourceLimits` only cap it). An operator's own young-generation flag stands.
 */
const OWN_FLAGS = /--(max-semi-space-size|min-semi-space-size|semi-space-growth-factor)\b/;

export const YOUNG_GENERATION_FLAG = "--semi-space-growth-factor=1";

/** True when the operator chose the young generation's size on the command line or in NODE_OPTIONS. */
export function youngGenerationChosen(
  execArgv: readonly string[] = process.execArgv,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  return execArgv.some((a) => OWN_FLAGS.test(a)) || OWN_FLAGS.test(env.NODE_OPTIONS ?? "");
}

/**
 * V8 lets an old generation grow to its initial limit before the first full collection and
 * then by a factor it picks from the collector's speed, up to 4× its live size; with seven
 * isolates in one process (supervisor, capture, a uia worker per instance) that slack was most
 * of the V8 pages: 145 of a 32-identity remote server's 299 MB at its peak, 160 of a stdio
 * server's 321 MiB in a 10-minute burst soak (docs/benchmarks.md). `--heap-growing-percent`
 * replaces that heuristic with one fixed factor (1 + p/100) for every old-generation limit V8
 * computes after a full collection; like the growth factor it is read as the heaps decide, so
 * setting it at start reaches the supervisor's isolate and every worker thread's (worker
 * processes get it on their command line, hosting/workerHost.ts). Unlike the memory mode below
 * it leaves the optimizing compiler alone, and it is what a stdio server sets: the remote
 * server's memory mode bounds the old generations further (see boundHeap). An operator's own
 * `--heap-growing-percent` or `--[no-]optimize-for-size` stands.
 */
const OWN_GROWING_FLAGS = /--heap[-_]growing[-_]percent\b/;

export const OLD_GENERATION_FLAG = "--heap-growing-percent=10";

/** True when the operator chose the old generations' growth on the command line or in NODE_OPTIONS. */
export function oldGenerationChosen(
  execArgv: readonly string[] = process.execArgv,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  const own =
    execArgv.some((a) => OWN_GROWING_FLAGS.test(a)) || OWN_GROWING_FLAGS.test(env.NODE_OPTIONS ?? "");
  return own || memoryModeChosen(execArgv, env);
}

/**
 * In memory-optimizing mode V8 also collects before it grows (growth at most 2×) and flushes
 * bytecode sooner: 200 MB idle instead of 257, 257 at the peak instead of 299, in the same run
 * (and it optimizes less: see boundHeap). An operator's own choice (`--[no-]optimize-for-size`)
 * stands, and so does an operator's own young-generation size (the mode would shrink it too);
 * worker processes get the flag on their command line (hosting/workerHost.ts).
 */
const OWN_SIZE_FLAGS = /--(no-)?optimize[-_]for[-_]size\b/;

export const MEMORY_FLAG = "--optimize-for-size";

/** True when the operator chose V8's memory mode on the command line or in NODE_OPTIONS. */
export function memoryModeChosen(
  execArgv: readonly string[] = process.execArgv,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  return execArgv.some((a) => OWN_SIZE_FLAGS.test(a)) || OWN_SIZE_FLAGS.test(env.NODE_OPTIONS ?? "");
}

let bounded = false;
let applied: string[] = [];

/**
 * Keeps the process's young generations at their initial size and its old generations near
 * their live size (once; see above): with `memoryMode` by V8's memory mode, otherwise (or where
 * an operator's young-generation size keeps the mode off) by the fixed growing factor. Each
 * flag yields to the operator's own. Returns the flags it set.
 *
 * The memory mode is for the remote server, which hosts many identities' sessions and is bound
 * by memory. It costs speed: V8 optimizes less, and an `inspect_tree` over stdio of a real GTK
 * app took 1.4× as long in the same quiet run (docs/benchmarks.md), so a local one-agent server
 * over stdio runs without it, bounded by the growing factor alone. That factor does not replace
 * the mode for the remote server: with 32 identities × 4 windows it peaked at 300–311 MiB (V8
 * pages 143–154) where the mode peaked at 253–271 (107–114), past the 300 MB goal, and its
 * calls/s and tails were within the shared machine's noise of the mode's. Both together gave
 * the mode's memory for 1.15–1.6× the CPU per call (docs/benchmarks.md, 2026-12-03), so the
 * mode goes alone.
 */
export function boundHeap(
  options: { memoryMode: boolean },
  execArgv: readonly string[] = process.execArgv,
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  if (bounded) return [];
  bounded = true;
  const set: string[] = [];
  const youngChosen = youngGenerationChosen(execArgv, env);
  if (!youngChosen) set.push(YOUNG_GENERATION_FLAG);
  // The memory mode keeps the young generation small too: an operator who sized it keeps theirs.
  if (options.memoryMode && !youngChosen && !memoryModeChosen(execArgv, env)) set.push(MEMORY_FLAG);
  else if (!oldGenerationChosen(execArgv, env)) set.push(OLD_GENERATION_FLAG);
  for (const flag of set) setFlagsFromString(flag);
  applied = set;
  return set;
}

/**
 * The flags boundHeap set that a worker process needs on its own command line (its young
 * generation is sized there instead).
 */
export function workerProcessHeapFlags(): string[] {
  return applied.filter((f) => f !== YOUNG_GENERATION_FLAG);
}
