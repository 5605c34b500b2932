import { isUiError, UiError, uiError } from "../../shared/errors.js";
import { sameInstance } from "../../shared/identity.js";
import type { OpArgs, TargetExpectation } from "../../shared/protocol.js";
import { SETTINGS } from "../../shared/settings.js";
import { newCorrelationId } from "../audit.js";
import type { ApplicationCharge } from "../budgets.js";
import type { EffectivePolicy } from "../policy/load.js";
import { policyStatusAt } from "../policy/load.js";
import { actionAllowed, actionNotAllowedMessage, isProtected } from "../policy/match.js";
import { type Capability, isCapability } from "../policy/schema.js";
import { shotLane } from "../screenshot/shotLane.js";
import { requirePolicy, type Supervisor } from "../supervisor.js";
import type { ToolDef } from "../tools/define.js";
import {
  accessFacts,
  applyGrantDecision,
  decideAccess,
  isRefusal,
  type TokenFact,
  throwRefusal,
} from "./accessDecision.js";
import type {
  Admitted,
  AheadCall,
  AheadOp,
  ChainRecord,
  ClassDecision,
  HeldObservation,
  HeldShot,
  OneHopCall,
  ProgressReporter,
} from "./calls.js";
import type { ClientIdentity } from "./clientIdentity.js";
import type { Grant } from "./grants.js";
import { endExitedInstances, liveListing, liveWindows } from "./liveWindows.js";
import { buildServices } from "./services.js";
import type { SessionRecord } from "./sessions.js";
import { grantExpectation, underGrant } from "./shownBefore.js";
import { pickTarget, type ResolvedTarget } from "./targets.js";

/**
 * An env policy without DESKTOP_AUTOMATION_ALLOWED_ACTIONS authorizes no tool but health_check
 * (docs/spec.md §4): not even discovery or the tools that need no policy.
 */
function refuseWithoutActions(sup: Supervisor, def: ToolDef): void {
  if (def.name === "health_check") return;
  const state = policyStatusAt(sup.policyState, () => new Date(sup.clock()));
  if (state.status === "ok" && !state.policy.actions_configured)
    throw uiError(
      "action_not_allowed",
      "DESKTOP_AUTOMATION_ALLOWED_ACTIONS is not set, so no tool but health_check is authorized.",
    );
}

/**
 * A configured audit file that cannot be written stops every call that acts on or reads from a
 * window, and request_access / request_confirmation, until the file can be written again: what
 * happens must be on record. Discovery and the read-only tools about the server stay available.
 */
function refuseWithoutAudit(sup: Supervisor, def: ToolDef): void {
  const acts = def.mode === "capability" || (def.mode !== "discovery" && !def.annotations.readOnlyHint);
  if (!acts || sup.audit.available()) return;
  throw uiError(
    "audit_unavailable",
    `The audit file (${SETTINGS.auditFile.env}, --audit-file) cannot be written (${sup.audit.lastError}); no action runs until it can. Fix the file or its folder (owner, permissions, space); the server retries by itself.`,
  );
}

/** The capability the call exercises: the tool's, or for request_confirmation the class it names. */
function capabilityOf(def: ToolDef, args: Record<string, unknown>): Capability | null {
  return def.mode === "confirmation" ? actionClassOf(args) : def.capability;
}

/** The action class a tool about one class names (its parsed `action_class`). */
function actionClassOf(args: Record<string, unknown>): Capability {
  const c = args.action_class;
  if (typeof c !== "string" || !isCapability(c)) throw uiError("invalid_argument", "Unknown action_class.");
  return c;
}

export interface ChainInput {
  def: ToolDef;
  args: Record<string, unknown>;
  signal: AbortSignal;
  progress: ProgressReporter;
  correlationId?: string;
  /** Receives the chain's record as soon as it exists, so a refused call is audited with it. */
  onRecord?: (record: ChainRecord) => void;
}

/** What the chain has established so far (the record the audit reads is a view of it). */
interface ChainState {
  policy: EffectivePolicy | null;
  target: ResolvedTarget | null;
  grant: Grant | null;
  capability: Capability | null;
  charge: ApplicationCharge | null;
  decision: ClassDecision | null;
  /** What a one-hop message brought besides the listing; dropped when the call ends. */
  held: HeldShot | null;
  /** An observation sent while the target was resolved; dropped when the call ends. */
  ahead: HeldObservation | null;
}

/**
 * The authorization chain, in one place for every tool:
 * policy ceiling → target (identity re-resolved) → capability → grant (or lease)
 * → confirmation token (protected classes) → cheap refusals → budgets → the call's services
 * → handler. Every outcome is audited (by the caller, with the record handed to onRecord).
 */
export async function runChain(
  sup: Supervisor,
  input: ChainInput,
): Promise<{ result: unknown; record: ChainRecord }> {
  const { def, args, signal } = input;
  const client = sup.client();
  const state: ChainState = {
    policy: null,
    target: null,
    grant: null,
    capability: null,
    charge: null,
    decision: null,
    held: null,
    ahead: null,
  };
  const record = chainRecord(input, client, state);
  input.onRecord?.(record);

  try {
    const policy = admit(sup, def, client.hash);
    state.policy = policy;
    state.capability = capabilityOf(def, args);
    if (policy) {
      refuseAboveCeiling(def, policy);
      state.target = await resolveTarget(sup, def, args, policy, client.hash, signal, state);
      await authorize(sup, def, args, client.hash, state);
    }
    // Access is decided: the handler gets exactly the services its row names, bound to this call.
    const admitted: Admitted = {
      record,
      signal,
      progress: input.progress,
      services: buildServices(
        {
          sup,
          client,
          signal,
          progress: input.progress,
          policy: state.policy,
          target: state.target,
          decision: state.decision,
          held: state.held,
          ahead: state.ahead,
        },
        def.uses,
      ),
    };
    return { result: await runHandler(sup, def, args, admitted, state.target), record };
  } finally {
    // Refused or failed: nothing of it was released. Answered: the result has its own copy.
    state.held?.drop();
    // The audit says a walk went to the app even when the call was refused (the app answered
    // its reads; no client saw them), and, beside the handler's `ahead`, when it did not fit.
    if (state.ahead) record.counters.ahead_sent = true;
    state.ahead?.drop();
  }
}

/** The record of the call; its chain fields read what the chain has established so far. */
function chainRecord(input: ChainInput, client: ClientIdentity, state: ChainState): ChainRecord {
  return Object.freeze({
    correlationId: input.correlationId ?? newCorrelationId(),
    client,
    counters: {},
    get policy() {
      return state.policy;
    },
    get target() {
      return state.target;
    },
    get grant() {
      return state.grant;
    },
    get capability() {
      return state.capability;
    },
    get charge() {
      return state.charge;
    },
    get decision() {
      return state.decision;
    },
    get held() {
      return state.held;
    },
  });
}

/**
 * Step 1, before anything is looked up: the env policy's missing action list, expired grants,
 * and for every tool but the open ones a usable policy and a desktop backend; discovery tools
 * take their budget here (they have no target to wait for).
 */
function admit(sup: Supervisor, def: ToolDef, client: string): EffectivePolicy | null {
  refuseWithoutActions(sup, def);
  // Expired grants end (and their automation sessions with them) before any request is answered,
  // not only when something happens to look them up.
  sup.grants.sweepExpired();
  if (def.mode === "open") return null;
  refuseWithoutAudit(sup, def);
  const policy = requirePolicy(sup);
  if (!sup.config.platform) throw uiError("platform_unavailable", "No desktop backend exists for this OS.");
  if (def.mode === "discovery" && def.budget !== "none") sup.budgets.take(def.budget, client);
  return policy;
}

/** Step 2, before any enumeration: the policy allows the tool's capability. */
function refuseAboveCeiling(def: ToolDef, policy: EffectivePolicy): void {
  if (def.mode === "capability" && !actionAllowed(policy, def.capability))
    throw uiError("action_not_allowed", actionNotAllowedMessage(policy.source, [def.capability]));
}

/**
 * Step 3: the window the call is about, its identity re-resolved from the live desktop now. A
 * tool that can do its work in the same message (ToolDef.oneHop) gets it sent instead of the
 * listing: the target is resolved from the listing that message made, and what it holds waits
 * in the chain's state until the call is authorized (dropped unread otherwise).
 */
async function resolveTarget(
  sup: Supervisor,
  def: ToolDef,
  args: Record<string, unknown>,
  policy: EffectivePolicy,
  client: string,
  signal: AbortSignal,
  state: ChainState,
): Promise<ResolvedTarget | null> {
  const hop =
    def.target === "window" ? (def.oneHop?.(oneHopCall(sup, signal, client), args, policy) ?? null) : null;
  if (hop) {
    const { windows, held } = await hop;
    state.held = held;
    await endExitedInstances(sup, windows, signal);
    // The identity is the one the worker's own listing shows, the listing its checks judged.
    const target = pickTarget(policy, windows, args);
    detectInstanceChange(sup, client, target);
    return target;
  }
  if (def.target === "window") {
    // Beside the listing, not instead of it: the target is resolved and authorized from the
    // capture worker's listing as always, and the observation is read only if it fits.
    state.ahead = def.observeAhead?.(aheadCall(sup, def, policy, signal, client), args) ?? null;
    const { windows: all, id } = await liveListing(sup, signal);
    // Handed on with the target: a capture's pre-check reuses it instead of enumerating again.
    const listing = { at: Date.now(), windows: all, ...(id !== null ? { id } : {}) };
    const target = { ...pickTarget(policy, all, args), listing };
    detectInstanceChange(sup, client, target);
    return target;
  }
  if (def.target === "ref") {
    const session = sup.sessions.lookupRef(String(args.ref ?? ""), client);
    const all = await liveWindows(sup, signal);
    const live = all.find((w) => w.hwnd === session.hwnd);
    // Gone, or still on screen while its owner has exited (being torn down).
    if (!live || live.owner_exited) {
      sup.sessions.disposeByInstance(session.instanceKey, client);
      throw uiError("target_gone");
    }
    if (!live.instance || !sameInstance(live.instance, session.instance)) {
      sup.grants.revokeInstance(session.instanceKey, "target_changed");
      throw uiError("target_changed");
    }
    return pickTarget(policy, all, { hwnd: live.hwnd });
  }
  return null;
}

/**
 * Step 4: capability tools on a window need a grant (or, with the lease, the broker's word) for
 * this exact instance and, for a protected class, a confirmation token (decideAccess); then the
 * tool's cheap refusals, then the budgets, and only then is the token used up. Every other tool
 * under a policy takes its budget (if any) here.
 */
async function authorize(
  sup: Supervisor,
  def: ToolDef,
  args: Record<string, unknown>,
  client: string,
  state: ChainState,
): Promise<void> {
  const { policy, target } = state;
  if (!policy || def.mode === "discovery") return;
  if (def.decides && target) {
    // A preview exercises nothing (its audit action stays "none"); the decision is for the class.
    state.decision = decideClass(sup, def.decides, client, target, actionClassOf(args), policy);
    return;
  }
  if (def.mode !== "capability" || !target) {
    takeBudgets(sup, def, args, client, policy, null);
    return;
  }
  const presented = typeof args.confirmation_token === "string" ? args.confirmation_token : "";
  const facts = accessFacts(
    sup,
    client,
    target,
    def.capability,
    policy,
    tokenFact(sup, presented, client, target, def.capability, policy),
  );
  const decision = decideAccess(facts);
  state.grant = await applyGrantDecision(sup, client, target, policy, decision, def.capability);
  // The workers judge popups against the windows the grant's beginning already showed.
  state.target = underGrant(target, state.grant.shownBefore);
  if (isRefusal(decision.confirmation)) throwRefusal(decision.confirmation);
  def.refuse?.(args);
  state.charge = takeBudgets(sup, def, args, client, policy, target);
  // Used up only once the budgets let the call through: a rate-limited call keeps its token.
  if (
    decision.confirmation === "valid" &&
    sup.tokens.consume(presented, client, target.instanceKey, def.capability) !== "ok"
  ) {
    state.charge?.refund();
    throw uiError("confirmation_invalid");
  }
}

/**
 * The decision for the class a tool about one action class names (request_confirmation,
 * preview_action), as the action itself would get it now: only a preview asks whether the client
 * already holds a token; applying the grant part is the handler's (request_confirmation's) step.
 */
function decideClass(
  sup: Supervisor,
  decides: "issue" | "report",
  client: string,
  target: ResolvedTarget,
  capability: Capability,
  policy: EffectivePolicy,
): ClassDecision {
  const hasValidToken = decides === "report" && sup.tokens.hasValid(client, target.instanceKey, capability);
  const facts = accessFacts(sup, client, target, capability, policy, hasValidToken ? "valid" : "absent");
  return Object.freeze({ capability, decision: Object.freeze(decideAccess(facts)), hasValidToken });
}

/** The presented token as decideAccess sees it (checked only where the class is protected). */
function tokenFact(
  sup: Supervisor,
  token: string,
  client: string,
  target: ResolvedTarget,
  capability: Capability,
  policy: EffectivePolicy,
): TokenFact {
  if (!isProtected(policy, capability) || token === "") return "absent";
  return sup.tokens.check(token, client, target.instanceKey, capability) === "ok" ? "valid" : "invalid";
}

/**
 * Step 5: the handler. When the worker refused because the window changed, another process
 * instance behind it ends the grant now; a window that only moved or resized between check and
 * effect keeps it (the call still fails: its coordinates no longer mean what they meant).
 */
async function runHandler(
  sup: Supervisor,
  def: ToolDef,
  args: Record<string, unknown>,
  admitted: Admitted,
  target: ResolvedTarget | null,
): Promise<unknown> {
  try {
    return await def.handler(admitted, args);
  } catch (e) {
    if (e instanceof UiError && e.code === "target_changed" && target) {
      // Asked even when this call was cancelled: whether the grant ends must not depend on that.
      const same = await liveWindows(sup, new AbortController().signal).then(
        (all) => {
          const w = all.find((x) => x.hwnd === target.window.hwnd);
          return w?.instance != null && sameInstance(w.instance, target.instance);
        },
        () => false,
      );
      if (!same) sup.grants.revokeInstance(target.instanceKey, "target_changed");
    }
    throw e;
  }
}

/** Takes the call's budgets; returns what it booked on the application's volume budgets. */
function takeBudgets(
  sup: Supervisor,
  def: ToolDef,
  args: Record<string, unknown>,
  client: string,
  policy: EffectivePolicy,
  target: ResolvedTarget | null,
): ApplicationCharge | null {
  if (def.budget === "none") return null;
  if (!target) {
    sup.budgets.take(def.budget, client);
    return null;
  }
  const cost = def.cost ? def.cost(args, policy, target) : {};
  sup.budgets.take(def.budget, client, { key: target.instanceKey, limits: policy.limits, ...cost });
  if (!cost.textChars && !cost.screenshotPixels) return null;
  // Right after the take: the charge records the buckets this take was booked into.
  return sup.budgets.applicationCharge({
    key: target.instanceKey,
    textChars: cost.textChars,
    screenshotPixels: cost.screenshotPixels,
  });
}

/** A grant for the same window but another process instance means the window was replaced. */
function detectInstanceChange(sup: Supervisor, client: string, target: ResolvedTarget): void {
  for (const g of sup.grants.listForClient(client)) {
    if (g.hwnd === target.window.hwnd && g.instanceKey !== target.instanceKey) {
      sup.grants.revokeInstance(g.instanceKey, "target_changed");
      throw uiError("target_changed");
    }
  }
}

/** The caller's live grants on a window (the chain swept the expired ones on admission). */
function grantsOn(sup: Supervisor, client: string, hwnd: string): Grant[] {
  return sup.grants.listForClient(client).filter((g) => g.hwnd === hwnd);
}

/** What a one-hop step may use: the caller's shot turn with its memory, the one-hop message. */
function oneHopCall(sup: Supervisor, signal: AbortSignal, client: string): OneHopCall {
  const lane = shotLane(sup, client, signal);
  return Object.freeze({
    signal,
    grantsOn: (hwnd: string) => grantsOn(sup, client, hwnd),
    turn: lane.turn,
    // The worker keeps a "later" frame's PNG for this caller and the instance it lists, and only
    // when `granted` holds that instance (the grants as read when this message goes).
    captureWindow: (args: Omit<OpArgs<"capture.window">, "keep_for">) =>
      lane.call("capture.window", { ...args, keep_for: args.tiles === "later" ? client : null }),
  });
}

/**
 * What an observeAhead step may use: the caller's open session under its one live grant on the
 * window for the tool's capability, only while the policy does not protect that capability
 * (a token is checked only once the target is resolved), the call's budget would let it
 * through (nothing is taken; authorize() takes it as for any call) and the capture worker is idle.
 */
function aheadCall(
  sup: Supervisor,
  def: ToolDef,
  policy: EffectivePolicy,
  signal: AbortSignal,
  client: string,
): AheadCall {
  return Object.freeze({
    treeDeadlineMs: sup.config.treeDeadlineMs,
    sessionOn: (hwnd: string) => {
      // Only while the capture worker has nothing else in flight: then its listing starts at once
      // and the walk beside it uses a core that would otherwise wait. Under load both would only
      // queue for the same cores, and the walks of calls about to be refused would take theirs.
      if (sup.workers.capture.stats().inflight > 0) return null;
      if (def.mode !== "capability" || def.budget === "none") return null;
      const capability = def.capability;
      if (isProtected(policy, capability) || !sup.budgets.wouldAllow(def.budget, client)) return null;
      const grants = grantsOn(sup, client, hwnd).filter((g) => g.capabilities.has(capability));
      const grant = grants.length === 1 ? grants[0] : undefined;
      if (grant === undefined) return null;
      const session = sup.sessions.existing(client, grant.instanceKey, hwnd);
      return session ? { session, target: grantExpectation(grant) } : null;
    },
    send: <K extends AheadOp>(
      on: { session: SessionRecord; target: TargetExpectation },
      op: K,
      args: Omit<OpArgs<K>, "ahead">,
    ): HeldObservation => {
      // Its own signal, which the call's cancellation also aborts (a listener, not
      // AbortSignal.any, whose composite signals cost more per call than the rest of this).
      const own = new AbortController();
      const cancel = () => own.abort();
      signal.addEventListener("abort", cancel, { once: true });
      if (signal.aborted) own.abort();
      const result = (async () =>
        sup.sessions.call(on.session, op, { ...args, ahead: true } as OpArgs<K>, {
          deadlineMs: args.deadline_ms + sup.config.workerDeadlineMs,
          signal: own.signal,
        }))();
      let settled = false;
      let lost: "worker_crashed" | "worker_timeout" | null = null;
      const done = () => {
        settled = true;
        signal.removeEventListener("abort", cancel);
      };
      // Read by the handler, or by no one: a rejection nobody reads is not an unhandled one.
      result.then(done, (e: unknown) => {
        if (isUiError(e) && (e.code === "worker_crashed" || e.code === "worker_timeout")) lost = e.code;
        done();
      });
      return Object.freeze({
        op,
        session: on.session,
        args,
        result,
        // Only a walk still running is stopped (an abort makes an error object, with its stack).
        drop: () => {
          if (!settled) own.abort();
        },
        lost: () => lost,
      });
    },
  });
}
