import { interpreterWarning } from "./interpreters.js";
import { effectiveFromFile, policyStatusAt } from "./load.js";
import { readPolicyFile } from "./parse.js";
import { CAPABILITIES } from "./schema.js";

/**
 * `uiinspect-mcp validate-policy FILE`: exit 0 when ok, 1 otherwise. Every failure line names the
 * field it is about. A policy whose expires_at has passed is reported as not usable (the server
 * would refuse it). The lines never contain title patterns or other free text from the file.
 */
export function validatePolicyFile(
  path: string,
  now: () => Date = () => new Date(),
): { ok: boolean; lines: string[] } {
  const read = readPolicyFile(path);
  if (!read.ok) {
    const what = read.code === "policy_insecure" ? "insecure policy file" : "invalid policy";
    return { ok: false, lines: [`${what} (${read.code}):`, ...read.reasons.map((r) => `  ${r}`)] };
  }
  const policy = effectiveFromFile(read.policy);
  const state = policyStatusAt({ status: "ok", policy }, now);
  if (state.status === "error") {
    return { ok: false, lines: [`unusable policy (${state.code}):`, ...state.reasons.map((r) => `  ${r}`)] };
  }
  const inOrder = (set: ReadonlySet<string>) => CAPABILITIES.filter((c) => set.has(c)).join(", ") || "(none)";
  const lines = [
    "valid policy",
    `  policy_id: ${policy.policy_id}`,
    `  expires_at: ${policy.expires_at ? policy.expires_at.toISOString() : "(never)"}`,
    `  executable: ${read.policy.application.executable_path}`,
    `  title patterns: ${policy.title_patterns.length}`,
    `  allowed actions: ${inOrder(policy.allowed_actions)}`,
    `  protected actions: ${inOrder(policy.protected_actions)}`,
    `  safe regions: ${policy.safe_regions.length}, screenshot masks: ${policy.screenshot_masks.length}`,
    `  profiles folder: ${policy.profiles_dir ?? "(none: the profile tools are refused)"}`,
  ];
  if (policy.allowed_actions.size === 0)
    lines.push("  note: allowed_actions is empty, so nothing is allowed");
  const warning = interpreterWarning(read.policy.application.executable_path);
  if (warning) lines.push(`  warning: ${warning}`);
  return { ok: true, lines };
}
