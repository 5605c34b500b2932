/**
 * The Node options a broker started by the manager inherits. Module hooks and source maps carry
 * over (as with child_process.fork: a loader the manager needed, the broker needs too); nothing
 * else does. Above all no inspector: the broker holds the lease, and an inspector port is
 * reachable by every local user.
 */

/** Kept, with a value (`--import x` or `--import=x`). */
const KEPT_WITH_VALUE = new Set([
  "--import",
  "--require",
  "-r",
  "--loader",
  "--experimental-loader",
  "--conditions",
  "-C",
]);
/** Kept, without a value. */
const KEPT_FLAGS = new Set(["--enable-source-maps"]);

/**
 * Filters Node options (execArgv, or NODE_OPTIONS split on whitespace). A token that does not
 * start with "-" is the value of the option before it and follows that option's fate.
 */
export function inheritedNodeOptions(args: readonly string[]): string[] {
  const out: string[] = [];
  let keepNextValue = false;
  for (const a of args) {
    if (!a.startsWith("-")) {
      if (keepNextValue) out.push(a);
      keepNextValue = false;
      continue;
    }
    const eq = a.indexOf("=");
    const name = eq > 0 ? a.slice(0, eq) : a;
    keepNextValue = false;
    if (KEPT_WITH_VALUE.has(name)) {
      out.push(a);
      keepNextValue = eq < 0;
    } else if (KEPT_FLAGS.has(name) && eq < 0) {
      out.push(a);
    }
  }
  return out;
}

/** The broker's environment: NODE_OPTIONS filtered the same way (dropped when nothing is left). */
export function brokerEnv(
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string | undefined> {
  const out = { ...env };
  const opts = env.NODE_OPTIONS;
  if (opts !== undefined) {
    const kept = inheritedNodeOptions(opts.split(/\s+/).filter(Boolean));
    if (kept.length > 0) out.NODE_OPTIONS = kept.join(" ");
    else delete out.NODE_OPTIONS;
  }
  return out;
}
