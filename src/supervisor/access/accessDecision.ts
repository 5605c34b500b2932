import { UNACTIONABLE_MESSAGES, type Unactionable, unactionable } from "../../shared/actionable.js";
import type { DenyReason } from "../../shared/errors.js";
import { uiError } from "../../shared/errors.js";
import type { WindowInfo } from "../../shared/platform.js";
import type { KeptDecision } from "../consent/broker.js";
import type { EffectivePolicy } from "../policy/load.js";
import { actionAllowed, actionNotAllowedMessage, isProtected } from "../policy/match.js";
import type { Capability } from "../policy/schema.js";
import type { Supervisor } from "../supervisor.js";
import type { Grant } from "./grants.js";
import type { LeaseGate } from "./leaseGate.js";
import { shownNow } from "./shownBefore.js";
import type { ResolvedTarget } from "./targets.js";

/**
 * Whether a client may exercise one capability on one process instance, decided in one place
 * for the chain (every capability tool), request_access / request_confirmation (which need the
 * grant part) and preview_action (which reports it without acting). decideAccess is pure: the
 * facts are read from the stores first (accessFacts), the effects the decision calls for (the
 * lease's word, a silent renewal, a refusal) are applied after it (authorizeCapability).
 */

/** A confirmation token as the call presents it: none, one the store would accept, or another. */
export type TokenFact = "absent" | "valid" | "invalid";

export interface AccessFacts {
  capability: Capability;
  /** The policy's ceiling allows the capability. */
  allowed: boolean;
  /** Where the ceiling comes from, so a refusal can say where the action is added. */
  policySource: EffectivePolicy["source"];
  /** The policy protects the capability: each use needs a confirmation token. */
  protected: boolean;
  /** Under the unattended lease: whether it can carry the capability here; null without a lease. */
  lease: { covers: boolean } | null;
  /** This client's grant on the instance, as the store holds it (the decision checks its expiry). */
  grant: Pick<Grant, "capabilities" | "expiresAt"> | null;
  /** The person's kept decision for (client, instance), if any. */
  kept: KeptDecision | null;
  /** The client gave the grant back (release_access): the kept decision renews nothing. */
  released: boolean;
  token: TokenFact;
  /** The supervisor's clock, now. */
  now: number;
  /** The window's own state, as the chain just resolved it. */
  window: Pick<WindowInfo, "iconic" | "visible" | "foreground">;
  /** Every use of the capability is input to the window in front (passive focus mode). */
  needsFront: boolean;
}

export type AccessRefusal = {
  refused: Extract<
    DenyReason,
    | "action_not_allowed"
    | "consent_required"
    | "consent_denied"
    | "confirmation_required"
    | "confirmation_invalid"
    | Unactionable
  >;
  message?: string;
};

export interface AccessDecision {
  /** How the client holds the capability (a live grant, the kept decision, the lease), or why not. */
  grant: { via: "grant" | "kept_decision" | "lease" } | AccessRefusal;
  /**
   * Whether the kept decision renews the grant now. It does whenever there is no live grant, the
   * person approved and the client did not give the grant back, even if the renewed grant does not
   * hold this capability (the call is then refused, the grant stands).
   */
  renew: boolean;
  /** The confirmation token's part: not needed, presented and valid, or the refusal. */
  confirmation: "not_required" | "valid" | AccessRefusal;
  /** The policy protects the capability: each use needs a confirmation token. */
  requiresConfirmation: boolean;
  /**
   * The window's own state as the worker will judge it right before the effect (the shared
   * predicate of src/shared/actionable.ts). request_confirmation issues no token against it; the
   * chain does not refuse on it (the worker does, and restore_window acts on a minimized window),
   * nor does preview_action report it.
   */
  window: "ok" | AccessRefusal;
}

const refuse = (refused: AccessRefusal["refused"], message?: string): AccessRefusal =>
  message === undefined ? { refused } : { refused, message };

export function isRefusal(
  v: AccessDecision["grant"] | AccessDecision["confirmation"] | AccessDecision["window"],
): v is AccessRefusal {
  return typeof v === "object" && "refused" in v;
}

/** The refusal the call gets first (grant before confirmation), or null when it is allowed. */
export function firstRefusal(d: AccessDecision): AccessRefusal | null {
  if (isRefusal(d.grant)) return d.grant;
  if (isRefusal(d.confirmation)) return d.confirmation;
  return null;
}

export function decideAccess(f: AccessFacts): AccessDecision {
  const liveGrant = f.grant !== null && f.grant.expiresAt > f.now ? f.grant : null;
  const renew = f.lease === null && liveGrant === null && !f.released && f.kept?.decision === "approved";
  return {
    grant: grantPart(f, liveGrant, renew),
    renew,
    confirmation: confirmationPart(f),
    requiresConfirmation: f.protected,
    window: windowPart(f),
  };
}

function windowPart(f: AccessFacts): AccessDecision["window"] {
  const why = unactionable(f.window, f.needsFront);
  if (why === null) return "ok";
  return refuse(why, UNACTIONABLE_MESSAGES[why]);
}

/**
 * Classes whose every use is input to the window in front. `text` is not among them: a text token
 * also serves set_element_value, which needs no focus (send_text still refuses not_foreground).
 */
const INPUT_CLASSES: ReadonlySet<Capability> = new Set<Capability>(["click", "hover", "drag", "key"]);

function grantPart(f: AccessFacts, liveGrant: AccessFacts["grant"], renew: boolean): AccessDecision["grant"] {
  if (!f.allowed)
    return refuse("action_not_allowed", actionNotAllowedMessage(f.policySource, [f.capability]));
  if (f.lease !== null)
    // Outside what the lease can carry here: a person must decide.
    return f.lease.covers
      ? { via: "lease" }
      : refuse("consent_required", "The unattended lease does not cover this capability.");
  const held = liveGrant?.capabilities ?? (renew && f.kept ? new Set(f.kept.capabilities) : null);
  if (held === null)
    return f.kept?.decision === "denied"
      ? refuse(
          "consent_denied",
          "A person denied access to this process instance; the Deny is kept for this server's run. A person resets it by restarting the server or the application.",
        )
      : refuse("consent_required");
  if (!held.has(f.capability))
    return refuse("consent_required", "This capability was not granted for this window.");
  return { via: liveGrant ? "grant" : "kept_decision" };
}

function confirmationPart(f: AccessFacts): AccessDecision["confirmation"] {
  if (!f.protected) return "not_required";
  if (f.token === "valid") return "valid";
  return f.token === "absent"
    ? refuse(
        "confirmation_required",
        `The action ${f.capability} is protected: call request_confirmation {hwnd, action_class: "${f.capability}"} first and pass its confirmation_token.`,
      )
    : refuse(
        "confirmation_invalid",
        `The confirmation token is invalid, expired, used or for another target or action; call request_confirmation {hwnd, action_class: "${f.capability}"} for a new one.`,
      );
}

/** What an unattended lease can grant under this policy: the lease's capabilities ∩ the policy's. */
export function leaseCapabilities(lease: LeaseGate, policy: EffectivePolicy): Capability[] {
  return lease.capabilities().filter((c): c is Capability => policy.allowed_actions.has(c as Capability));
}

/** Reads the facts of one decision from the supervisor's stores (no effect but expiring a dead grant). */
export function accessFacts(
  sup: Supervisor,
  client: string,
  target: ResolvedTarget,
  capability: Capability,
  policy: EffectivePolicy,
  token: TokenFact,
): AccessFacts {
  const common = {
    capability,
    allowed: actionAllowed(policy, capability),
    policySource: policy.source,
    protected: isProtected(policy, capability),
    token,
    now: sup.clock(),
    window: target.window,
    // Unless the server brings the window to the front first (focus mode "activate").
    needsFront: INPUT_CLASSES.has(capability) && sup.config.focusMode === "passive",
  };
  // Under the lease the grant and the kept decision play no part.
  if (sup.lease)
    return {
      ...common,
      lease: { covers: leaseCapabilities(sup.lease, policy).includes(capability) },
      grant: null,
      kept: null,
      released: false,
    };
  const kept = sup.consent.keptDecision(client, target.instanceKey) ?? null;
  return {
    ...common,
    lease: null,
    grant: sup.grants.get(client, target.instanceKey) ?? null,
    // Where the compositor's dialog is the second gate, an approval renews nothing without the
    // portal session it was given under (while the picker is up, or after the session ended).
    kept:
      kept?.decision === "approved" && sup.portal && !sup.portal.has(client, target.instanceKey)
        ? null
        : kept,
    released: sup.grants.wasReleased(client, target.instanceKey),
  };
}

export function throwRefusal(r: AccessRefusal): never {
  throw uiError(r.refused, r.message);
}

/**
 * Applies a decision's grant part: the refusal; the lease's word (asked now, I/O) and a grant of
 * what both the lease and the policy allow; a silent renewal from the kept decision; or the live
 * grant. Returns the grant the call runs under.
 */
export async function applyGrantDecision(
  sup: Supervisor,
  client: string,
  target: ResolvedTarget,
  policy: EffectivePolicy,
  decision: AccessDecision,
  capability: Capability,
): Promise<Grant> {
  const binding = { client, instance: target.instance, hwnd: target.window.hwnd };
  const renewed =
    decision.renew && !sup.lease
      ? sup.grants.put({
          ...binding,
          capabilities: sup.consent.keptDecision(client, target.instanceKey)?.capabilities ?? [],
          shownBefore: await shownNow(sup, client, target),
        })
      : null;
  if (isRefusal(decision.grant)) throwRefusal(decision.grant);
  if (decision.grant.via === "lease" && sup.lease) {
    try {
      await sup.lease.validate(capability, target.instance);
    } catch (e) {
      // Broker loss, revocation or expiry fails closed and ends the instance's sessions now.
      sup.grants.release(client, target.instanceKey);
      sup.sessions.disposeByInstance(target.instanceKey, client);
      throw e;
    }
    // The lease never reaches past the policy ceiling: the grant holds only what both allow.
    return sup.grants.put({
      ...binding,
      capabilities: leaseCapabilities(sup.lease, policy),
      shownBefore: await shownNow(sup, client, target),
    });
  }
  const grant = renewed ?? sup.grants.get(client, target.instanceKey);
  // The facts were read just now on this thread: a grant the decision counted on is still there.
  if (!grant) throw uiError("consent_required");
  return grant;
}

/** The grant part of the decision for a capability, applied: for request_access and request_confirmation. */
export async function authorizeCapability(
  sup: Supervisor,
  client: string,
  target: ResolvedTarget,
  capability: Capability,
  policy: EffectivePolicy,
): Promise<Grant> {
  const decision = decideAccess(accessFacts(sup, client, target, capability, policy, "absent"));
  return applyGrantDecision(sup, client, target, policy, decision, capability);
}
