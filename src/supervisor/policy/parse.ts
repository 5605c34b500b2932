import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import {
  Composer,
  CST,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  Lexer,
  LineCounter,
  Parser,
  Scalar,
} from "yaml";
import type { z } from "zod";
import { type PolicyFile, PolicyFileSchema } from "./schema.js";

/** SPEC §4: a policy file is at most 1 MiB. */
export const MAX_POLICY_FILE_BYTES = 1024 * 1024;
/** The policy format is four levels deep; anything much deeper is not a policy. */
const MAX_DEPTH = 16;

export type PolicyParseResult =
  | { ok: true; policy: PolicyFile }
  | { ok: false; code: "policy_invalid" | "policy_unreadable"; reasons: string[] };

type PathSegment = string | number;

/** `safe_regions[1].rect`; odd keys are quoted; the document itself is `(root)`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else if (typeof seg === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(seg)) out += out ? `.${seg}` : seg;
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out || "(root)";
}

const invalid = (reasons: string[]): PolicyParseResult => ({ ok: false, code: "policy_invalid", reasons });

/**
 * Reads and validates a policy file. Missing, unreadable or not-a-file is policy_unreadable;
 * too big, not UTF-8, malformed or off-schema is policy_invalid.
 */
export function readPolicyFile(path: string): PolicyParseResult {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO must not hang the server; it is refused below as not a regular file.
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch {
    return { ok: false, code: "policy_unreadable", reasons: ["the policy file cannot be opened"] };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { ok: false, code: "policy_unreadable", reasons: ["not a regular file"] };
    if (st.size > MAX_POLICY_FILE_BYTES) return invalid([tooBig()]);
    // Read one byte more than allowed so a file that grew after fstat is still caught.
    const buf = Buffer.alloc(MAX_POLICY_FILE_BYTES + 1);
    let n = 0;
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
      if (n === buf.length) break;
    }
    return parsePolicyBytes(buf.subarray(0, n));
  } catch {
    return { ok: false, code: "policy_unreadable", reasons: ["the policy file cannot be read"] };
  } finally {
    closeSync(fd);
  }
}

function tooBig(): string {
  return `(root): the file is larger than ${MAX_POLICY_FILE_BYTES} bytes (1 MiB)`;
}

/** Validates raw file bytes: size cap, strict UTF-8 (a leading BOM is allowed), then the text. */
export function parsePolicyBytes(bytes: Uint8Array): PolicyParseResult {
  if (bytes.length > MAX_POLICY_FILE_BYTES) return invalid([tooBig()]);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return invalid(["(root): the file is not valid UTF-8"]);
  }
  return parsePolicyText(text);
}

/**
 * JSON when the first non-blank character is `{`, otherwise the narrow YAML subset.
 * Then the zod schema, with every problem reported at the path of its field.
 */
export function parsePolicyText(text: string): PolicyParseResult {
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  if (body.trim() === "") return invalid(["(root): the file is empty"]);
  let data: DataResult;
  try {
    data = body.trimStart().startsWith("{") ? parseJson(body) : parseYamlSubset(body);
  } catch (e) {
    // Deeply nested input can exhaust the parsers' stack; nothing else is expected here.
    if (e instanceof RangeError) return invalid(["(root): the document is nested too deeply"]);
    throw e;
  }
  if (!data.ok) return invalid(data.reasons);
  const parsed = PolicyFileSchema.safeParse(data.value);
  if (parsed.success) return { ok: true, policy: parsed.data };
  const reasons = parsed.error.issues.flatMap((issue) => issueReasons(issue, data.value, []));
  return invalid([...new Set(reasons)]);
}

type DataResult = { ok: true; value: unknown } | { ok: false; reasons: string[] };

// ---------------------------------------------------------------- JSON

function lineCol(text: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === "\n") {
      line++;
      lineStart = i + 1;
    }
  }
  return `line ${line}, column ${offset - lineStart + 1}`;
}

function parseJson(text: string): DataResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    // The engine's message quotes the input; only its position is passed on.
    const m = e instanceof SyntaxError ? /position (\d+)/.exec(e.message) : null;
    return { ok: false, reasons: [`(root): not valid JSON${m ? ` (${lineCol(text, Number(m[1]))})` : ""}`] };
  }
  const dups = jsonDuplicateKeys(text);
  return dups.length > 0 ? { ok: false, reasons: dups } : { ok: true, value };
}

type JsonFrame =
  | { kind: "object"; keys: Set<string>; key: string | null; expectKey: boolean }
  | { kind: "array"; index: number };

/** JSON.parse keeps the last of duplicate keys silently; this scan over already-valid JSON finds them. */
function jsonDuplicateKeys(text: string): string[] {
  const reasons: string[] = [];
  const stack: JsonFrame[] = [];
  const pathOf = (frames: JsonFrame[]): PathSegment[] =>
    frames.map((f) => (f.kind === "array" ? f.index : (f.key ?? "")));
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top?.kind === "object" && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key))
          reasons.push(`${formatPath([...pathOf(stack.slice(0, -1)), key])}: duplicate key`);
        top.keys.add(key);
        top.key = key;
        top.expectKey = false;
      }
      i = j + 1;
      continue;
    }
    const top = stack[stack.length - 1];
    if (c === "{") stack.push({ kind: "object", keys: new Set(), key: null, expectKey: true });
    else if (c === "[") stack.push({ kind: "array", index: 0 });
    else if (c === "}" || c === "]") stack.pop();
    else if (c === "," && top?.kind === "object") top.expectKey = true;
    else if (c === "," && top?.kind === "array") top.index++;
    i++;
  }
  return reasons;
}

// ---------------------------------------------------------------- YAML subset

const YAML_OPTIONS = {
  version: "1.2",
  schema: "core",
  merge: false,
  uniqueKeys: true,
  strict: true,
  prettyErrors: false,
} as const;

const FORBIDDEN_CST: Record<string, string> = {
  anchor: "anchors (&name) are not supported",
  alias: "aliases (*name) are not supported",
  tag: "tags (!tag) are not supported",
  directive: "directives (%YAML, %TAG) are not supported",
};

/** Plain numbers must be written like JSON numbers: no 0x/0o, .inf or .nan. */
const DECIMAL = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$/;

/**
 * YAML 1.2 core schema without anchors, aliases, tags, directives, merge keys,
 * non-string keys, duplicate keys or more than one document. Anything else is refused, not guessed.
 */
function parseYamlSubset(text: string): DataResult {
  if (nestedTooDeeply(text)) return { ok: false, reasons: ["(root): the document is nested too deeply"] };
  const lines = new LineCounter();
  const at = (offset: number): string => {
    const { line, col } = lines.linePos(offset);
    return `line ${line}, column ${col}`;
  };
  const tokens = Array.from(new Parser(lines.addNewLine).parse(text));
  const reasons: string[] = [];
  forEachCstToken(tokens, (type, offset) => {
    const what = FORBIDDEN_CST[type];
    if (what) reasons.push(`${at(offset)}: ${what}`);
  });
  const docs = Array.from(new Composer(YAML_OPTIONS).compose(tokens));
  if (docs.length !== 1) {
    reasons.push(
      docs.length === 0 ? "(root): the file has no document" : "(root): more than one YAML document",
    );
    return { ok: false, reasons };
  }
  const doc = docs[0];
  for (const err of [...doc.errors, ...doc.warnings]) {
    if (err.code === "DUPLICATE_KEY") continue; // reported below with its path
    reasons.push(`${at(err.pos[0])}: ${err.message}`);
  }
  if (reasons.length > 0) return { ok: false, reasons };
  const value = toPlain(doc.contents, [], reasons);
  return reasons.length > 0 ? { ok: false, reasons } : { ok: true, value };
}

const MAX_FLOW_DEPTH = 32;
const MAX_BLOCK_INDICATORS_PER_LINE = 16;

/**
 * The yaml parser slows to seconds on a hostile 1 MiB file of nested `[`, `- - -` or `? ? ?`;
 * a lexer pass (linear, stops at the first excess) refuses such nesting first. A real policy
 * nests three levels deep.
 */
function nestedTooDeeply(text: string): boolean {
  let flow = 0;
  let perLine = 0;
  for (const token of new Lexer().lex(text)) {
    switch (CST.tokenType(token)) {
      case "flow-map-start":
      case "flow-seq-start":
        if (++flow > MAX_FLOW_DEPTH) return true;
        break;
      case "flow-map-end":
      case "flow-seq-end":
        flow = Math.max(0, flow - 1);
        break;
      case "newline":
        perLine = 0;
        break;
      case "seq-item-ind":
      case "explicit-key-ind":
      case "map-value-ind":
        if (flow === 0 && ++perLine > MAX_BLOCK_INDICATORS_PER_LINE) return true;
        break;
    }
  }
  return false;
}

function forEachCstToken(roots: unknown[], visit: (type: string, offset: number) => void): void {
  const todo: unknown[] = [...roots];
  while (todo.length > 0) {
    const node = todo.pop();
    if (Array.isArray(node)) {
      todo.push(...node);
    } else if (node !== null && typeof node === "object") {
      const rec = node as Record<string, unknown>;
      if (typeof rec.type === "string" && typeof rec.offset === "number") visit(rec.type, rec.offset);
      for (const v of Object.values(rec)) if (v !== null && typeof v === "object") todo.push(v);
    }
  }
}

function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  // defineProperty, so a "__proto__" key is an ordinary (unknown) field, as with JSON.parse.
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

function toPlain(node: unknown, path: PathSegment[], reasons: string[]): unknown {
  const where = formatPath(path);
  if (path.length > MAX_DEPTH) {
    reasons.push(`${where}: nested too deeply`);
    return null;
  }
  if (node === null || node === undefined) return null;
  if (isAlias(node)) {
    reasons.push(`${where}: aliases (*name) are not supported`);
    return null;
  }
  if (isScalar(node)) {
    const v = node.value;
    if (typeof v === "number" && node.type === Scalar.PLAIN && !DECIMAL.test(node.source ?? "")) {
      reasons.push(`${where}: numbers must be written in decimal`);
    }
    if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
    reasons.push(`${where}: unsupported scalar`);
    return null;
  }
  if (isSeq(node)) return node.items.map((item, i) => toPlain(item, [...path, i], reasons));
  if (isMap(node)) {
    const out: Record<string, unknown> = {};
    for (const pair of node.items) {
      if (!isPair(pair)) continue;
      const k = pair.key;
      if (!isScalar(k) || typeof k.value !== "string") {
        reasons.push(`${where}: keys must be strings`);
        continue;
      }
      const key = k.value;
      if (key === "<<" && k.type === Scalar.PLAIN) {
        reasons.push(`${where}: merge keys (<<) are not supported`);
        continue;
      }
      if (Object.hasOwn(out, key)) {
        reasons.push(`${formatPath([...path, key])}: duplicate key`);
        continue;
      }
      setOwn(out, key, toPlain(pair.value, [...path, key], reasons));
    }
    return out;
  }
  reasons.push(`${where}: unsupported YAML node`);
  return null;
}

// ---------------------------------------------------------------- zod issues → reasons

function lookup(root: unknown, path: readonly PropertyKey[]): { found: boolean; value: unknown } {
  let cur: unknown = root;
  for (const seg of path) {
    if (cur === null || typeof cur !== "object" || !Object.hasOwn(cur, seg))
      return { found: false, value: undefined };
    cur = (cur as Record<PropertyKey, unknown>)[seg];
  }
  return { found: true, value: cur };
}

function issueReasons(issue: z.core.$ZodIssue, root: unknown, base: readonly PropertyKey[]): string[] {
  const path = [...base, ...issue.path];
  switch (issue.code) {
    case "unrecognized_keys":
      return issue.keys.map((k) => `${formatPath([...path, k])}: unknown field`);
    case "invalid_union": {
      // Pick the alternative the input was evidently meant to be: the one whose own keys it uses.
      const fitting = issue.errors.filter(
        (branch) => !branch.some((i) => i.code === "unrecognized_keys" && i.path.length === 0),
      );
      if (fitting.length === 1) return fitting[0].flatMap((i) => issueReasons(i, root, path));
      return [`${formatPath(path)}: ${issue.message}`];
    }
    case "invalid_type":
      if (!lookup(root, path).found) return [`${formatPath(path)}: required field is missing`];
      return [`${formatPath(path)}: ${issue.message}`];
    default:
      return [`${formatPath(path)}: ${issue.message}`];
  }
}
