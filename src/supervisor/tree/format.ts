import type { A11yNodeOut } from "../../shared/protocol.js";

/**
 * The compact text form of inspect_tree / find_elements results, for the agent (beside
 * structuredContent), shaped like an accessibility snapshot:
 *
 *   - window "Ruffle" [ref=e1]
 *     - button "Play" [ref=e2]
 *     - edit [password] [ref=e3]
 *     - check_box "Sound" [disabled] [checked] [ref=e4]
 *   - menu "Edit" [popup] [ref=e9]
 *
 * Names are target-provided text. They may appear in tool RESULTS (the agent asked for them)
 * but never in logs or audit: do not pass these strings to a logger. They are quoted and
 * escaped so a name cannot break a line or forge another line (newlines, quotes, control,
 * format and bidi characters become escapes), and cut to a fixed length. Rects and patterns
 * are shown only when asked (LineFields), and so are never the states every element has or
 * that say little (`enabled`, `focusable`); every other state is shown.
 */

/** Longest name shown in text form (UTF-16 units), beyond which it is cut with "…". */
export const MAX_NAME_CHARS = 120;

const UNSAFE = /["\\\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;

/** A name as a one-line quoted string: nothing in it can end the quote or the line. */
export function quoteName(name: string): string {
  let s = name;
  if (s.length > MAX_NAME_CHARS) {
    let end = MAX_NAME_CHARS - 1;
    const c = s.charCodeAt(end - 1);
    if (c >= 0xd800 && c <= 0xdbff) end -= 1;
    s = `${s.slice(0, end)}…`;
  }
  const escaped = s.replace(UNSAFE, (ch) => {
    if (ch === '"') return '\\"';
    if (ch === "\\") return "\\\\";
    if (ch === "\n") return "\\n";
    if (ch === "\r") return "\\r";
    if (ch === "\t") return "\\t";
    let out = "";
    for (let i = 0; i < ch.length; i += 1) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, "0")}`;
    return out;
  });
  return `"${escaped}"`;
}

/** Roles, refs and patterns come from our own vocabulary; anything else is shown as a safe token. */
function token(s: string): string {
  return /^[a-z0-9_]{1,40}$/i.test(s) ? s : "unknown";
}

/** Refs handed to clients are `<session>.<element>` (e.g. s3.e12); see supervisor/access/sessions.ts. */
function refToken(s: string): string {
  return /^[a-z0-9_.]{1,64}$/i.test(s) ? s : "unknown";
}

/** States left out of the text form: nearly every element has them. */
const QUIET_STATES: ReadonlySet<string> = new Set(["enabled", "focusable"]);

/** What a text line shows beyond role, name, states and ref (the tools' `fields` argument). */
export interface LineFields {
  /** The element's window-relative rect as `@x,y,w,h`. */
  bounds?: boolean;
  /** The element's patterns as `(invoke, toggle)`. */
  patterns?: boolean;
}

/** Every field (the default of formatNodeLine, which the tests of the escaping read). */
const ALL_FIELDS: LineFields = { bounds: false, patterns: true };

/** One node as one line (no indentation, no children). */
export function formatNodeLine(n: A11yNodeOut, fields: LineFields = ALL_FIELDS): string {
  const parts = [`- ${token(n.role)}`];
  if (n.is_password === true) parts.push("[password]");
  else if (n.name !== null && n.name !== "") parts.push(quoteName(n.name));
  if (n.popup === true) parts.push("[popup]");
  for (const st of n.states) if (!QUIET_STATES.has(st)) parts.push(`[${token(st)}]`);
  parts.push(`[ref=${refToken(n.ref)}]`);
  if (fields.bounds === true && n.rect !== null) {
    const [l, t, r, b] = n.rect;
    parts.push(`@${l},${t},${r - l},${b - t}`);
  }
  if (fields.patterns === true && n.patterns.length > 0) parts.push(`(${n.patterns.map(token).join(", ")})`);
  return parts.join(" ");
}

export interface TreeSummary {
  truncated: boolean;
  node_count: number;
}

/** Containers that only group others: without a name or a state worth showing they get no line. */
const PLAIN_CONTAINERS: ReadonlySet<string> = new Set(["panel", "pane", "group"]);

/**
 * A node the outline leaves out, showing its children one level up (as an aria snapshot leaves
 * out generic elements): an unnamed plain container with no state worth a word (offscreen says
 * nothing its children do not say themselves). Its ref is still in structuredContent with
 * detail "full".
 */
function isPlainContainer(n: A11yNodeOut): boolean {
  return (
    PLAIN_CONTAINERS.has(n.role) &&
    (n.name === null || n.name === "") &&
    n.popup !== true &&
    n.states.every((st) => QUIET_STATES.has(st) || st === "offscreen")
  );
}

export interface OutlineOptions extends LineFields {
  /** Leave out plain containers (the outline); false: one line per node. */
  collapse?: boolean;
}

/**
 * The whole tree, two spaces of indentation per level, and a last line when truncated. With
 * `collapse`, plain containers get no line (their children are shown at their level); the root
 * always has one.
 */
export function formatTree(
  root: A11yNodeOut,
  summary: TreeSummary,
  options: OutlineOptions = { ...ALL_FIELDS, collapse: false },
): string {
  const lines: string[] = [];
  // Iterative (a deep tree must not exhaust the stack), in document order.
  const stack: { node: A11yNodeOut; depth: number }[] = [{ node: root, depth: 0 }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const skip = options.collapse === true && top.node !== root && isPlainContainer(top.node);
    if (!skip) lines.push(`${"  ".repeat(top.depth)}${formatNodeLine(top.node, options)}`);
    const depth = skip ? top.depth : top.depth + 1;
    for (let i = top.node.children.length - 1; i >= 0; i -= 1) {
      const c = top.node.children[i];
      if (c !== undefined) stack.push({ node: c, depth });
    }
  }
  if (summary.truncated) {
    lines.push(
      `# truncated: ${summary.node_count} nodes shown; raise max_depth/max_nodes or inspect a subtree with root_ref`,
    );
  }
  return lines.join("\n");
}

/** find_elements results, one line each. */
export function formatElements(
  elements: readonly A11yNodeOut[],
  summary: { truncated: boolean } = { truncated: false },
  fields: LineFields = ALL_FIELDS,
): string {
  const lines = elements.map((e) => formatNodeLine(e, fields));
  if (lines.length === 0) lines.push("# no matching elements");
  if (summary.truncated)
    lines.push(`# truncated: ${elements.length} shown; narrow the search or raise max_results`);
  return lines.join("\n");
}
