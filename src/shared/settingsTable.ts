import { DEFAULT_MESSAGES, ERROR_CODES } from "./errors.js";
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
    ["code", "meaning"],
    ERROR_CODES.map((c) => [`\`${c}\``, DEFAULT_MESSAGES[c]]),
  );
}

export const GENERATED_BLOCKS = {
  settings: settingsMarkdownTable,
  "error-codes": errorCodesMarkdownTable,
} as const;

export type GeneratedBlock = keyof typeof GENERATED_BLOCKS;

/** The text between a block's markers, or null when the document has no such block. */
export function generatedBlock(doc: string, name: GeneratedBlock): string | null {
  const open = `<!-- generated:${name} -->\n`;
  const close = `\n<!-- /generated:${name} -->`;
  const a = doc.indexOf(open);
  const b = doc.indexOf(close, a + open.length);
  return a < 0 || b < 0 ? null : doc.slice(a + open.length, b);
}

/** The document with every block it has regenerated. */
export function regenerate(doc: string): string {
  let out = doc;
  for (const [name, render] of Object.entries(GENERATED_BLOCKS) as [GeneratedBlock, () => string][]) {
    const old = generatedBlock(out, name);
    if (old === null) continue;
    const open = `<!-- generated:${name} -->\n`;
    const at = out.indexOf(open) + open.length;
    out = out.slice(0, at) + render() + out.slice(at + old.length);
  }
  return out;
}
