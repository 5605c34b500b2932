import { ERROR_CODES, ERROR_TABLE } from "./errors.js";
import { SETTINGS, type Setting } from "./settings.js";

/**
 * The generated parts of README.md and docs/reference.md: the settings table and the error-code
 * table. Each sits between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`;
 * `npm run docs:generate` rewrites them and test/unit/settings.test.ts fails when they differ.
 */

function defaultCell(s: Setting): string {
  if (s.defaultDoc !== undefined) return s.defaultDoc;
  return s.default === null ? "—" : `\`${s.default}\``;
}

function markdownTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => [...r[i]].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => c + " ".repeat(widths[i] - [...c].length)).join(" | ")} |`;
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** Variable, flag, default, meaning; worker-read settings marked ¹ (lenient, see the note). */
export function settingsMarkdownTable(): string {
  const rows = Object.values(SETTINGS as Record<string, Setting>).map((s) => [
    `\`${s.env}\``,
    s.flag ? `\`--${s.flag}\`` : "",
    defaultCell(s),
    s.scope === "worker" ? `${s.doc} ¹` : s.doc,
  ]);
  return markdownTable(["variable", "flag", "default", "meaning"], rows);
}

export function errorCodesMarkdownTable(): string {
  return markdownTable(
    ["code", "meaning", "audited as"],
    ERROR_CODES.map((c) => [`\`${c}\``, ERROR_TABLE[c].message, ERROR_TABLE[c].denial ? "deny" : "error"]),
  );
}

export const GENERATED_BLOCKS = {
  settings: settingsMarkdownTable,
  "error-codes": errorCodesMarkdownTable,
} as const;

export type GeneratedBlock = keyof typeof GENERATED_BLOCKS;

/** Where a block's content starts and ends in the document, or null when it has none. */
function blockSpan(doc: string, name: GeneratedBlock): { start: number; end: number } | null {
  const open = `<!-- generated:${name} -->\n`;
  const a = doc.indexOf(open);
  if (a < 0) return null;
  const start = a + open.length;
  const b = doc.indexOf(`<!-- /generated:${name} -->`, start);
  return b < 0 ? null : { start, end: b };
}

/** The text between a block's markers (without its last newline), or null when there is no block. */
export function generatedBlock(doc: string, name: GeneratedBlock): string | null {
  const span = blockSpan(doc, name);
  return span === null ? null : doc.slice(span.start, span.end).replace(/\n$/, "");
}

/** The document with every block it has regenerated. */
export function regenerate(doc: string): string {
  let out = doc;
  for (const [name, render] of Object.entries(GENERATED_BLOCKS) as [GeneratedBlock, () => string][]) {
    const span = blockSpan(out, name);
    if (span === null) continue;
    out = `${out.slice(0, span.start)}${render()}\n${out.slice(span.end)}`;
  }
  return out;
}
