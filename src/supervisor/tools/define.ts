import type { ImageContent, TextContent } from "@modelcontextprotocol/sdk/types.js";
import type { z } from "zod";
import type { BudgetKind } from "../budgets.js";
import type { CallContext } from "../chain.js";
import type { EffectivePolicy } from "../policy/load.js";
import type { Capability } from "../policy/schema.js";
import type { ResolvedTarget } from "../targets.js";

/**
 * What a tool needs from the authorization chain before its handler runs:
 * - "none": no policy, no target (health_check, get_access_state, …)
 * - "discovery": a configured policy; results filtered by it
 * - a capability: policy ceiling → target → grant → capability → token → budgets
 */
export type ToolCapability = "none" | "discovery" | "consent" | "per_class" | Capability;

/** How the chain finds the target window. */
export type TargetMode = "none" | "window" | "ref";

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

export interface ToolDef<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  description: string;
  capability: ToolCapability;
  /** Which per-client rate budget a call consumes. */
  budget: BudgetKind | "none";
  target: TargetMode;
  /** Whether the call produces an effect or waits (gets a correlation_id in its result). */
  input: I;
  output: O;
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean };
  /**
   * false: the call writes no audit event (SPEC §6: get_audit_events, get_rate_limit_state and
   * get_virtual_screen_bounds, which read state and would otherwise fill the ring with themselves).
   */
  audited?: false;
  /**
   * Per-application amounts this call will use (typed characters, screenshot pixels),
   * taken by the chain together with the call's rate budget, all or nothing.
   */
  cost?(
    args: z.output<I>,
    policy: EffectivePolicy,
    target: ResolvedTarget,
  ): { textChars?: number; screenshotPixels?: number };
  handler(ctx: CallContext, args: z.output<I>): Promise<ToolResult<z.output<O>>>;
}

/** Keeps each entry's input and output types tied to its handler. */
export function defineTool<I extends z.ZodType, O extends z.ZodType>(def: ToolDef<I, O>): ToolDef {
  return def as unknown as ToolDef;
}
