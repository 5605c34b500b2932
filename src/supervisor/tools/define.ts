import type { ImageContent, TextContent } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import {
  type ActingCall,
  type Admitted,
  type AheadCall,
  type CallBase,
  callObject,
  type DecisionCall,
  decisionOf,
  type HeldObservation,
  type OneHopCall,
  type OneHopReply,
  type PolicyCall,
  policyOf,
  type RefCall,
  targetOf,
  type WindowCall,
  type WithServices,
} from "../access/calls.js";
import type { ServiceName } from "../access/services.js";
import type { ResolvedTarget } from "../access/targets.js";
import { HwndSchema } from "../access/targets.js";
import type { BudgetKind } from "../budgets.js";
import type { EffectivePolicy } from "../policy/load.js";
import type { Capability, CapabilitySchema } from "../policy/schema.js";
import { ConfirmationToken, CorrelationId, Ref, withTarget } from "./shapes.js";

/**
 * What the authorization chain establishes before a tool's handler runs (src/supervisor/access/chain.ts):
 * - "open": nothing (health_check, get_access_state, release_access, …)
 * - "discovery": a usable policy, whose rules filter the results; the discovery budget
 * - "consent": a usable policy and the target (request_access, preview_action): the call is about
 *   a grant, so it needs none
 * - "confirmation": the same, for the capability the call names (request_confirmation)
 * - "capability": the policy ceiling, and with a target its grant, token and budgets
 */
export type AccessMode = "open" | "discovery" | "consent" | "confirmation" | "capability";

/** How the chain finds the target window. */
export type TargetMode = "none" | "window" | "ref";

/** The MCP annotations a tool's effect implies (openWorldHint follows from its capability). */
export type Effect = "read_only" | "effect" | "idempotent_effect" | "destructive";

const ANNOTATIONS = {
  read_only: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
  effect: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
  idempotent_effect: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
  destructive: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
} as const satisfies Record<Effect, ToolAnnotations>;

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
}

export interface ToolResult<O> {
  structured: O;
  /** Extra content blocks (images); a JSON text block of `structured` is always added. */
  content?: Array<ImageContent | TextContent>;
  /** A compact text form shown instead of the JSON text block (tree snapshots). */
  text?: string;
  _meta?: Record<string, unknown>;
  /** Numeric/boolean audit counters (never content). */
  counters?: Record<string, number | boolean>;
}

/** Per-application amounts a call will use, taken by the chain with its rate budget, all or nothing. */
export type CostOf<A> = (
  args: A,
  policy: EffectivePolicy,
  target: ResolvedTarget,
) => { textChars?: number; screenshotPixels?: number };

interface ToolBase<I extends z.ZodType, O extends z.ZodType> {
  name: string;
  title: string;
  description: string;
  /** Which per-client rate budget a call consumes. */
  budget: BudgetKind | "none";
  target: TargetMode;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  /**
   * false: the call writes no audit event (docs/spec.md §6: get_audit_events, get_rate_limit_state and
   * get_virtual_screen_bounds, which read state and would otherwise fill the ring with themselves).
   */
  audited?: false;
  cost?: CostOf<z.output<I>>;
  /**
   * Refusals that need nothing but the arguments (a system chord), checked by the chain after
   * the grant and token and before any budget is taken or the token is used up.
   */
  refuse?(args: z.output<I>): void;
  /**
   * The services the chain builds for the handler (src/supervisor/access/services.ts); the
   * handler's call object carries these and nothing else of the supervisor.
   */
  uses: readonly ServiceName[];
  /**
   * A tool about one action class (its `action_class` argument): the chain makes the access
   * decision for it and hands it over. "issue": the token's class (request_confirmation);
   * "report": a preview, which also looks whether the client holds a token.
   */
  decides?: "issue" | "report";
  /**
   * The target's resolution and the tool's work in one worker message, when this call allows it
   * (else null): the chain sends it instead of its own listing, resolves and authorizes the
   * target from the listing it brings, and only then lets the handler read what it holds
   * (its capture service's `held`); a refused call drops it unread.
   */
  oneHop?(call: OneHopCall, args: z.output<I>, policy: EffectivePolicy): Promise<OneHopReply> | null;
  /**
   * An observation sent to the caller's open session while the chain resolves the target from
   * its own listing, when this call allows it (else null): the handler reads it only if the call
   * was authorized for exactly the session, expectation and limits it went with (its sessions
   * service's `observe`), else asks afresh; a refused call drops it unread.
   */
  observeAhead?(call: AheadCall, args: z.output<I>): HeldObservation | null;
  handler(call: Admitted, args: z.output<I>): Promise<ToolResult<z.output<O>>>;
}

/** The capability a tool exercises exists exactly for the "capability" mode. */
export type ToolAccess =
  | { mode: "capability"; capability: Capability }
  | { mode: Exclude<AccessMode, "capability">; capability: null };

/** One row of the tool table, as the chain, the listing and the audit read it. */
export type ToolDef<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> = ToolBase<I, O> &
  ToolAccess;

export type { ActingCall, CallBase, DecisionCall, PolicyCall, RefCall, WindowCall };

/** The services each kind may name: a kind that has no target cannot ask for input. */
export type OpenServices = "desktop" | "grants" | "policies" | "server";
export type DiscoveryServices = "desktop";
export type MetaServices = "desktop" | "usage" | "grants" | "audit";
export type ConsentServices = "consent" | "desktop";
export type DecisionServices = "tokens";
export type WindowServices = "desktop" | "capture" | "input" | "sessions";
export type RefServices = "sessions" | "input";

const CorrelationOutput = z.object({ correlation_id: CorrelationId });

/** The tool's output schema with correlation_id first (docs/spec.md §6: effects and waits carry one). */
function correlatedOutput<S extends z.ZodRawShape>(output: z.ZodObject<S>) {
  return CorrelationOutput.extend(output.shape);
}

/** Puts the call's correlation_id first in the result, where the output schema has it. */
async function correlate<O extends Record<string, unknown>>(
  correlationId: string,
  result: Promise<ToolResult<O>>,
): Promise<ToolResult<{ correlation_id: string } & O>> {
  const r = await result;
  return { ...r, structured: { correlation_id: correlationId, ...r.structured } };
}

/** Keeps each entry's input and output types tied to its handler. */
function row<I extends z.ZodType, O extends z.ZodType>(def: ToolDef<I, O>): ToolDef {
  return def as unknown as ToolDef;
}

interface KindSpec<I extends z.ZodType, O extends z.ZodRawShape, C, U extends ServiceName> {
  name: string;
  title: string;
  description: string;
  effect: Effect;
  input: I;
  output: z.ZodObject<O>;
  audited?: false;
  /** The result carries the call's correlation_id (a wait, or a change to the server's state). */
  correlated?: true;
  /** The services the handler uses; its call object carries exactly these. */
  uses?: readonly U[];
  handler(call: WithServices<C, U>, args: z.output<I>): Promise<ToolResult<z.output<z.ZodObject<O>>>>;
}

/** What a kind fixes about its rows besides the spec: access, budget, target, cost, refusals. */
type KindFields<A> = { budget: BudgetKind | "none"; target: TargetMode } & ToolAccess & {
    cost?: CostOf<A>;
    refuse?(args: A): void;
    decides?: "issue" | "report";
    oneHop?(call: OneHopCall, args: A, policy: EffectivePolicy): Promise<OneHopReply> | null;
    observeAhead?(call: AheadCall, args: A): HeldObservation | null;
  };

/** Builds the row of a kind; with `correlated` its output and results carry the correlation_id. */
function kindRow<I extends z.ZodType, O extends z.ZodRawShape, C, U extends ServiceName>(
  spec: KindSpec<I, O, C, U>,
  fields: KindFields<z.output<I>>,
  callOf: (a: Admitted, uses: readonly U[], args: z.output<I>) => WithServices<C, U>,
  built: readonly ServiceName[] = [],
): ToolDef {
  const uses = spec.uses ?? [];
  const base = {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    input: spec.input,
    annotations: ANNOTATIONS[spec.effect],
    ...(spec.audited === false ? { audited: false as const } : {}),
    ...fields,
    uses: [...new Set<ServiceName>([...uses, ...built])],
  };
  if (spec.correlated)
    return row({
      ...base,
      // Typed loosely here: correlate() puts the correlation_id in front of the handler's result.
      output: correlatedOutput(spec.output) as z.ZodType,
      handler: async (a, args) =>
        correlate(a.record.correlationId, spec.handler(callOf(a, uses, args), args)),
    });
  return row({
    ...base,
    output: spec.output,
    handler: async (a, args) => spec.handler(callOf(a, uses, args), args),
  });
}

const baseCall = <U extends ServiceName>(a: Admitted, uses: readonly U[]) =>
  callObject<CallBase, U>(a, {}, uses);
const policyCall = <U extends ServiceName>(a: Admitted, uses: readonly U[]) =>
  callObject<PolicyCall, U>(a, { policy: policyOf(a) }, uses);
const windowCall = <U extends ServiceName>(a: Admitted, uses: readonly U[]) =>
  callObject<WindowCall, U>(a, { policy: policyOf(a), target: targetOf(a) }, uses);
const actingCall = <U extends ServiceName>(a: Admitted, uses: readonly U[]) =>
  callObject<ActingCall, U>(a, { policy: policyOf(a), target: targetOf(a), charge: a.record.charge }, uses);

/** A tool that needs no policy and no window: the server's own bookkeeping. */
export function defineOpenTool<I extends z.ZodType, O extends z.ZodRawShape, U extends OpenServices = never>(
  spec: KindSpec<I, O, CallBase, U>,
): ToolDef {
  return kindRow(spec, { mode: "open", capability: null, budget: "none", target: "none" }, baseCall);
}

/** A tool that finds windows: under a usable policy whose rules filter what it shows. */
export function defineDiscoveryTool<
  I extends z.ZodType,
  O extends z.ZodRawShape,
  U extends DiscoveryServices = never,
>(spec: KindSpec<I, O, PolicyCall, U>): ToolDef {
  return kindRow(
    spec,
    { mode: "discovery", capability: null, budget: "discovery", target: "none" },
    policyCall,
  );
}

/** A capability tool on no window (the server's own state, the desktop as a whole). */
export function defineMetaTool<I extends z.ZodType, O extends z.ZodRawShape, U extends MetaServices = never>(
  spec: KindSpec<I, O, PolicyCall, U> & { capability: Capability; budget: BudgetKind | "none" },
): ToolDef {
  return kindRow(
    spec,
    { mode: "capability", capability: spec.capability, budget: spec.budget, target: "none" },
    policyCall,
  );
}

/** A tool that asks for access to a window (request_access): the call is about a grant, so it needs none. */
export function defineConsentTool<
  S extends z.ZodRawShape,
  O extends z.ZodRawShape,
  U extends ConsentServices = never,
>(spec: Omit<KindSpec<ReturnType<typeof withTarget<S>>, O, WindowCall, U>, "input"> & { args: S }): ToolDef {
  return kindRow(
    { ...spec, input: withTarget(spec.args) },
    { mode: "consent", capability: null, budget: "none", target: "window" },
    windowCall,
  );
}

/**
 * A tool about one action class on a window (request_confirmation, preview_action): the chain
 * makes the one access decision for the `action_class` it names, and the handler reads it.
 */
export function defineDecisionTool<
  S extends { action_class: typeof CapabilitySchema } & z.ZodRawShape,
  O extends z.ZodRawShape,
  U extends DecisionServices = never,
>(
  spec: Omit<KindSpec<ReturnType<typeof withTarget<S>>, O, DecisionCall, U>, "input"> & {
    /** "issue": a token for the class (mode confirmation); "report": what the action would get. */
    decides: "issue" | "report";
    args: S;
  },
): ToolDef {
  return kindRow(
    { ...spec, input: withTarget(spec.args) },
    {
      mode: spec.decides === "issue" ? "confirmation" : "consent",
      capability: null,
      budget: "none",
      target: "window",
      decides: spec.decides,
    },
    (a, uses) =>
      callObject<DecisionCall, U>(
        a,
        { policy: policyOf(a), target: targetOf(a), decision: decisionOf(a) },
        uses,
      ),
  );
}

/** Every capability tool on a window or element takes a confirmation_token besides its own arguments. */
const TokenArg = { confirmation_token: ConfirmationToken };

interface ActingSpec<I extends z.ZodType, O extends z.ZodRawShape, C, U extends ServiceName>
  extends Omit<KindSpec<I, O, C, U>, "input" | "correlated"> {
  capability: Capability;
  budget: BudgetKind;
  cost?: CostOf<z.output<I>>;
  refuse?(args: z.output<I>): void;
  oneHop?(call: OneHopCall, args: z.output<I>, policy: EffectivePolicy): Promise<OneHopReply> | null;
  observeAhead?(call: AheadCall, args: z.output<I>): HeldObservation | null;
}

function actingRow<I extends z.ZodType, O extends z.ZodRawShape, C, U extends ServiceName>(
  spec: ActingSpec<I, O, C, U>,
  input: I,
  target: "window" | "ref",
  callOf: (a: Admitted, uses: readonly U[], args: z.output<I>) => WithServices<C, U>,
  built: readonly ServiceName[] = [],
): ToolDef {
  const { cost, refuse, oneHop, observeAhead } = spec;
  return kindRow(
    { ...spec, input, correlated: true },
    {
      mode: "capability",
      capability: spec.capability,
      budget: spec.budget,
      target,
      ...(cost ? { cost } : {}),
      ...(refuse ? { refuse } : {}),
      ...(oneHop ? { oneHop } : {}),
      ...(observeAhead ? { observeAhead } : {}),
    },
    callOf,
    built,
  );
}

const windowInput = <S extends z.ZodRawShape>(args: S) => withTarget({ ...args, ...TokenArg });
const hwndInput = <S extends z.ZodRawShape>(args: S) =>
  z.strictObject({ hwnd: HwndSchema, ...args, ...TokenArg });
const refInput = <S extends z.ZodRawShape>(args: S) => z.strictObject({ ref: Ref, ...args, ...TokenArg });

/**
 * A capability tool on one window, chosen by hwnd or title_contains. It takes a
 * confirmation_token and its result carries the correlation_id.
 */
export function defineWindowTool<
  S extends z.ZodRawShape,
  O extends z.ZodRawShape,
  U extends WindowServices = never,
>(spec: ActingSpec<ReturnType<typeof windowInput<S>>, O, ActingCall, U> & { args: S }): ToolDef {
  return actingRow(spec, windowInput(spec.args), "window", actingCall);
}

/** defineWindowTool for a window chosen by hwnd only: a minimized one is not listed, so no title finds it. */
export function defineHwndTool<
  S extends z.ZodRawShape,
  O extends z.ZodRawShape,
  U extends WindowServices = never,
>(spec: ActingSpec<ReturnType<typeof hwndInput<S>>, O, ActingCall, U> & { args: S }): ToolDef {
  return actingRow(spec, hwndInput(spec.args), "window", actingCall);
}

/**
 * A capability tool on an element ref from inspect_tree / find_elements: the chain re-resolves
 * the ref's window; the handler gets the ref's automation session as `element`.
 */
export function defineRefTool<
  S extends z.ZodRawShape,
  O extends z.ZodRawShape,
  U extends RefServices = never,
>(spec: ActingSpec<ReturnType<typeof refInput<S>>, O, RefCall, U> & { args: S }): ToolDef {
  return actingRow(
    spec,
    refInput(spec.args),
    "ref",
    (a, uses, args) => {
      const sessions = a.services.sessions;
      if (!sessions) throw new Error("the chain did not build the ref's sessions service");
      // Looked up again after the chain's own await: a session that ended meanwhile is element_stale.
      const element = sessions.lookupRef(refOf(args));
      return callObject<RefCall, U>(
        a,
        { policy: policyOf(a), target: targetOf(a), charge: a.record.charge, element },
        uses,
      );
    },
    // The ref's session is looked up through it, whether or not the handler uses it too.
    ["sessions"],
  );
}

/** The parsed arguments' ref (refInput makes it a required string). */
function refOf(args: unknown): string {
  return typeof args === "object" && args !== null && "ref" in args && typeof args.ref === "string"
    ? args.ref
    : "";
}
