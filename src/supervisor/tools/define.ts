import type { ImageContent, TextContent } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { CallContext, OneHopReply } from "../access/callContext.js";
import type { SessionRecord } from "../access/sessions.js";
import type { ResolvedTarget } from "../access/targets.js";
import { HwndSchema } from "../access/targets.js";
import type { BudgetKind } from "../budgets.js";
import type { EffectivePolicy } from "../policy/load.js";
import type { Capability } from "../policy/schema.js";
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
   * The target's resolution and the tool's work in one worker message, when this call allows it
   * (else null): the chain sends it instead of its own listing, resolves and authorizes the
   * target from the listing it brings, and only then lets the handler read what it holds
   * (ctx.held); a refused call drops it unread.
   */
  oneHop?(ctx: CallContext, args: z.output<I>, policy: EffectivePolicy): Promise<OneHopReply> | null;
  handler(ctx: CallContext, args: z.output<I>): Promise<ToolResult<z.output<O>>>;
}

/** The capability a tool exercises exists exactly for the "capability" mode. */
export type ToolAccess =
  | { mode: "capability"; capability: Capability }
  | { mode: Exclude<AccessMode, "capability">; capability: null };

/** One row of the tool table, as the chain, the listing and the audit read it. */
export type ToolDef<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> = ToolBase<I, O> &
  ToolAccess;

/** What every handler gets: who asks, cancellation, progress, the workers, counters, the charge. */
export type ToolCall = Omit<CallContext, "policy" | "target" | "grant" | "capability">;
/** A handler that runs under a usable policy. */
export type PolicyCall = ToolCall & { policy: EffectivePolicy };
/** A handler on a window whose identity the chain re-resolved just now. */
export type TargetCall = PolicyCall & { target: ResolvedTarget };
/** A handler on an element ref: its window as a target, and the ref's automation session. */
export type RefCall = TargetCall & { element: SessionRecord & { inner: string } };

/**
 * The chain always sets what a kind's handler is typed to receive; a context without it is a
 * bug in the server (reported as an internal error, never as a refusal of the client).
 */
function chainDidNotResolve(what: string): Error {
  return new Error(`the chain did not resolve the call's ${what}`);
}

function withPolicy(ctx: CallContext): PolicyCall {
  const { policy } = ctx;
  if (policy === null) throw chainDidNotResolve("policy");
  return { ...ctx, policy };
}

function withTargetOf(ctx: CallContext): TargetCall {
  const { target } = ctx;
  if (target === null) throw chainDidNotResolve("target");
  return { ...withPolicy(ctx), target };
}

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

interface KindSpec<I extends z.ZodType, O extends z.ZodRawShape, C> {
  name: string;
  title: string;
  description: string;
  effect: Effect;
  input: I;
  output: z.ZodObject<O>;
  audited?: false;
  /** The result carries the call's correlation_id (a wait, or a change to the server's state). */
  correlated?: true;
  handler(call: C, args: z.output<I>): Promise<ToolResult<z.output<z.ZodObject<O>>>>;
}

/** What a kind fixes about its rows besides the spec: access, budget, target, cost, refusals. */
type KindFields<A> = { budget: BudgetKind | "none"; target: TargetMode } & ToolAccess & {
    cost?: CostOf<A>;
    refuse?(args: A): void;
    oneHop?(ctx: CallContext, args: A, policy: EffectivePolicy): Promise<OneHopReply> | null;
  };

/** Builds the row of a kind; with `correlated` its output and results carry the correlation_id. */
function kindRow<I extends z.ZodType, O extends z.ZodRawShape, C>(
  spec: KindSpec<I, O, C>,
  fields: KindFields<z.output<I>>,
  callOf: (ctx: CallContext, args: z.output<I>) => C,
): ToolDef {
  const base = {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    input: spec.input,
    annotations: ANNOTATIONS[spec.effect],
    ...(spec.audited === false ? { audited: false as const } : {}),
    ...fields,
  };
  if (spec.correlated)
    return row({
      ...base,
      // Typed loosely here: correlate() puts the correlation_id in front of the handler's result.
      output: correlatedOutput(spec.output) as z.ZodType,
      handler: (ctx, args) => correlate(ctx.correlationId, spec.handler(callOf(ctx, args), args)),
    });
  return row({ ...base, output: spec.output, handler: (ctx, args) => spec.handler(callOf(ctx, args), args) });
}

/** A tool that needs no policy and no window: the server's own bookkeeping. */
export function defineOpenTool<I extends z.ZodType, O extends z.ZodRawShape>(
  spec: KindSpec<I, O, ToolCall>,
): ToolDef {
  return kindRow(spec, { mode: "open", capability: null, budget: "none", target: "none" }, (ctx) => ctx);
}

/** A tool that finds windows: under a usable policy whose rules filter what it shows. */
export function defineDiscoveryTool<I extends z.ZodType, O extends z.ZodRawShape>(
  spec: KindSpec<I, O, PolicyCall>,
): ToolDef {
  return kindRow(
    spec,
    { mode: "discovery", capability: null, budget: "discovery", target: "none" },
    withPolicy,
  );
}

/** A capability tool on no window (the server's own state, the desktop as a whole). */
export function defineMetaTool<I extends z.ZodType, O extends z.ZodRawShape>(
  spec: KindSpec<I, O, PolicyCall> & { capability: Capability; budget: BudgetKind | "none" },
): ToolDef {
  return kindRow(
    spec,
    { mode: "capability", capability: spec.capability, budget: spec.budget, target: "none" },
    withPolicy,
  );
}

/** A tool about access to a window (request_access, request_confirmation, preview_action). */
export function defineConsentTool<S extends z.ZodRawShape, O extends z.ZodRawShape>(
  spec: Omit<KindSpec<ReturnType<typeof withTarget<S>>, O, TargetCall>, "input"> & {
    mode: "consent" | "confirmation";
    args: S;
  },
): ToolDef {
  return kindRow(
    { ...spec, input: withTarget(spec.args) },
    { mode: spec.mode, capability: null, budget: "none", target: "window" },
    withTargetOf,
  );
}

/** Every capability tool on a window or element takes a confirmation_token besides its own arguments. */
const TokenArg = { confirmation_token: ConfirmationToken };

interface ActingSpec<I extends z.ZodType, O extends z.ZodRawShape, C>
  extends Omit<KindSpec<I, O, C>, "input" | "correlated"> {
  capability: Capability;
  budget: BudgetKind;
  cost?: CostOf<z.output<I>>;
  refuse?(args: z.output<I>): void;
  oneHop?(ctx: CallContext, args: z.output<I>, policy: EffectivePolicy): Promise<OneHopReply> | null;
}

function actingRow<I extends z.ZodType, O extends z.ZodRawShape, C>(
  spec: ActingSpec<I, O, C>,
  input: I,
  target: "window" | "ref",
  callOf: (ctx: CallContext, args: z.output<I>) => C,
): ToolDef {
  const { cost, refuse, oneHop } = spec;
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
    },
    callOf,
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
export function defineWindowTool<S extends z.ZodRawShape, O extends z.ZodRawShape>(
  spec: ActingSpec<ReturnType<typeof windowInput<S>>, O, TargetCall> & { args: S },
): ToolDef {
  return actingRow(spec, windowInput(spec.args), "window", withTargetOf);
}

/** defineWindowTool for a window chosen by hwnd only: a minimized one is not listed, so no title finds it. */
export function defineHwndTool<S extends z.ZodRawShape, O extends z.ZodRawShape>(
  spec: ActingSpec<ReturnType<typeof hwndInput<S>>, O, TargetCall> & { args: S },
): ToolDef {
  return actingRow(spec, hwndInput(spec.args), "window", withTargetOf);
}

/**
 * A capability tool on an element ref from inspect_tree / find_elements: the chain re-resolves
 * the ref's window; the handler gets the ref's automation session as `element`.
 */
export function defineRefTool<S extends z.ZodRawShape, O extends z.ZodRawShape>(
  spec: ActingSpec<ReturnType<typeof refInput<S>>, O, RefCall> & { args: S },
): ToolDef {
  return actingRow(spec, refInput(spec.args), "ref", (ctx, args) => {
    const call = withTargetOf(ctx);
    // Looked up again after the chain's own await: a session that ended meanwhile is element_stale.
    return { ...call, element: call.sup.sessions.lookupRef(refOf(args), call.client.hash) };
  });
}

/** The parsed arguments' ref (refInput makes it a required string). */
function refOf(args: unknown): string {
  return typeof args === "object" && args !== null && "ref" in args && typeof args.ref === "string"
    ? args.ref
    : "";
}
