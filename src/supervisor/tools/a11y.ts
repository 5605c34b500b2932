import { z } from "zod";
import { uiError } from "../../shared/errors.js";
import { A11yNodeSchema } from "../../shared/protocol.js";
import type { CallContext } from "../chain.js";
import { formatElements, formatTree } from "../tree/format.js";
import { defineTool } from "./define.js";
import { ConfirmationToken, CorrelationId, EFFECT, READ_ONLY, withTarget } from "./shapes.js";

/** The worker protocol's node schema is the tools' output schema: one definition. */
const NodeOut = A11yNodeSchema;

const Ref = z.string().min(1).max(64).describe("Element ref from inspect_tree / find_elements, e.g. s1.e12.");

function session(ctx: CallContext) {
  return ctx.sup.sessions.sessionFor(ctx.client.hash, ctx.target!);
}

function refSession(ctx: CallContext, ref: string) {
  return ctx.sup.sessions.lookupRef(ref, ctx.client.hash);
}

function semanticTool(
  name: "invoke_element" | "toggle_element" | "select_element" | "expand_element" | "collapse_element",
  action: "invoke" | "toggle" | "select" | "expand" | "collapse",
  description: string,
) {
  return defineTool({
    name,
    title: name.replace("_", " "),
    description: `${description} Only through the semantic pattern; pattern_not_supported otherwise (never a click).`,
    capability: "interact",
    budget: "action",
    target: "ref",
    input: z.strictObject({ ref: Ref, confirmation_token: z.string().max(128).optional() }),
    output: z.object({ correlation_id: CorrelationId }),
    annotations: EFFECT,
    handler: async (ctx, args) => {
      const s = refSession(ctx, args.ref);
      await ctx.callSession(s, "a11y.act", {
        session_key: s.key,
        target: ctx.target!.expectation,
        ref: s.inner,
        action,
        value: null,
      });
      return { structured: { correlation_id: ctx.correlationId } };
    },
  });
}

export const a11yTools = [
  defineTool({
    name: "inspect_tree",
    title: "Inspect accessibility tree",
    description:
      "The window's accessibility tree (bounded: max_depth ≤ 32, max_nodes ≤ 5000, a deadline), with refs for semantic actions. Never reads values; password fields are redacted.",
    capability: "inspect",
    budget: "inspection",
    target: "window",
    input: withTarget({
      max_depth: z.number().int().min(0).max(32).default(8),
      max_nodes: z.number().int().min(1).max(5000).default(500),
      root_ref: Ref.optional(),
      confirmation_token: ConfirmationToken,
    }),
    output: z.object({
      correlation_id: CorrelationId,
      root: NodeOut,
      node_count: z.number().int(),
      truncated: z.boolean(),
    }),
    annotations: READ_ONLY,
    handler: async (ctx, args) => {
      const s = session(ctx);
      let rootRef: string | null = null;
      if (args.root_ref) {
        const r = refSession(ctx, args.root_ref);
        if (r.tag !== s.tag) throw uiError("element_stale", "The ref belongs to another window.");
        rootRef = r.inner;
      }
      const deadline = ctx.sup.config.treeDeadlineMs;
      const r = await ctx.callSession(
        s,
        "a11y.inspect",
        {
          session_key: s.key,
          target: ctx.target!.expectation,
          max_depth: args.max_depth,
          max_nodes: args.max_nodes,
          deadline_ms: deadline,
          root_ref: rootRef,
        },
        deadline + ctx.sup.config.workerDeadlineMs,
      );
      const root = ctx.sup.sessions.externalize(s, r.root);
      ctx.counters.nodes = r.node_count;
      ctx.counters.truncated = r.truncated;
      return {
        structured: {
          correlation_id: ctx.correlationId,
          root,
          node_count: r.node_count,
          truncated: r.truncated,
        },
        text: formatTree(root, { truncated: r.truncated, node_count: r.node_count }),
      };
    },
  }),

  defineTool({
    name: "find_elements",
    title: "Find elements",
    description: "Searches the window's accessibility tree by name substring, role and/or automation id.",
    capability: "inspect",
    budget: "inspection",
    target: "window",
    input: withTarget({
      name_contains: z.string().min(1).max(256).optional(),
      role: z.string().min(1).max(64).optional(),
      automation_id: z.string().min(1).max(256).optional(),
      max_results: z.number().int().min(1).max(500).default(50),
      confirmation_token: ConfirmationToken,
    }),
    output: z.object({ correlation_id: CorrelationId, elements: z.array(NodeOut), truncated: z.boolean() }),
    annotations: READ_ONLY,
    handler: async (ctx, args) => {
      const s = session(ctx);
      const deadline = ctx.sup.config.treeDeadlineMs;
      const r = await ctx.callSession(
        s,
        "a11y.find",
        {
          session_key: s.key,
          target: ctx.target!.expectation,
          name_contains: args.name_contains ?? null,
          role: args.role ?? null,
          automation_id: args.automation_id ?? null,
          max_results: args.max_results,
          deadline_ms: deadline,
        },
        deadline + ctx.sup.config.workerDeadlineMs,
      );
      const elements = r.elements.map((e) => ctx.sup.sessions.externalize(s, e));
      ctx.counters.results = elements.length;
      return {
        structured: { correlation_id: ctx.correlationId, elements, truncated: r.truncated },
        text: formatElements(elements, { truncated: r.truncated }),
      };
    },
  }),

  semanticTool("invoke_element", "invoke", "Invokes the element (Invoke pattern / AT-SPI action)."),
  semanticTool("toggle_element", "toggle", "Toggles the element (Toggle pattern)."),
  semanticTool("select_element", "select", "Selects the element (SelectionItem pattern)."),
  semanticTool("expand_element", "expand", "Expands the element (ExpandCollapse pattern)."),
  semanticTool("collapse_element", "collapse", "Collapses the element (ExpandCollapse pattern)."),

  defineTool({
    name: "set_element_value",
    title: "Set element value",
    description:
      "Sets the element's value through ValuePattern / EditableText. The value is never logged; a token is needed when the policy protects interact.",
    capability: "interact",
    budget: "action",
    target: "ref",
    input: z.strictObject({
      ref: Ref,
      value: z.string().max(4096),
      confirmation_token: z.string().max(128).optional(),
    }),
    output: z.object({ correlation_id: CorrelationId, chars: z.number().int() }),
    annotations: EFFECT,
    cost: (args) => ({ textChars: args.value.length }),
    handler: async (ctx, args) => {
      const s = refSession(ctx, args.ref);
      ctx.counters.chars = args.value.length;
      await ctx.callSession(s, "a11y.act", {
        session_key: s.key,
        target: ctx.target!.expectation,
        ref: s.inner,
        action: "set_value",
        value: args.value,
      });
      return { structured: { correlation_id: ctx.correlationId, chars: args.value.length } };
    },
  }),

  defineTool({
    name: "click_element",
    title: "Click element",
    description:
      "Clicks the centre of the live element, inside the consented window, after the same last-moment checks as click_window.",
    capability: "click",
    budget: "action",
    target: "ref",
    input: z.strictObject({
      ref: Ref,
      button: z.enum(["left", "right"]).default("left"),
      confirmation_token: z.string().max(128).optional(),
    }),
    output: z.object({
      correlation_id: CorrelationId,
      screen_x: z.number().int(),
      screen_y: z.number().int(),
    }),
    annotations: EFFECT,
    handler: async (ctx, args) => {
      const s = refSession(ctx, args.ref);
      const target = ctx.target!.expectation;
      const c = await ctx.callSession(s, "a11y.element_center", { session_key: s.key, target, ref: s.inner });
      const r = await ctx.call("input.pointer", {
        target,
        kind: args.button === "right" ? "right_click" : "click",
        x: c.x,
        y: c.y,
        focus_mode: ctx.sup.config.focusMode,
      });
      return { structured: { correlation_id: ctx.correlationId, ...r } };
    },
  }),
];
