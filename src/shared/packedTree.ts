import type { A11yNodeOut } from "./a11yNode.js";
import { STATES } from "./states.js";

/**
 * The wire form of the trees of an a11y.inspect answer: a few flat columns instead of an object
 * graph of hundreds of nodes, each with its own arrays. A structured clone of the graph
 * (postMessage) and zod's check of every node on the supervisor's thread were most of the
 * server's own part of an inspection (docs/benchmarks.md); a clone of these columns copies a
 * few typed arrays and one array of strings, and the check below reads each value once.
 *
 * The check is the boundary against a compromised worker and is exactly as strict as the
 * node schema (A11yNodeFieldsSchema, recursively): every string is a string, every rect a tuple
 * of four safe integers or null, every state one of STATES, every flag one of its values, and
 * the shape a forest by construction (a node's parent comes before it, so no cycle and no
 * node reached twice can be expressed). unpackTrees(packTrees(t)) gives exactly what the
 * schema gave for t, keys in the schema's order (test/unit/packed-tree.test.ts).
 *
 * Layout, one row of NODE_INTS in `nodes` per node, parents before children, children in
 * order:
 *   0 parent row (-1: a root; the first root is the tree, the others its popups)
 *   1 ref, 2 role: indices into `strings`
 *   3 name, 4 automation_id, 5 class_name: indices into `strings`, -1 for null
 *   6 flags: bit 0 enabled, 1 offscreen, 2 focused, 3 rect present; bits 4–5 is_password and
 *     6–7 popup: 0 absent, 1 false, 2 true
 *   7 states, 8 patterns: how many; the node's states (indices into STATES) and then its
 *     patterns (indices into `strings`) follow the previous node's in `lists`
 * `rects`: four numbers per node (zeros when the node has none).
 */
export interface PackedTrees {
  strings: string[];
  nodes: Int32Array;
  rects: Float64Array;
  lists: Int32Array;
}

export const NODE_INTS = 9;

const ENABLED = 1;
const OFFSCREEN = 2;
const FOCUSED = 4;
const HAS_RECT = 8;
const PASSWORD_SHIFT = 4;
const POPUP_SHIFT = 6;
/** Every bit a flags word may have set. */
const FLAG_BITS = 0xff;

const STATE_INDEX: ReadonlyMap<string, number> = new Map(STATES.map((s, i) => [s, i]));

/** An optional boolean as two bits: absent, false, true. */
function tri(v: boolean | undefined): number {
  return v === undefined ? 0 : v ? 2 : 1;
}

/** Packs trees of protocol nodes (the worker's side); throws on a node outside the schema. */
export function packTrees(roots: readonly A11yNodeOut[]): PackedTrees {
  const strings: string[] = [];
  const index = new Map<string, number>();
  const str = (s: string): number => {
    let i = index.get(s);
    if (i === undefined) {
      i = strings.length;
      strings.push(s);
      index.set(s, i);
    }
    return i;
  };
  const opt = (s: string | null): number => (s === null ? -1 : str(s));
  const order: Array<{ node: A11yNodeOut; parent: number }> = roots.map((node) => ({ node, parent: -1 }));
  for (let i = 0; i < order.length; i++) {
    const kids = (order[i] as { node: A11yNodeOut }).node.children;
    for (const node of kids) order.push({ node, parent: i });
  }
  const n = order.length;
  const nodes = new Int32Array(n * NODE_INTS);
  const rects = new Float64Array(n * 4);
  const lists: number[] = [];
  for (let i = 0; i < n; i++) {
    const { node, parent } = order[i] as { node: A11yNodeOut; parent: number };
    const at = i * NODE_INTS;
    nodes[at] = parent;
    nodes[at + 1] = str(node.ref);
    nodes[at + 2] = str(node.role);
    nodes[at + 3] = opt(node.name);
    nodes[at + 4] = opt(node.automation_id);
    nodes[at + 5] = opt(node.class_name);
    let flags =
      (node.enabled ? ENABLED : 0) | (node.offscreen ? OFFSCREEN : 0) | (node.focused ? FOCUSED : 0);
    if (node.rect !== null) {
      flags |= HAS_RECT;
      rects.set(node.rect, i * 4);
    }
    flags |= tri(node.is_password) << PASSWORD_SHIFT;
    flags |= tri(node.popup) << POPUP_SHIFT;
    nodes[at + 6] = flags;
    nodes[at + 7] = node.states.length;
    nodes[at + 8] = node.patterns.length;
    for (const s of node.states) {
      const k = STATE_INDEX.get(s);
      if (k === undefined) throw new Error("unknown state");
      lists.push(k);
    }
    for (const p of node.patterns) lists.push(str(p));
  }
  return { strings, nodes, rects, lists: Int32Array.from(lists) };
}

/**
 * More nodes than any walk may return (max_nodes ≤ 5,000 plus popups): larger columns are
 * refused before anything is read.
 */
export const MAX_PACKED_NODES = 50_000;

/** Nodes decoded between two turns of the event loop (a big tree must not hold it). */
const NODES_PER_SLICE = 2048;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A typed array of its own memory: a worker thread could send one over a SharedArrayBuffer and
 * go on writing to it while the supervisor reads it (checked one moment, other values the next).
 */
function ownMemory(a: unknown, type: typeof Int32Array | typeof Float64Array): boolean {
  return a instanceof type && a.buffer instanceof ArrayBuffer;
}

/** Whether `raw` has the columns' types (their contents are checked by unpackTrees). */
export function isPacked(raw: unknown): raw is PackedTrees {
  if (typeof raw !== "object" || raw === null) return false;
  const r = raw as Record<string, unknown>;
  return (
    Array.isArray(r.strings) &&
    ownMemory(r.nodes, Int32Array) &&
    ownMemory(r.rects, Float64Array) &&
    ownMemory(r.lists, Int32Array)
  );
}

/** A tri-state's value, or null when the bits say neither absent, false nor true. */
function fromTri(bits: number): boolean | undefined | null {
  if (bits === 0) return undefined;
  if (bits === 1) return false;
  return bits === 2 ? true : null;
}

/**
 * The checked trees (the supervisor's side), roots in order, or null when anything in the
 * columns is out of bounds or of the wrong type; it yields to the event loop every
 * NODES_PER_SLICE nodes.
 */
export async function unpackTrees(raw: unknown): Promise<A11yNodeOut[] | null> {
  const steps = decode(raw);
  for (let r = steps.next(); ; r = steps.next()) {
    if (r.done === true) return r.value;
    await yieldToLoop();
  }
}

/** unpackTrees in one piece (the protocol schema's parse, which is synchronous). */
export function unpackTreesSync(raw: unknown): A11yNodeOut[] | null {
  const steps = decode(raw);
  for (let r = steps.next(); ; r = steps.next()) if (r.done === true) return r.value;
}

/** The decoding of unpackTrees: it yields where a slice ends and returns the trees or null. */
function* decode(raw: unknown): Generator<void, A11yNodeOut[] | null, void> {
  if (!isPacked(raw)) return null;
  const { strings, nodes, rects, lists } = raw;
  const n = nodes.length / NODE_INTS;
  if (!Number.isInteger(n) || n < 1 || n > MAX_PACKED_NODES || rects.length !== n * 4) return null;
  // Each string is some node's field or pattern: more strings than those is no tree of ours.
  if (strings.length > n * 5 + lists.length) return null;
  for (let i = 0; i < strings.length; i++) if (typeof strings[i] !== "string") return null;
  const text = (k: number): string | null => (k >= 0 && k < strings.length ? (strings[k] as string) : null);
  const out: A11yNodeOut[] = [];
  const roots: A11yNodeOut[] = [];
  let cursor = 0;
  for (let i = 0; i < n; i++) {
    const at = i * NODE_INTS;
    const parent = nodes[at] as number;
    const flags = nodes[at + 6] as number;
    const ref = text(nodes[at + 1] as number);
    const role = text(nodes[at + 2] as number);
    const name = nodes[at + 3] === -1 ? null : text(nodes[at + 3] as number);
    const automationId = nodes[at + 4] === -1 ? null : text(nodes[at + 4] as number);
    const className = nodes[at + 5] === -1 ? null : text(nodes[at + 5] as number);
    const password = fromTri((flags >> PASSWORD_SHIFT) & 3);
    const popup = fromTri((flags >> POPUP_SHIFT) & 3);
    const nStates = nodes[at + 7] as number;
    const nPatterns = nodes[at + 8] as number;
    if (
      parent < -1 ||
      parent >= i ||
      (i === 0 && parent !== -1) ||
      ref === null ||
      role === null ||
      (name === null && nodes[at + 3] !== -1) ||
      (automationId === null && nodes[at + 4] !== -1) ||
      (className === null && nodes[at + 5] !== -1) ||
      (flags & ~FLAG_BITS) !== 0 ||
      password === null ||
      popup === null ||
      nStates < 0 ||
      nPatterns < 0 ||
      cursor + nStates + nPatterns > lists.length
    )
      return null;
    const rect = (flags & HAS_RECT) === 0 ? null : rectAt(rects, i * 4);
    if (rect === undefined) return null;
    const states = new Array<(typeof STATES)[number]>(nStates);
    for (let k = 0; k < nStates; k++) {
      const s = STATES[lists[cursor++] as number];
      if (s === undefined) return null;
      states[k] = s;
    }
    const patterns = new Array<string>(nPatterns);
    for (let k = 0; k < nPatterns; k++) {
      const p = text(lists[cursor++] as number);
      if (p === null) return null;
      patterns[k] = p;
    }
    // Keys in the schema's order, optional ones only when present (as zod's output has them).
    const node = { ref, role, name } as A11yNodeOut;
    if (password !== undefined) node.is_password = password;
    node.automation_id = automationId;
    node.class_name = className;
    node.rect = rect;
    node.enabled = (flags & ENABLED) !== 0;
    node.offscreen = (flags & OFFSCREEN) !== 0;
    node.focused = (flags & FOCUSED) !== 0;
    node.states = states;
    if (popup !== undefined) node.popup = popup;
    node.patterns = patterns;
    node.children = [];
    out.push(node);
    if (parent === -1) roots.push(node);
    else (out[parent] as A11yNodeOut).children.push(node);
    if ((i + 1) % NODES_PER_SLICE === 0) yield;
  }
  return cursor === lists.length ? roots : null;
}

/** Four safe integers from `at`, or undefined when any is not one. */
function rectAt(rects: Float64Array, at: number): [number, number, number, number] | undefined {
  const l = rects[at] as number;
  const t = rects[at + 1] as number;
  const r = rects[at + 2] as number;
  const b = rects[at + 3] as number;
  if (
    !Number.isSafeInteger(l) ||
    !Number.isSafeInteger(t) ||
    !Number.isSafeInteger(r) ||
    !Number.isSafeInteger(b)
  )
    return undefined;
  return [l, t, r, b];
}
