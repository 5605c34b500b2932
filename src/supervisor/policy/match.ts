import { normalizeExecutablePath } from "../../shared/identity.js";
import type { EffectivePolicy } from "./load.js";
import type { Capability } from "./schema.js";

function fold(s: string): string[] {
  return Array.from(s.normalize("NFC").toLowerCase());
}

/**
 * Case-insensitive glob over the whole text: `*` matches any run (also empty), `?` exactly one
 * character; every other character is literal. No regular expression is built, so nothing in a
 * pattern can inject one, and the greedy-star walk is O(pattern × text) even for hostile titles.
 */
export function globMatch(pattern: string, text: string): boolean {
  const p = fold(pattern);
  const t = fold(text);
  let pi = 0;
  let ti = 0;
  let star = -1; // index in p of the last '*' seen
  let mark = 0; // index in t where that '*' currently stops
  while (ti < t.length) {
    if (pi < p.length && (p[pi] === "?" || (p[pi] !== "*" && p[pi] === t[ti]))) {
      pi++;
      ti++;
    } else if (pi < p.length && p[pi] === "*") {
      star = pi++;
      mark = ti;
    } else if (star >= 0) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.length && p[pi] === "*") pi++;
  return pi === p.length;
}

export interface WindowFacts {
  title: string;
  exe_path: string;
}

/**
 * The window is inside the policy when its title matches one pattern AND its normalized
 * executable path equals one of the policy's (docs/spec.md §4): without an
 * executable list no window is admitted.
 */
export function windowAllowed(policy: EffectivePolicy, w: WindowFacts): boolean {
  if (!policy.title_patterns.some((p) => globMatch(p, w.title))) return false;
  if (w.exe_path === "") return false;
  const exe = normalizeExecutablePath(w.exe_path);
  return policy.process_paths.some((p) => p === exe);
}

/** Unknown names are simply absent from the set, so they are denied. */
export function actionAllowed(policy: EffectivePolicy, cap: Capability): boolean {
  return policy.allowed_actions.has(cap);
}

export function isProtected(policy: EffectivePolicy, cap: Capability): boolean {
  return policy.protected_actions.has(cap);
}

/**
 * action_not_allowed's message: the action named, and where the operator adds it. Capability
 * names are the server's own words, never the target's.
 */
export function actionNotAllowedMessage(source: EffectivePolicy["source"], caps: readonly string[]): string {
  const list = caps.join(", ");
  const where =
    source === "file"
      ? "add it to the policy file's allowed_actions"
      : "add it to DESKTOP_AUTOMATION_ALLOWED_ACTIONS";
  return `The policy does not allow the action ${list}; to allow it, ${where}.`;
}
