import type { DialogGate } from "../shared/dialogGate.js";
import { UiError, uiError } from "../shared/errors.js";
import { instanceKey, sameInstance } from "../shared/identity.js";
import type { WindowInfo } from "../shared/platform.js";
import type { OpArgs, OpName, OpResult } from "../shared/protocol.js";
import type { AuditLog } from "./audit.js";
import { newCorrelationId } from "./audit.js";
import type { ApplicationCharge, MemoryBudget, RateBudgets } from "./budgets.js";
import type { ClientIdentity } from "./clientIdentity.js";
import type { ServerConfig } from "./config.js";
import type { ConsentBroker } from "./consent/broker.js";
import type { ConsentDialogFacts } from "./consent/dialogInfo.js";
import type { Grant, GrantStore } from "./grants.js";
import type { InputLane } from "./inputLane.js";
import type { LeaseGate } from "./leaseGate.js";
import type { Logger } from "./log.js";
import type { EffectivePolicy, PolicyState } from "./policy/load.js";
import { policyStatusAt } from "./policy/load.js";
import { actionAllowed, isProtected } from "./policy/match.js";
import { type Capability, isCapability } from "./policy/schema.js";
import type { A11ySessions, SessionRecord } from "./sessions.js";
import { pickTarget, type ResolvedTarget } from "./targets.js";
import type { ConfirmationTokenStore } from "./tokens.js";
import type { ToolDef } from "./tools/define.js";
import type { WorkerHost } from "./workerHost.js";

export interface Workers {
  capture: WorkerHost;
  input: WorkerHost;
}

/**
 * Everything the supervisor owns. Built once per server; over stdio one MCP connection uses it,
 * over HTTP every session gets a view of it (src/supervisor/multiSession.ts) that differs only
 * in `client` and, for narrowing OAuth scopes, `policyState`.
 */
export interface Supervisor {
  config: ServerConfig;
  policyState: PolicyState;
  clock: () => number;
  log: Logger;
  audit: AuditLog;
  budgets: RateBudgets;
  memory: MemoryBudget;
  grants: GrantStore;
  tokens: ConfirmationTokenStore;
  consent: ConsentBroker;
  sessions: A11ySessions;
  workers: Workers;
  lease: LeaseGate | null;
  /** How many of our consent/lease dialogs are open (input is refused while any is). */
  dialogs: DialogGate;
  /** Serializes each client's input effects. */
  inputLane: InputLane;
  /** The consent dialog's mechanism and unsafe settings, for health_check and doctor. */
  consentDialog: ConsentDialogFacts;
  client: () => ClientIdentity;
  startedAt: number;
  version: string;
  /**
   * Calls the listener whenever the policy state changes while the server runs (the file was
   * edited, the policy expired); returns the way to stop. Absent where nothing watches it.
   */
  onPolicyChange?: (listener: () => void) => () => void;
}

/** Sends notifications/progress when the client asked for it (a progressToken); else nothing. */
export type ProgressReporter = (progress: number, total?: number, message?: string) => Promise<void>;

/** What a tool handler gets once the chain let it through. */
export interface CallContext {
  sup: Supervisor;
  correlationId: string;
  client: ClientIdentity;
  /** Present for every tool that needs a policy. */
  policy: EffectivePolicy | null;
  /** Present for tools that act on a window (after identity re-resolution). */
  target: ResolvedTarget | null;
  grant: Grant | null;
  /** The capability this call exercises (per-class tools: the requested class). */
  capability: Capability | null;
  signal: AbortSignal;
  progress: ProgressReporter;
  /** Calls a worker with the server's deadline and this call's cancellation. */
  call<K extends OpName>(op: K, args: OpArgs<K>, deadlineMs?: number): Promise<OpResult<K>>;
  /** Calls the uia worker that holds an automation session (one worker per grant). */
  callSession<K extends Extract<OpName, `a11y.${string}`>>(
    session: SessionRecord,
    op: K,
    args: OpArgs<K>,
    deadlineMs?: number,
  ): Promise<OpResult<K>>;
  /** Numeric/boolean audit counters for this call. */
  counters: Record<string, number | boolean>;
  /**
   * The typed characters / captured pixels this call booked on the application's budgets, or
   * null. A handler gives them back (refund) only when it is certain nothing was typed or shown.
   */
  charge: ApplicationCharge | null;
}

export function requirePolicy(sup: Supervisor): EffectivePolicy {
  const state = policyStatusAt(sup.policyState, () => new Date(sup.clock()));
  if (state.status === "none") throw uiError("policy_not_configured");
  if (state.status === "error") throw uiError(state.code);
  return state.policy;
}

/**
 * An env policy without DESKTOP_AUTOMATION_ALLOWED_ACTIONS authorizes no tool but health_check
 * (SPEC §4): not even discovery or the tools that need no policy.
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

export async function liveWindows(sup: Supervisor, signal: AbortSignal): Promise<WindowInfo[]> {
  if (!sup.config.platform) throw uiError("platform_unavailable", "No desktop backend exists for this OS.");
  const r = await sup.workers.capture.call(
    "desktop.list",
    {},
    { deadlineMs: sup.config.workerDeadlineMs, signal },
  );
  await endExitedInstances(sup, r.windows, signal);
  return r.windows;
}

/**
 * When each granted instance without a window was last asked about. Keyed by the grant store,
 * which every session's view of one supervisor shares (remote mode: one supervisor, many sessions).
 */
const aliveCheckedAt = new WeakMap<GrantStore, Map<string, number>>();
const ALIVE_RECHECK_MS = 1000;

/**
 * Grants die with their process instance (SPEC §5): a granted instance that no longer shows any
 * window is asked about (at most once a second); if it has exited, its grants, tokens, sessions
 * and kept consent decision end now, not at their expiry.
 */
async function endExitedInstances(
  sup: Supervisor,
  all: readonly WindowInfo[],
  signal: AbortSignal,
): Promise<void> {
  const granted = sup.grants.instances();
  if (granted.size === 0) return;
  const shown = new Set<string>();
  const hwnds = new Set<string>();
  for (const w of all) {
    // A window whose owner exited shows no instance; its hwnd is not another instance's either.
    if (w.owner_exited) continue;
    hwnds.add(w.hwnd);
    if (w.instance) shown.add(instanceKey(w.instance));
  }
  let checked = aliveCheckedAt.get(sup.grants);
  if (!checked) {
    checked = new Map();
    aliveCheckedAt.set(sup.grants, checked);
  }
  for (const key of checked.keys()) if (!granted.has(key)) checked.delete(key);
  const now = sup.clock();
  for (const [key, { instance, hwnds: grantedHwnds }] of granted) {
    if (shown.has(key) || now - (checked.get(key) ?? -Infinity) < ALIVE_RECHECK_MS) continue;
    // Its hwnd now shows another instance: a replaced window, which the call targeting it reports
    // as target_changed (detectInstanceChange); not ours to end quietly here.
    if ([...grantedHwnds].some((h) => hwnds.has(h))) continue;
    checked.set(key, now);
    let alive = true;
    try {
      alive = (await sup.workers.capture.call("desktop.alive", { instance }, { deadlineMs: 5000, signal }))
        .alive;
    } catch {
      // A slow or restarting worker is no proof of exit.
    }
    if (!alive) {
      sup.grants.revokeInstance(key, "target_gone");
      sup.consent.forgetInstance(key);
      checked.delete(key);
    }
  }
}

/** Drops every grant, token use and automation session of an instance whose identity changed. */
export function revokeInstance(
  sup: Supervisor,
  instanceKey: string,
  reason: "target_changed" | "target_gone",
): void {
  sup.grants.revokeInstance(instanceKey, reason);
}

function capabilityOf(def: ToolDef, args: Record<string, unknown>): Capability | null {
  if (def.capability === "per_class") {
    const c = args.action_class;
    if (typeof c !== "string" || !isCapability(c)) throw uiError("invalid_argument", "Unknown action_class.");
    return c;
  }
  if (def.capability === "none" || def.capability === "discovery" || def.capability === "consent")
    return null;
  return def.capability;
}

export interface ChainInput {
  def: ToolDef;
  args: Record<string, unknown>;
  signal: AbortSignal;
  progress: ProgressReporter;
  correlationId?: string;
  /** Receives the call context as soon as it exists, so a refused call is audited with it. */
  onContext?: (ctx: CallContext) => void;
}

/**
 * The authorization chain, in one place for every tool:
 * policy ceiling → target (identity re-resolved) → capability → grant (or lease)
 * → confirmation token (protected classes) → budgets → handler. Every outcome is audited.
 */
export async function runChain(
  sup: Supervisor,
  input: ChainInput,
): Promise<{ result: unknown; ctx: CallContext }> {
  const { def, args, signal } = input;
  const client = sup.client();
  const correlationId = input.correlationId ?? newCorrelationId();
  const counters: Record<string, number | boolean> = {};
  let policy: EffectivePolicy | null = null;
  let target: ResolvedTarget | null = null;
  let grant: Grant | null = null;
  let capability: Capability | null = null;
  let charge: ApplicationCharge | null = null;

  const ctx: CallContext = {
    sup,
    correlationId,
    client,
    get policy() {
      return policy;
    },
    get target() {
      return target;
    },
    get grant() {
      return grant;
    },
    get capability() {
      return capability;
    },
    get charge() {
      return charge;
    },
    signal,
    progress: input.progress,
    counters,
    call: (op, a, deadlineMs) => {
      const host = workerFor(sup, op);
      // "activate" focus mode's wait (≤ ~2 s) counts against the deadline: it is part of the effect.
      const run = () => host.call(op, a, { deadlineMs: deadlineMs ?? sup.config.workerDeadlineMs, signal });
      if (host !== sup.workers.input) return run();
      // Input effects: one at a time per client, none while a dialog of ours is open (the worker
      // checks again before every single event).
      return sup.inputLane.run(client.hash, signal, () => {
        sup.dialogs.assertNoDialog();
        return run();
      });
    },
    callSession: (session, op, a, deadlineMs) =>
      sup.sessions.call(session, op, a, { deadlineMs: deadlineMs ?? sup.config.workerDeadlineMs, signal }),
  };

  input.onContext?.(ctx);
  refuseWithoutActions(sup, def);
  // Expired grants end (and their automation sessions with them) before any request is answered,
  // not only when something happens to look them up.
  sup.grants.sweepExpired();
  if (def.capability !== "none") {
    policy = requirePolicy(sup);
    if (!sup.config.platform) throw uiError("platform_unavailable", "No desktop backend exists for this OS.");
  }
  if (def.capability === "discovery" && def.budget !== "none") sup.budgets.take(def.budget, client.hash);

  capability = capabilityOf(def, args);
  if (policy && capability && !actionAllowed(policy, capability) && def.capability !== "per_class")
    throw uiError("action_not_allowed");

  if (def.target === "window" && policy) {
    const all = await liveWindows(sup, signal);
    // Handed on with the target: a capture's pre-check reuses it instead of enumerating again.
    target = { ...pickTarget(policy, all, args), listing: { at: Date.now(), windows: all } };
    detectInstanceChange(sup, client.hash, target);
  } else if (def.target === "ref" && policy) {
    const session = sup.sessions.lookupRef(String(args.ref ?? ""), client.hash);
    const all = await liveWindows(sup, signal);
    const live = all.find((w) => w.hwnd === session.hwnd);
    // Gone, or still on screen while its owner has exited (being torn down).
    if (!live || live.owner_exited) {
      sup.sessions.disposeByInstance(session.instanceKey, client.hash);
      throw uiError("target_gone");
    }
    if (!live.instance || !sameInstance(live.instance, session.instance)) {
      revokeInstance(sup, session.instanceKey, "target_changed");
      throw uiError("target_changed");
    }
    target = pickTarget(policy, all, { hwnd: live.hwnd });
  }

  // Capability tools need a grant (or, with the lease, the broker's word) for this exact instance.
  if (capability && target && policy && def.capability !== "per_class") {
    grant = await authorizeCapability(sup, client.hash, target, capability, policy);
    const token = isProtected(policy, capability)
      ? presentedToken(sup, args, client.hash, target, capability)
      : null;
    charge = takeBudgets(sup, def, args, client.hash, policy, target);
    // Consumed only once the budgets let the call through: a rate-limited call keeps its token.
    if (token !== null && sup.tokens.consume(token, client.hash, target.instanceKey, capability) !== "ok") {
      charge?.refund();
      throw uiError("confirmation_invalid");
    }
  } else if (def.capability !== "discovery" && policy) {
    takeBudgets(sup, def, args, client.hash, policy, null);
  }

  try {
    const result = await def.handler(ctx, args);
    return { result, ctx };
  } catch (e) {
    // The worker refused because the window changed. Another process instance behind it ends
    // the grant now; a window that only moved or resized between check and effect keeps it
    // (the call still fails: its coordinates no longer mean what they meant).
    if (e instanceof UiError && e.code === "target_changed" && target) {
      const t = target;
      // Asked even when this call was cancelled: whether the grant ends must not depend on that.
      const same = await liveWindows(sup, new AbortController().signal).then(
        (all) => {
          const w = all.find((x) => x.hwnd === t.window.hwnd);
          return w?.instance != null && sameInstance(w.instance, t.instance);
        },
        () => false,
      );
      if (!same) revokeInstance(sup, t.instanceKey, "target_changed");
    }
    throw e;
  }
}

/** The call's confirmation token, checked (not yet consumed) against this instance and class. */
function presentedToken(
  sup: Supervisor,
  args: Record<string, unknown>,
  client: string,
  target: ResolvedTarget,
  capability: Capability,
): string {
  const token = typeof args.confirmation_token === "string" ? args.confirmation_token : "";
  if (!token) throw uiError("confirmation_required");
  if (sup.tokens.check(token, client, target.instanceKey, capability) !== "ok")
    throw uiError("confirmation_invalid");
  return token;
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
      revokeInstance(sup, g.instanceKey, "target_changed");
      throw uiError("target_changed");
    }
  }
}

/**
 * (client, instance) pairs whose grant the client gave back with release_access. Their kept
 * decision no longer renews a grant silently: actions are consent_required until the client
 * asks again with request_access (answered from the kept decision, without a new dialog).
 */
const released = new WeakMap<GrantStore, Set<string>>();

function releasedFor(sup: Supervisor): Set<string> {
  let set = released.get(sup.grants);
  if (!set) {
    set = new Set();
    released.set(sup.grants, set);
  }
  return set;
}

export function markReleased(sup: Supervisor, client: string, instanceKey: string): void {
  releasedFor(sup).add(`${client}\u0000${instanceKey}`);
}

export function clearReleased(sup: Supervisor, client: string, instanceKey: string): void {
  releasedFor(sup).delete(`${client}\u0000${instanceKey}`);
}

export function wasReleased(sup: Supervisor, client: string, instanceKey: string): boolean {
  return releasedFor(sup).has(`${client}\u0000${instanceKey}`);
}

/** What an unattended lease can grant under this policy: the lease's capabilities ∩ the policy's. */
export function leaseCapabilities(lease: LeaseGate, policy: EffectivePolicy): Capability[] {
  return lease.capabilities().filter((c): c is Capability => policy.allowed_actions.has(c as Capability));
}

export async function authorizeCapability(
  sup: Supervisor,
  client: string,
  target: ResolvedTarget,
  capability: Capability,
  policy: EffectivePolicy,
): Promise<Grant> {
  if (sup.lease) {
    // Outside what the lease can carry here: a person must decide; the grant itself stands.
    if (!leaseCapabilities(sup.lease, policy).includes(capability))
      throw uiError("consent_required", "The unattended lease does not cover this capability.");
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
      client,
      instance: target.instance,
      hwnd: target.window.hwnd,
      capabilities: leaseCapabilities(sup.lease, policy),
    });
  }
  let grant = sup.grants.get(client, target.instanceKey);
  if (!grant && !wasReleased(sup, client, target.instanceKey)) {
    // Silent renewal from the kept decision; the identity was re-resolved just now.
    const kept = sup.consent.keptDecision(client, target.instanceKey);
    if (kept && kept.decision === "approved") {
      grant = sup.grants.put({
        client,
        instance: target.instance,
        hwnd: target.window.hwnd,
        capabilities: kept.capabilities,
      });
    }
  }
  if (!grant) {
    const kept = sup.consent.keptDecision(client, target.instanceKey);
    throw uiError(kept?.decision === "denied" ? "consent_denied" : "consent_required");
  }
  if (!grant.capabilities.has(capability))
    throw uiError("consent_required", "This capability was not granted for this window.");
  return grant;
}

function workerFor(sup: Supervisor, op: OpName): WorkerHost {
  if (op.startsWith("input.")) return sup.workers.input;
  // Accessibility ops belong to a grant's own uia worker (callSession), never to a shared one.
  if (op.startsWith("a11y.")) throw uiError("invalid_argument", "Accessibility calls go through a session.");
  return sup.workers.capture;
}
