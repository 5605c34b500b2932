import { z } from "zod";
import { uiError } from "../../shared/errors.js";
import { A11yNodeSchema, type OpArgs, type TargetExpectation } from "../../shared/protocol.js";
import type { SessionService } from "../access/services.js";
import { formatElements, formatTree } from "../tree/format.js";
import { defineRefTool, defineWindowTool, type Effect, type RefCall } from "./define.js";
import {
  Changes,
  ChangesOut,
  Expect,
  type ExpectArg,
  NOT_DELIVERED,
  type ObserveCall,
  StateArg,
  waitForCondition,
  withObservation,
} from "./observe.js";
import { Ref } from "./shapes.js";

/** The worker protocol's node schema is the tools' output schema: one definition. */
const NodeOut = A11yNodeSchema;

/** The window's automation session (one per grant and window; made on first use). */
function session(ctx: ObserveCall) {
  return ctx.sessions.forTarget();
}

/** What find_elements and wait_for_element match on. */
const SearchShape = {
  name_contains: z.string().min(1).max(256).optional(),
  role: z.string().min(1).max(64).optional(),
  automation_id: z.string().min(1).max(256).optional(),
  state: StateArg.optional(),
};

/** What an action's result carries besides its own fields when expect / changes were given. */
const Observed = {
  verified: z.boolean().optional(),
  /** Why verified is false without waiting: the display server did not deliver our press to the target. */
  unverified_reason: z.enum(["press_not_delivered"]).optional(),
  elapsed_ms: z.number().optional(),
  changes: ChangesOut.optional(),
};
const ObserveArgs = { expect: Expect.optional(), changes: Changes };

/**
 * What a tree result carries: "outline" (the default) is the text outline alone, with counts in
 * structuredContent; "full" adds every node's fields as structuredContent (the outline stays the
 * text). `fields` adds to each outline line.
 */
const DetailArgs = {
  detail: z.enum(["outline", "full"]).default("outline"),
  fields: z
    .array(z.enum(["bounds", "patterns"]))
    .max(2)
    .default([]),
};
const lineFields = (fields: readonly ("bounds" | "patterns")[]) => ({
  bounds: fields.includes("bounds"),
  patterns: fields.includes("patterns"),
});

/**
 * What a result shows of each node beside role, name and states: with detail "full" every
 * field; the outline only the `fields` asked for. The walk skips the calls only the others need.
 */
function shownFields(args: { detail: "outline" | "full"; fields: readonly ("bounds" | "patterns")[] }): {
  patterns: boolean;
  bounds: boolean;
} {
  return args.detail === "full" ? { patterns: true, bounds: true } : lineFields(args.fields);
}

/** The uia worker's a11y.inspect for a session and expectation (the same whether sent ahead or not). */
function inspectArgs(
  sessionKey: string,
  target: TargetExpectation,
  args: {
    max_depth: number;
    max_nodes: number;
    detail: "outline" | "full";
    fields: readonly ("bounds" | "patterns")[];
  },
  rootRef: string | null,
  deadlineMs: number,
): OpArgs<"a11y.inspect"> {
  return {
    session_key: sessionKey,
    target,
    max_depth: args.max_depth,
    max_nodes: args.max_nodes,
    deadline_ms: deadlineMs,
    root_ref: rootRef,
    // The outline shows patterns and bounds only when asked: without them the walk reads no
    // action names and asks extents only where a state needs them.
    ...shownFields(args),
  };
}

/** The uia worker's a11y.find for a session and expectation (the same whether sent ahead or not). */
function findArgs(
  sessionKey: string,
  target: TargetExpectation,
  args: {
    name_contains?: string | undefined;
    role?: string | undefined;
    automation_id?: string | undefined;
    state?: OpArgs<"a11y.find">["state"] | undefined;
    max_results: number;
    detail: "outline" | "full";
    fields: readonly ("bounds" | "patterns")[];
  },
  deadlineMs: number,
): OpArgs<"a11y.find"> {
  return {
    session_key: sessionKey,
    target,
    name_contains: args.name_contains ?? null,
    role: args.role ?? null,
    automation_id: args.automation_id ?? null,
    state: args.state ?? null,
    max_results: args.max_results,
    deadline_ms: deadlineMs,
    ...shownFields(args),
  };
}

type Action =
  | "invoke"
  | "toggle"
  | "select"
  | "expand"
  | "collapse"
  | "scroll_into_view"
  | "select_option"
  | "set_value";

/** One semantic action on a ref's element, with the call's optional expect / changes around it. */
function actObserved<R extends Record<string, unknown>>(
  ctx: RefCall & { readonly sessions: SessionService },
  args: { expect?: ExpectArg | undefined; changes?: boolean | undefined },
  action: Action,
  value: string | null,
  result: R,
) {
  const s = ctx.element;
  return withObservation(ctx, s, args, async () => {
    await ctx.sessions.call(s, "a11y.act", {
      session_key: s.key,
      target: ctx.target.expectation,
      ref: s.inner,
      action,
      value,
    });
    return result;
  });
}

type SemanticName =
  | "invoke_element"
  | "toggle_element"
  | "select_element"
  | "expand_element"
  | "collapse_element"
  | "scroll_into_view";

function semanticTool(
  name: SemanticName,
  action: Exclude<Action, "select_option" | "set_value">,
  description: string,
  effect: Extract<Effect, "effect" | "destructive">,
) {
  return defineRefTool({
    name,
    title: name.replace(/_/g, " "),
    description,
    capability: "interact",
    budget: "action",
    args: ObserveArgs,
    output: z.object(Observed),
    effect,
    uses: ["sessions"],
    handler: async (ctx, args) => ({ structured: await actObserved(ctx, args, action, null, {}) }),
  });
}

export const a11yTools = [
  defineWindowTool({
    name: "inspect_tree",
    title: "Inspect accessibility tree",
    description:
      'Accessibility tree (and open popups) as an outline: role "name" [states] [ref=…] per line. detail=full: nodes as JSON too.',
    capability: "inspect",
    budget: "inspection",
    args: {
      max_depth: z.number().int().min(0).max(32).default(8),
      max_nodes: z.number().int().min(1).max(5000).default(500),
      root_ref: Ref.optional(),
      ...DetailArgs,
    },
    output: z.object({
      root: NodeOut.optional(),
      popups: z.array(NodeOut).optional(),
      node_count: z.number().int(),
      truncated: z.boolean(),
    }),
    effect: "read_only",
    uses: ["sessions"],
    // A whole window by hwnd: a subtree's ref and a title are resolved before anything is sent.
    observeAhead: (call, args) => {
      if (args.hwnd === undefined || args.root_ref !== undefined) return null;
      const on = call.sessionOn(args.hwnd);
      return (
        on &&
        call.send(on, "a11y.inspect", inspectArgs(on.session.key, on.target, args, null, call.treeDeadlineMs))
      );
    },
    handler: async (ctx, args) => {
      const s = session(ctx);
      let rootRef: string | null = null;
      if (args.root_ref) {
        const r = ctx.sessions.lookupRef(args.root_ref);
        if (r.tag !== s.tag) throw uiError("element_stale", "The ref belongs to another window.");
        rootRef = r.inner;
      }
      const deadline = ctx.sessions.treeDeadlineMs;
      const { answer: r, ahead } = await ctx.sessions.observe(
        s,
        "a11y.inspect",
        inspectArgs(s.key, ctx.target.expectation, args, rootRef, deadline),
        deadline + ctx.sessions.deadlineMs,
      );
      const root = ctx.sessions.externalize(s, r.root);
      const popups = r.popups.map((p) => ctx.sessions.externalize(s, p));
      ctx.counters.nodes = r.node_count;
      ctx.counters.ahead = ahead;
      ctx.counters.popups = popups.length;
      ctx.counters.truncated = r.truncated;
      const summary = { truncated: r.truncated, node_count: r.node_count };
      const options = { ...lineFields(args.fields), collapse: true };
      const counts = { node_count: r.node_count, truncated: r.truncated };
      return {
        structured: args.detail === "full" ? { root, popups, ...counts } : counts,
        text: [root, ...popups]
          .map((n, i, all) =>
            formatTree(n, { ...summary, truncated: i === all.length - 1 && r.truncated }, options),
          )
          .join("\n"),
      };
    },
  }),

  defineWindowTool({
    name: "find_elements",
    title: "Find elements",
    description:
      "Elements of the tree and popups by name substring, role, automation id, state; one line each (detail=full: JSON too).",
    capability: "inspect",
    budget: "inspection",
    args: {
      ...SearchShape,
      max_results: z.number().int().min(1).max(500).default(50),
      ...DetailArgs,
    },
    output: z.object({
      elements: z.array(NodeOut).optional(),
      count: z.number().int(),
      truncated: z.boolean(),
    }),
    effect: "read_only",
    uses: ["sessions"],
    observeAhead: (call, args) => {
      if (args.hwnd === undefined) return null;
      const on = call.sessionOn(args.hwnd);
      return on && call.send(on, "a11y.find", findArgs(on.session.key, on.target, args, call.treeDeadlineMs));
    },
    handler: async (ctx, args) => {
      const s = session(ctx);
      const deadline = ctx.sessions.treeDeadlineMs;
      const { answer: r, ahead } = await ctx.sessions.observe(
        s,
        "a11y.find",
        findArgs(s.key, ctx.target.expectation, args, deadline),
        deadline + ctx.sessions.deadlineMs,
      );
      const elements = r.elements.map((e) => ctx.sessions.externalize(s, e));
      ctx.counters.results = elements.length;
      ctx.counters.ahead = ahead;
      const counts = { count: elements.length, truncated: r.truncated };
      return {
        structured: args.detail === "full" ? { elements, ...counts } : counts,
        text: formatElements(elements, { truncated: r.truncated }, lineFields(args.fields)),
      };
    },
  }),

  defineWindowTool({
    name: "wait_for_element",
    title: "Wait for an element",
    description: "Waits (≤ 30 s) until an element matching the search exists (gone: until none does).",
    capability: "inspect",
    budget: "inspection",
    args: {
      ...SearchShape,
      gone: z.boolean().default(false),
      timeout_ms: z.number().int().min(0).max(30_000).default(5000),
    },
    output: z.object({
      elapsed_ms: z.number(),
      element: NodeOut.optional(),
    }),
    effect: "read_only",
    uses: ["sessions"],
    handler: async (ctx, args) => {
      if (args.name_contains === undefined && args.role === undefined && args.automation_id === undefined)
        throw uiError("invalid_argument", "Give name_contains, role or automation_id.");
      const s = session(ctx);
      const r = await waitForCondition(
        ctx,
        s,
        {
          ref: null,
          name_contains: args.name_contains ?? null,
          role: args.role ?? null,
          automation_id: args.automation_id ?? null,
          state: args.state ?? null,
          gone: args.gone,
        },
        args.timeout_ms,
        true,
      );
      if (r === "timeout") throw uiError("timeout");
      const element = r.element === null ? undefined : ctx.sessions.externalize(s, r.element);
      return {
        structured: {
          elapsed_ms: r.elapsed_ms,
          ...(element ? { element } : {}),
        },
        ...(element ? { text: formatElements([element]) } : {}),
      };
    },
  }),

  semanticTool("invoke_element", "invoke", "Invokes the element (Invoke / AT-SPI action).", "destructive"),
  semanticTool("toggle_element", "toggle", "Toggles the element (Toggle pattern).", "destructive"),
  semanticTool("select_element", "select", "Selects the element (SelectionItem pattern).", "destructive"),
  semanticTool("expand_element", "expand", "Expands the element (ExpandCollapse pattern).", "effect"),
  semanticTool("collapse_element", "collapse", "Collapses the element (ExpandCollapse pattern).", "effect"),
  semanticTool(
    "scroll_into_view",
    "scroll_into_view",
    "Scrolls the element into view (ScrollItem / Component.ScrollTo).",
    "effect",
  ),

  defineRefTool({
    name: "select_option",
    title: "Select option",
    description: "Selects the option called `name` of a list or combo box.",
    capability: "interact",
    budget: "action",
    args: { name: z.string().min(1).max(256), ...ObserveArgs },
    output: z.object({ ...Observed }),
    effect: "destructive",
    uses: ["sessions"],
    handler: async (ctx, args) => ({
      structured: await actObserved(ctx, args, "select_option", args.name, {}),
    }),
  }),

  defineRefTool({
    name: "set_element_value",
    title: "Set element value",
    description: "Sets the element's value (Value / EditableText): capability text, never logged.",
    // Entering text is the text class whichever way it is done (send_text types it), so the
    // operator's text action, the person's text capability and a text token all apply.
    capability: "text",
    budget: "action",
    args: { value: z.string().max(4096), ...ObserveArgs },
    output: z.object({ chars: z.number().int(), ...Observed }),
    effect: "destructive",
    cost: (args) => ({ textChars: args.value.length }),
    uses: ["sessions"],
    handler: async (ctx, args) => {
      ctx.counters.chars = args.value.length;
      const result = { chars: args.value.length };
      return { structured: await actObserved(ctx, args, "set_value", args.value, result) };
    },
  }),

  defineRefTool({
    name: "click_element",
    title: "Click element",
    description: "Clicks the live element's centre, with click_window's checks.",
    capability: "click",
    budget: "action",
    args: { button: z.enum(["left", "right"]).default("left"), ...ObserveArgs },
    output: z.object({
      screen_x: z.number().int(),
      screen_y: z.number().int(),
      ...Observed,
    }),
    effect: "destructive",
    uses: ["sessions", "input"],
    handler: async (ctx, args) => {
      const s = ctx.element;
      const target = ctx.target.expectation;
      const structured = await withObservation(ctx, s, args, async () => {
        const c = await ctx.sessions.call(s, "a11y.element_center", {
          session_key: s.key,
          target,
          ref: s.inner,
        });
        // With expect, the press must be shown to have reached the target: a state another
        // program changed meanwhile (over AT-SPI, say) is not credited to a press that went
        // elsewhere.
        const { delivered, ...r } = await ctx.input.press("input.pointer", {
          target,
          kind: args.button === "right" ? "right_click" : "click",
          x: c.x,
          y: c.y,
          focus_mode: ctx.input.focusMode,
          prove_delivery: args.expect !== undefined,
        });
        return delivered === false ? { ...r, [NOT_DELIVERED]: true as const } : r;
      });
      return { structured };
    },
  }),
];
