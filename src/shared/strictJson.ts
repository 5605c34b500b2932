import { quoteClientValue } from "./echo.js";

/**
 * JSON for the files the server parses (policy, coordinate profile, fake scenario), in time
 * linear in the text: a nesting cap checked before anything recursive runs, the engine's
 * JSON.parse, and one pass that refuses duplicate keys (JSON.parse would silently keep the last).
 * Problems are reported at field paths, built only for the few that are reported.
 */

/** No file the server reads needs more; a policy nests four levels, a scenario tree a dozen. */
export const MAX_NESTING_DEPTH = 64;
/** A file with thousands of problems is reported by its first few. */
export const MAX_REPORTED_PROBLEMS = 5;

export type StrictJsonResult = { ok: true; value: unknown } | { ok: false; reasons: string[] };

type PathSegment = string | number;

/**
 * `safe_regions[1].rect`; other keys are quoted and cut to a few dozen characters (a key is the
 * file's text, and a message must stay short); the document itself is `(root)`.
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else if (typeof seg === "string" && /^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(seg))
      out += out ? `.${seg}` : seg;
    else out += `[${quoteClientValue(String(seg))}]`;
  }
  return out || "(root)";
}

/** "line L, column C" of an offset, in one pass. */
export function lineColumn(text: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(offset, text.length);
  for (let i = text.indexOf("\n"); i !== -1 && i < end; i = text.indexOf("\n", i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return `line ${line}, column ${end - lineStart + 1}`;
}

/** Index just past the string literal that opens at `i` (or text.length when unterminated). */
function skipString(text: string, i: number): number {
  let j = i + 1;
  while (j < text.length) {
    const c = text.charCodeAt(j);
    if (c === 0x22) return j + 1;
    j += c === 0x5c ? 2 : 1;
  }
  return text.length;
}

/** Offset of the first bracket that opens level maxDepth+1, or -1. Strings are skipped. */
function tooDeepAt(text: string, maxDepth: number): number {
  let depth = 0;
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = skipString(text, i);
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return i;
    } else if (c === 0x7d || c === 0x5d) depth--;
    i++;
  }
  return -1;
}

type Frame = { keys: Set<string> | null; key: string; index: number; expectKey: boolean };

/**
 * Duplicate keys of already-valid JSON, in one pass. The stack holds one frame per open
 * container (at most MAX_NESTING_DEPTH); a path is assembled only for a reported duplicate.
 */
function duplicateKeys(text: string, limit: number): string[] {
  const reasons: string[] = [];
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    const top = stack[stack.length - 1];
    if (c === 0x22) {
      const end = skipString(text, i);
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(i, end)) as string;
        if (top.keys.has(key)) {
          const path: PathSegment[] = stack.slice(1).map((_, k) => {
            const parent = stack[k];
            return parent.keys ? parent.key : parent.index;
          });
          reasons.push(`${formatPath([...path, key])}: duplicate key`);
          if (reasons.length >= limit) return reasons;
        }
        top.keys.add(key);
        top.key = key;
        top.expectKey = false;
      }
      i = end;
      continue;
    }
    if (c === 0x7b) stack.push({ keys: new Set(), key: "", index: 0, expectKey: true });
    else if (c === 0x5b) stack.push({ keys: null, key: "", index: 0, expectKey: false });
    else if (c === 0x7d || c === 0x5d) stack.pop();
    else if (c === 0x2c && top) {
      if (top.keys) top.expectKey = true;
      else top.index++;
    }
    i++;
  }
  return reasons;
}

export function parseStrictJson(text: string, maxDepth = MAX_NESTING_DEPTH): StrictJsonResult {
  const deep = tooDeepAt(text, maxDepth);
  if (deep !== -1)
    return {
      ok: false,
      reasons: [`(root): nested deeper than ${maxDepth} levels (${lineColumn(text, deep)})`],
    };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    // The engine's message quotes the input; only its position is passed on.
    const m = e instanceof SyntaxError ? /position (\d+)/.exec(e.message) : null;
    return {
      ok: false,
      reasons: [`(root): not valid JSON${m ? ` (${lineColumn(text, Number(m[1]))})` : ""}`],
    };
  }
  const dups = duplicateKeys(text, MAX_REPORTED_PROBLEMS);
  return dups.length > 0 ? { ok: false, reasons: dups } : { ok: true, value };
}
