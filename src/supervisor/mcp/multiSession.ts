import type { ClientIdentity } from "../access/clientIdentity.js";
import type { PolicyState } from "../policy/load.js";
import type { Capability } from "../policy/schema.js";
import type { Supervisor } from "../supervisor.js";

/**
 * One supervisor, many sessions (remote mode). Policy, audit, memory budget, workers, the
 * grant/consent/token/session stores and the rate budgets are the shared supervisor's; a
 * session's view differs only in who is asking (`client`) and, when its credential carries
 * scopes, a policy narrowed to them. Every store already keys by the client's hash, so one
 * identity never sees or uses another's grants, decisions, tokens, refs, budgets or audit.
 */
export function supervisorFor(
  shared: Supervisor,
  identity: ClientIdentity,
  scope: ReadonlySet<Capability> | null,
): Supervisor {
  // Everything else is the shared supervisor's own objects, whatever fields it grows.
  return { ...shared, policyState: narrowPolicy(shared.policyState, scope), client: () => identity };
}

/**
 * Scopes only ever narrow the operator's ceiling: the allowed actions become the intersection,
 * every other rule (targets, protected classes, masks, limits, expiry) stays the policy's.
 */
export function narrowPolicy(state: PolicyState, scope: ReadonlySet<Capability> | null): PolicyState {
  if (scope === null || state.status !== "ok") return state;
  const allowed = new Set([...state.policy.allowed_actions].filter((c) => scope.has(c)));
  return { status: "ok", policy: { ...state.policy, allowed_actions: allowed } };
}

export interface EndedForClient {
  grants: number;
  tokens: number;
  decisions: number;
}

/**
 * A revoked credential's identity loses everything it holds, now: grants (each revocation is
 * audited with credential_revoked by the grant store's listener, which also disposes the
 * instance's automation session), confirmation tokens, kept consent decisions and open
 * dialogs, and any automation session left without a grant.
 */
export function endClient(shared: Supervisor, clientHash: string): EndedForClient {
  const grants = shared.grants.revokeClient(clientHash, "credential_revoked");
  const tokens = shared.tokens.revokeClient(clientHash);
  const decisions = shared.consent.forgetClient(clientHash, "credential_revoked");
  shared.sessions.disposeByClient(clientHash);
  return { grants, tokens, decisions };
}
