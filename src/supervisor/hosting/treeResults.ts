import { z } from "zod";
import { unpackTrees } from "../../shared/packedTree.js";
import {
  A11yNodeFieldsSchema,
  type A11yNodeOut,
  InspectWireSchema,
  inspectFromTrees,
  type OpName,
} from "../../shared/protocol.js";

/**
 * Checking a worker's answer is synchronous zod work on the supervisor's thread. For an
 * accessibility tree of thousands of nodes the recursive schema took 140–970 ms in one piece
 * (4,681 nodes, docs/benchmarks.md), during which no other session's call moved. Trees are
 * checked here node by node with the same fields' schema instead, yielding to the event loop
 * every NODES_PER_SLICE nodes; the result is what the recursive schema would have produced
 * (test/unit/tree-results.test.ts compares them).
 */
const NODES_PER_SLICE = 256;

/**
 * More nodes than any walk may return (max_nodes ≤ 5,000, plus popups and find's results):
 * a larger "tree" is refused, and so is one that reaches a node twice (a structured clone can
 * carry cycles, which the recursive schema would have followed until the stack ran out).
 */
const MAX_NODES = 50_000;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Every root and all below it checked, or null when any node is malformed. */
export async function parseTrees(roots: readonly unknown[]): Promise<A11yNodeOut[] | null> {
  const out: A11yNodeOut[] = new Array(roots.length);
  const stack: Array<{ raw: unknown; into: A11yNodeOut[]; at: number }> = [];
  for (let i = roots.length - 1; i >= 0; i--) stack.push({ raw: roots[i], into: out, at: i });
  const seen = new Set<unknown>();
  let count = 0;
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (seen.has(next.raw) || ++count > MAX_NODES) return null;
    seen.add(next.raw);
    const r = A11yNodeFieldsSchema.safeParse(next.raw);
    if (!r.success) return null;
    // zod's output is a new object of ours: its children are replaced by the checked ones in
    // place instead of copying every node's fields a second time.
    const kids = r.data.children;
    const node = r.data as unknown as A11yNodeOut;
    node.children = new Array(kids.length);
    next.into[next.at] = node;
    for (let i = kids.length - 1; i >= 0; i--) stack.push({ raw: kids[i], into: node.children, at: i });
    if (count % NODES_PER_SLICE === 0) await yieldToLoop();
  }
  return out;
}

const FindTop = z.object({ elements: z.array(z.unknown()), truncated: z.boolean() });

type Checked = { success: true; data: unknown } | { success: false };

/** The ops whose results carry trees, checked in slices by parseTreeResult. */
export function carriesTrees(op: OpName): op is "a11y.inspect" | "a11y.find" {
  return op === "a11y.inspect" || op === "a11y.find";
}

/** The result of a tree-carrying op checked against its schema, trees in slices. */
export async function parseTreeResult(op: "a11y.inspect" | "a11y.find", raw: unknown): Promise<Checked> {
  if (op === "a11y.inspect") {
    // Its trees come as columns (src/shared/packedTree.ts), checked as the protocol schema checks them.
    const top = InspectWireSchema.safeParse(raw);
    if (!top.success) return { success: false };
    const checked = inspectFromTrees(await unpackTrees(top.data.trees), top.data);
    return checked === null ? { success: false } : { success: true, data: checked };
  }
  const top = FindTop.safeParse(raw);
  if (!top.success) return { success: false };
  const elements = await parseTrees(top.data.elements);
  if (!elements) return { success: false };
  return { success: true, data: { ...top.data, elements } };
}
