import { z } from "zod";
import { uiError } from "../../shared/errors.js";
import type { A11yNodeOut } from "../../shared/protocol.js";
import { sleep } from "../../shared/sleep.js";
import { type ElementState, STATES } from "../../shared/states.js";
import type { SessionService } from "../access/services.js";
import type { SessionRecord } from "../access/sessions.js";
import type { WindowCall } from "./define.js";
import { Ref } from "./shapes.js";

/**
 * Observing the accessibility tree over time, for wait_for_element and for the `expect` /
 * `changes` options of the actions: polls of the uia worker under the call's own cancellation
 * and budget (a poll is never a separate charge). Only refs, roles, names and states are
 * compared: never values.
 */

/** What observing needs: the window, and its automation session's service. */
export type ObserveCall = WindowCall & { readonly sessions: SessionService };

export const StateArg = z.enum(STATES);

/** Matches a gone condition looks at (all must be hidden); more is a truncated answer. */
const GONE_MAX_RESULTS = 50;
/** How often a condition is asked for again (the first ask is immediate). */
const POLL_MS = 150;

export const Expect = z
  .strictObject({
    ref: Ref.optional(),
    state: StateArg.optional(),
    gone: z.boolean().optional(),
    name_contains: z.string().min(1).max(256).optional(),
    timeout_ms: z.number().int().min(0).max(5000).default(1000),
  })
  .describe(
    "{ref?, state?, gone?, name_contains?, timeout_ms≤5000 (1000)}: wait until ref (default: this element) or a name_contains match has state / is gone → verified.",
  );
export type ExpectArg = z.output<typeof Expect>;

export const Changes = z.boolean().optional().describe("Also return the tree's changes.");

export const ChangesOut = z.object({
  added: z.array(
    z.object({ ref: z.string(), role: z.string(), name: z.string().nullable(), states: z.array(StateArg) }),
  ),
  removed: z.array(z.string()),
  changed: z.array(z.object({ ref: z.string(), states: z.array(StateArg) })),
  truncated: z.boolean(),
});
export type ChangesOutput = z.output<typeof ChangesOut>;

/** What a condition looks at: one ref's element, or any element matching a search. */
export interface Condition {
  ref: string | null;
  name_contains: string | null;
  role: string | null;
  automation_id: string | null;
  state: ElementState | null;
  gone: boolean;
}

/** One ask: the element that satisfies the condition (null for gone), or undefined when it does not hold. */
async function probe(
  call: ObserveCall,
  s: SessionRecord,
  c: Condition,
): Promise<{ holds: boolean; element: A11yNodeOut | null }> {
  const target = call.target.expectation;
  if (c.ref !== null) {
    const { node } = await call.sessions.call(s, "a11y.describe", { session_key: s.key, target, ref: c.ref });
    // Gone from what the agent can see: no longer there, or no longer shown (a closed menu's
    // items may live on, hidden).
    if (c.gone) return { holds: node === null || node.states.includes("offscreen"), element: null };
    if (node === null) return { holds: false, element: null };
    const named =
      c.name_contains === null || (node.name ?? "").toLowerCase().includes(c.name_contains.toLowerCase());
    const stated = c.state === null || node.states.includes(c.state);
    return { holds: named && stated, element: node };
  }
  const deadline = call.sessions.treeDeadlineMs;
  const r = await call.sessions.call(
    s,
    "a11y.find",
    {
      session_key: s.key,
      target,
      name_contains: c.name_contains,
      role: c.role,
      automation_id: c.automation_id,
      state: c.state,
      max_results: c.gone ? GONE_MAX_RESULTS : 1,
      deadline_ms: deadline,
    },
    deadline + call.sessions.deadlineMs,
  );
  // A truncated search proves nothing is gone; matches that are not shown do not count.
  if (c.gone)
    return { holds: !r.truncated && r.elements.every((e) => e.states.includes("offscreen")), element: null };
  const first = r.elements[0] ?? null;
  return { holds: first !== null, element: first };
}

/**
 * Asks until the condition holds or `timeoutMs` passes; reports progress when asked for.
 * Returns the satisfying element (null for gone) or "timeout".
 */
export async function waitForCondition(
  call: ObserveCall,
  s: SessionRecord,
  c: Condition,
  timeoutMs: number,
  report: boolean,
): Promise<{ element: A11yNodeOut | null; elapsed_ms: number; polls: number } | "timeout"> {
  const start = Date.now();
  if (report) await call.progress(0, timeoutMs);
  for (let polls = 1; ; polls += 1) {
    const r = await probe(call, s, c);
    const elapsed = Date.now() - start;
    call.counters.polls = polls;
    if (r.holds) return { element: r.element, elapsed_ms: elapsed, polls };
    if (elapsed >= timeoutMs) return "timeout";
    if (report) await call.progress(Math.min(elapsed, timeoutMs), timeoutMs);
    await sleep(Math.min(POLL_MS, timeoutMs - elapsed), call.signal).catch(() => {
      throw uiError("cancelled");
    });
  }
}

/** The condition of an action's `expect`: its ref defaults to the acted element's. */
export function expectCondition(
  call: ObserveCall,
  action: SessionRecord & { inner: string },
  e: ExpectArg,
): Condition {
  let ref: string | null = null;
  if (e.ref !== undefined) {
    const r = call.sessions.lookupRef(e.ref);
    if (r.tag !== action.tag) throw uiError("invalid_argument", "expect.ref belongs to another window.");
    ref = r.inner;
  } else if (e.name_contains === undefined) {
    ref = action.inner;
  }
  return {
    ref,
    name_contains: e.name_contains ?? null,
    role: null,
    automation_id: null,
    state: e.state ?? null,
    gone: e.gone === true,
  };
}

/** Refs → role, name and states of the window's tree (popups included), for a changes diff. */
export interface TreeStates {
  nodes: Map<string, { role: string; name: string | null; states: ElementState[] }>;
  truncated: boolean;
}

const CHANGES_MAX_NODES = 2000;

export async function snapshotStates(call: ObserveCall, s: SessionRecord): Promise<TreeStates> {
  const deadline = call.sessions.treeDeadlineMs;
  const r = await call.sessions.call(
    s,
    "a11y.inspect",
    {
      session_key: s.key,
      target: call.target.expectation,
      max_depth: 32,
      max_nodes: CHANGES_MAX_NODES,
      deadline_ms: deadline,
      root_ref: null,
      // A changes diff reads role, name and states only.
      patterns: false,
      bounds: false,
    },
    deadline + call.sessions.deadlineMs,
  );
  const nodes: TreeStates["nodes"] = new Map();
  const stack: A11yNodeOut[] = [r.root, ...r.popups];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    nodes.set(`${s.tag}.${n.ref}`, { role: n.role, name: n.name, states: n.states });
    stack.push(...n.children);
  }
  return { nodes, truncated: r.truncated };
}

/** Before/after → what was added, removed, and whose states changed (by ref). */
export function diffStates(before: TreeStates, after: TreeStates): ChangesOutput {
  const added: ChangesOutput["added"] = [];
  const changed: ChangesOutput["changed"] = [];
  const removed: string[] = [];
  for (const [ref, a] of after.nodes) {
    const b = before.nodes.get(ref);
    if (b === undefined) added.push({ ref, ...a });
    else if (b.states.join() !== a.states.join()) changed.push({ ref, states: a.states });
  }
  for (const ref of before.nodes.keys()) if (!after.nodes.has(ref)) removed.push(ref);
  return { added, removed, changed, truncated: before.truncated || after.truncated };
}

/**
 * Set by an action whose press the display server showed went elsewhere: its expect answers
 * `verified: false` at once, with the reason, whatever the state becomes.
 */
export const NOT_DELIVERED: unique symbol = Symbol("press not delivered");

/** The `verified` / `elapsed_ms` / `changes` fields of an action's result. */
export interface Observed {
  verified?: boolean;
  unverified_reason?: "press_not_delivered";
  elapsed_ms?: number;
  changes?: ChangesOutput;
}

/**
 * Runs an action with its optional expect and changes: a snapshot before (changes), the action,
 * the wait (expect), a snapshot after. The action's own errors pass through; so do errors of the
 * observation (the action then happened: the error says only that it could not be observed).
 */
export async function withObservation<R extends Record<string, unknown>>(
  call: ObserveCall,
  action: SessionRecord & { inner: string },
  opts: { expect?: ExpectArg | undefined; changes?: boolean | undefined },
  act: () => Promise<R>,
): Promise<R & Observed> {
  const condition = opts.expect ? expectCondition(call, action, opts.expect) : null;
  const before = opts.changes ? await snapshotStates(call, action) : null;
  const started = Date.now();
  const { [NOT_DELIVERED]: notDelivered, ...result } = (await act()) as R & { [NOT_DELIVERED]?: true };
  const out = { ...result } as R & Observed;
  if (condition !== null && opts.expect && notDelivered === true) {
    out.verified = false;
    out.unverified_reason = "press_not_delivered";
    out.elapsed_ms = Date.now() - started;
    call.counters.verified = false;
  } else if (condition !== null && opts.expect) {
    const r = await waitForCondition(call, action, condition, opts.expect.timeout_ms, false);
    out.verified = r !== "timeout";
    out.elapsed_ms = Date.now() - started;
    call.counters.verified = out.verified;
  }
  if (before !== null) out.changes = diffStates(before, await snapshotStates(call, action));
  return out;
}
