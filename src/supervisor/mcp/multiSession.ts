import type { ClientIdentity } from "../access/clientIdentity.js";
import type { PolicyState } from "../policy/load.js";
import type { Capability } from "../policy/schema.js";
import type { Supervisor } from "../supervisor.js";

/** A session's view of the shared supervisor, whose scope a later credential may narrow. */
export interface SessionView extends Supervisor {
  /** Narrows what the session may do from now on (a later token's scopes); never widens. */
  narrowScope(scope: ReadonlySet<Capability>): void;
}

/**
 * One supervisor, many sessions (remote mode). Policy, audit, memory budget, workers, the
 * grant/consent/token/session stores and the rate budgets are the shared supervisor's; a
 * session's view differs only in who is asking (`client`) and, when its credential carries
 * scopes, a policy narrowed to them. Every store already keys by the client's hash, so one
 * identity never sees or uses another's grants, decisions, tokens, refs, budgets or audit.
 *
 * The view's policy is read from the shared supervisor on every use, never copied: a reload
 * (narrower, wider, invalid, deleted, expired) reaches every open session on its next call,
 * whatever its credential, and its tools/list with it.
 */
export function supervisorFor(
  shared: Supervisor,
  identity: ClientIdentity,
  scope: ReadonlySet<Capability> | null,
  extra: Partial<Pick<Supervisor, "remoteHealth">> = {},
): SessionView {
  let current: ReadonlySet<Capability> | null = scope;
  // One narrowed copy per (shared state, scope) pair, so calls do not rebuild it.
  let cache: { from: PolicyState; scope: ReadonlySet<Capability> | null; state: PolicyState } | null = null;
  // Everything else is the shared supervisor's own objects, whatever fields it grows.
  const view = { ...shared, ...extra, client: () => identity } as SessionView;
  Object.defineProperty(view, "policyState", {
    enumerable: true,
    get: (): PolicyState => {
      const from = shared.policyState;
      if (cache?.from !== from || cache.scope !== current)
        cache = { from, scope: current, state: narrowPolicy(from, current) };
      return cache.state;
    },
  });
  view.narrowScope = (next) => {
    const narrowed = [...(current ?? next)].filter((c) => next.has(c));
    // Most requests carry the same scopes: keep the set (and the cached policy) when nothing narrows.
    if (current === null || narrowed.length !== current.size) current = new Set(narrowed);
  };
  return view;
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
  shared.portal?.endClient(clientHash);
  shared.sessions.disposeByClient(clientHash);
  return { grants, tokens, decisions };
}
