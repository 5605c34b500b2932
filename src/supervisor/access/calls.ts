import type { ApplicationCharge } from "../budgets.js";
import type { EffectivePolicy } from "../policy/load.js";
import type { Capability } from "../policy/schema.js";
import type { ClassDecision, HeldShot, ProgressReporter } from "./callFacts.js";
import type { ClientIdentity } from "./clientIdentity.js";
import type { Grant } from "./grants.js";
import type { Services } from "./services.js";
import type { SessionRecord } from "./sessions.js";
import type { ResolvedTarget } from "./targets.js";

export type {
  AheadCall,
  AheadOp,
  AheadSession,
  ClassDecision,
  HeldObservation,
  HeldShot,
  OneHopCall,
  OneHopReply,
  ProgressReporter,
} from "./callFacts.js";

/**
 * What the authorization chain established about one call, as it goes: the audit event is made
 * from it whether or not the call got through (src/supervisor/mcp/server.ts). Handlers never
 * see it; they get the call object their tool kind makes from it.
 */
export interface ChainRecord {
  readonly correlationId: string;
  readonly client: ClientIdentity;
  /** Numeric/boolean audit counters for this call (never content). */
  readonly counters: Record<string, number | boolean>;
  readonly policy: EffectivePolicy | null;
  readonly target: ResolvedTarget | null;
  readonly grant: Grant | null;
  /** The capability this call exercises (request_confirmation: the class it names). */
  readonly capability: Capability | null;
  /**
   * The typed characters / captured pixels this call booked on the application's budgets, or
   * null. A handler gives them back (refund) only when it is certain nothing was typed or shown.
   */
  readonly charge: ApplicationCharge | null;
  /** For the tools about one action class (request_confirmation, preview_action): the decision. */
  readonly decision: ClassDecision | null;
  /** The tool's work done in the message that resolved the target (ToolDef.oneHop), or null. */
  readonly held: HeldShot | null;
}

/** What the chain hands a row's handler once access is decided: the record and the services. */
export interface Admitted {
  record: ChainRecord;
  signal: AbortSignal;
  progress: ProgressReporter;
  /** Exactly the services the row names (ToolDef.uses), built for this call. */
  services: Partial<Services>;
}

/** What every handler gets: who asks, the correlation id, cancellation, progress, the counters. */
export interface CallBase {
  readonly correlationId: string;
  readonly client: ClientIdentity;
  readonly signal: AbortSignal;
  readonly progress: ProgressReporter;
  /** The call's audit counters: the one part a handler writes (numbers and booleans only). */
  readonly counters: Record<string, number | boolean>;
}

/** A handler under a usable policy. */
export interface PolicyCall extends CallBase {
  readonly policy: EffectivePolicy;
}

/** A handler about a window whose identity the chain re-resolved just now. */
export interface WindowCall extends PolicyCall {
  readonly target: ResolvedTarget;
}

/** A handler that reads the one access decision for the class it names. */
export interface DecisionCall extends WindowCall {
  readonly decision: ClassDecision;
}

/** A capability tool on a window: its grant, token and budgets passed; the charge it booked. */
export interface ActingCall extends WindowCall {
  readonly charge: ApplicationCharge | null;
}

/** A capability tool on an element ref: its window as the target, and the ref's session. */
export interface RefCall extends ActingCall {
  readonly element: SessionRecord & { inner: string };
}

/** A kind's call with the services its row names, and nothing else. */
export type WithServices<C, U extends keyof Services> = C & Readonly<Pick<Services, U>>;

/**
 * The chain always sets what a kind's handler is typed to receive; a record without it is a
 * bug in the server (reported as an internal error, never as a refusal of the client).
 */
function chainDidNotResolve(what: string): Error {
  return new Error(`the chain did not resolve the call's ${what}`);
}

function present<T>(v: T | null, what: string): T {
  if (v === null) throw chainDidNotResolve(what);
  return v;
}

/** The call object of a kind: its fields and exactly `uses` of the built services, frozen. */
export function callObject<C extends CallBase, U extends keyof Services>(
  a: Admitted,
  fields: Omit<C, keyof CallBase>,
  uses: readonly U[],
): WithServices<C, U> {
  const picked: Partial<Record<U, unknown>> = {};
  for (const name of uses) picked[name] = present(a.services[name] ?? null, `${name} service`);
  return Object.freeze({
    correlationId: a.record.correlationId,
    client: a.record.client,
    signal: a.signal,
    progress: a.progress,
    counters: a.record.counters,
    ...fields,
    ...picked,
  }) as WithServices<C, U>;
}

export const policyOf = (a: Admitted): EffectivePolicy => present(a.record.policy, "policy");
export const targetOf = (a: Admitted): ResolvedTarget => present(a.record.target, "target");
export const decisionOf = (a: Admitted): ClassDecision => present(a.record.decision, "decision");
