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

let bounded = false;

/** Keeps the process's young generations at their initial size (once; see above). */
export function boundYoungGeneration(
  execArgv: readonly string[] = process.execArgv,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  if (bounded || youngGenerationChosen(execArgv, env)) return false;
  bounded = true;
  setFlagsFromString(YOUNG_GENERATION_FLAG);
  return true;
}
