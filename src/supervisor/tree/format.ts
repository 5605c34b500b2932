import type { A11yNodeOut } from "../../shared/protocol.js";

/**
 * The compact text form of inspect_tree / find_elements results, for the agent (beside
 * structuredContent), shaped like an accessibility snapshot:
 *
 *   - window "Ruffle" [ref=e1]
 *     - button "Play" [ref=e2] (invoke)
 *     - edit [password] [ref=e3] (value)
 *     - check_box "Sound" [disabled] [checked] [ref=e4] (toggle)
 *   - menu "Edit" [popup] [ref=e9]
 *
 * Names are target-provided text. They may appear in tool RESULTS (the agent asked for them)
 * but never in logs or audit: do not pass these strings to a logger. They are quoted and
 * escaped so a name cannot break a line or forge another line (newlines, quotes, control,
 * format and bidi characters become escapes), and cut to a fixed length. Rects are left out
 * to save tokens (they are in structuredContent), and so are the states every element has or
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

/** One node as one line (no indentation, no children). */
export function formatNodeLine(n: A11yNodeOut): string {
  const parts = [`- ${token(n.role)}`];
  if (n.is_password === true) parts.push("[password]");
  else if (n.name !== null && n.name !== "") parts.push(quoteName(n.name));
  if (n.popup === true) parts.push("[popup]");
  for (const st of n.states) if (!QUIET_STATES.has(st)) parts.push(`[${token(st)}]`);
  parts.push(`[ref=${refToken(n.ref)}]`);
  if (n.patterns.length > 0) parts.push(`(${n.patterns.map(token).join(", ")})`);
  return parts.join(" ");
}

export interface TreeSummary {
  truncated: boolean;
  node_count: number;
}

/** The whole tree, two spaces of indentation per level, and a last line when truncated. */
export function formatTree(root: A11yNodeOut, summary: TreeSummary): string {
  const lines: string[] = [];
  // Iterative (a deep tree must not exhaust the stack), in document order.
  const stack: { node: A11yNodeOut; depth: number }[] = [{ node: root, depth: 0 }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    lines.push(`${"  ".repeat(top.depth)}${formatNodeLine(top.node)}`);
    for (let i = top.node.children.length - 1; i >= 0; i -= 1) {
      const c = top.node.children[i];
      if (c !== undefined) stack.push({ node: c, depth: top.depth + 1 });
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
): string {
  const lines = elements.map(formatNodeLine);
  if (lines.length === 0) lines.push("# no matching elements");
  if (summary.truncated)
    lines.push(`# truncated: ${elements.length} shown; narrow the search or raise max_results`);
  return lines.join("\n");
}
