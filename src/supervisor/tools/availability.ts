import type { PolicyState } from "../policy/load.js";
import { isProtected } from "../policy/match.js";
import { CAPABILITIES } from "../policy/schema.js";
import type { ToolDef } from "./define.js";
import { TOOLS } from "./index.js";
import { profileTools } from "./profiles.js";

/**
 * The tools a policy state can ever authorize, for tools/list: a client pays for (and a model
 * is offered) only what could succeed. health_check is always there (it says why the rest is
 * missing). Without a usable policy, or with one that allows no action (an environment policy
 * without DESKTOP_AUTOMATION_ALLOWED_ACTIONS), that is all. Else: discovery and bookkeeping
 * tools; a capability tool when the policy allows its capability; request_access /
 * preview_action when anything can be granted; request_confirmation when an allowed capability
 * is protected; the coordinate-profile tools only with a profiles folder (without one they can
 * only refuse).
 * This is a listing only: the chain still authorizes every call, listed or not.
 */
export function toolsForPolicy(state: PolicyState, all: readonly ToolDef[] = TOOLS): ToolDef[] {
  if (state.status !== "ok") return all.filter((t) => t.name === "health_check");
  const p = state.policy;
  if (p.allowed_actions.size === 0) return all.filter((t) => t.name === "health_check");
  return all.filter((t) => {
    if (p.profiles_dir === null && profileTools.includes(t)) return false;
    if (t.mode === "capability") return p.allowed_actions.has(t.capability);
    if (t.mode === "consent") return p.allowed_actions.size > 0;
    if (t.mode === "confirmation")
      return CAPABILITIES.some((c) => p.allowed_actions.has(c) && isProtected(p, c));
    // "open" and "discovery": always.
    return true;
  });
}
