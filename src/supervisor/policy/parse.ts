import { fstatSync } from "node:fs";
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
import { decodeUtf8, readBoundedFile } from "../../shared/boundedFile.js";
import { escapeControls } from "../../shared/echo.js";
import {
  formatPath,
  MAX_NESTING_DEPTH,
  MAX_REPORTED_PROBLEMS,
  parseStrictJson,
} from "../../shared/strictJson.js";
import { type PolicyFile, PolicyFileSchema } from "./schema.js";
import { checkPolicyPath } from "./strictModes.js";

export { formatPath };

/** docs/spec.md §4: a policy file is at most 1 MiB. */
export const MAX_POLICY_FILE_BYTES = 1024 * 1024;

export type PolicyParseResult =
  | { ok: true; policy: PolicyFile }
  | { ok: false; code: "policy_invalid" | "policy_unreadable" | "policy_insecure"; reasons: string[] };

type PathSegment = string | number;

const invalid = (reasons: string[]): PolicyParseResult => ({
  ok: false,
  code: "policy_invalid",
  reasons: reasons.slice(0, MAX_REPORTED_PROBLEMS),
});

/**
 * Reads and validates a policy file. Missing, unreadable or not-a-file is policy_unreadable;
 * too big, not UTF-8, malformed or off-schema is policy_invalid.
 */
export function readPolicyFile(path: string): PolicyParseResult {
  // StrictModes first (POSIX): a file someone else can rewrite is no operator's ceiling.
  const modes = process.platform === "win32" ? null : checkPolicyPath(path);
  if (modes && !modes.ok && modes.insecure)
    return { ok: false, code: "policy_insecure", reasons: modes.reasons };
  const checked = modes?.ok ? modes.file : null;
  const read = readBoundedFile(path, MAX_POLICY_FILE_BYTES, (fd) => {
    if (!checked) return true;
    // The file opened is the one whose owner and mode were checked (no swap in between).
    const st = fstatSync(fd);
    return st.dev === checked.dev && st.ino === checked.ino;
  });
  if (read.ok) return parsePolicyBytes(read.bytes);
  switch (read.problem) {
    case "cannot_open":
      return {
        ok: false,
        code: "policy_unreadable",
        reasons: [
          `${escapeControls(path)}: the policy file cannot be opened (${read.errno}${ERRNO_HINT[read.errno] ?? ""})`,
        ],
      };
    case "not_a_file":
      return { ok: false, code: "policy_unreadable", reasons: ["not a regular file"] };
    case "too_big":
      return invalid([tooBig()]);
    case "cannot_read":
      return { ok: false, code: "policy_unreadable", reasons: ["the policy file cannot be read"] };
    case "refused":
      return {
        ok: false,
        code: "policy_insecure",
        reasons: ["the policy file was replaced while it was checked"],
      };
  }
}

const ERRNO_HINT: Record<string, string> = {
  ENOENT: ": no such file; give its full path",
  EACCES: ": permission denied; the server's user must be able to read it",
  ENOTDIR: ": a part of the path is not a folder",
  ELOOP: ": too many symbolic links",
};

function tooBig(): string {
  return `(root): the file is larger than ${MAX_POLICY_FILE_BYTES} bytes (1 MiB)`;
}

/** Validates raw file bytes: size cap, strict UTF-8 (a leading BOM is allowed), then the text. */
export function parsePolicyBytes(bytes: Uint8Array): PolicyParseResult {
  if (bytes.length > MAX_POLICY_FILE_BYTES) return invalid([tooBig()]);
  const text = decodeUtf8(bytes);
  if (text === null) return invalid(["(root): the file is not valid UTF-8"]);
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
    data = body.trimStart().startsWith("{") ? parseStrictJson(body) : parseYamlSubset(body);
  } catch (e) {
    // The nesting caps run first, so the parsers' stack is never expected to run out; if it
    // does, the file is refused rather than the server hurt.
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

// ---------------------------------------------------------------- YAML subset

const YAML_OPTIONS = {
  version: "1.2",
  schema: "core",
  merge: false,
  // The library's own check compares every key with every earlier one (quadratic: 25 s for a
  // 575 KB map); toPlain refuses duplicates in linear time instead, with their path.
  uniqueKeys: false,
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
 * The composer reports each problem as an Error object, and capturing a stack trace for each
 * of a hostile file's ten thousand problems took 0.4 s (measured; 8 ms without). Only the
 * messages and positions are used, so none are captured while it runs. Synchronous: nothing
 * else runs on this thread meanwhile, and the limit is restored however the call ends.
 */
function withoutStackTraces<T>(f: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return f();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * YAML 1.2 core schema without anchors, aliases, tags, directives, merge keys,
 * non-string keys, duplicate keys or more than one document. Anything else is refused, not guessed.
 */
function parseYamlSubset(text: string): DataResult {
  const shape = yamlShapeProblem(text);
  if (shape !== null) return { ok: false, reasons: [shape] };
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
  const docs = withoutStackTraces(() => Array.from(new Composer(YAML_OPTIONS).compose(tokens)));
  if (docs.length !== 1) {
    reasons.push(
      docs.length === 0 ? "(root): the file has no document" : "(root): more than one YAML document",
    );
    return { ok: false, reasons };
  }
  const doc = docs[0];
  for (const err of [...doc.errors, ...doc.warnings]) {
    if (err.code === "DUPLICATE_KEY") continue; // reported below with its path
    // The library's own words, cut short: a message must never grow with the file.
    reasons.push(`${at(err.pos[0])}: ${err.message.slice(0, 200)}`);
  }
  if (reasons.length > 0) return { ok: false, reasons };
  const problems = new Problems();
  const value = toPlain(doc.contents, [], problems);
  return problems.reasons.length > 0 ? { ok: false, reasons: problems.reasons } : { ok: true, value };
}

/**
 * The largest policy the schema admits (64 long title patterns, 256 described regions, 256
 * masks) lexes into about 18,500 YAML tokens; 32,768 leaves room for comments and spacing and
 * keeps the worst refused file near 0.1 s (the library costs about 2 µs a token end to end).
 */
const MAX_YAML_TOKENS = 32_768;
const MAX_BLOCK_INDICATORS_PER_LINE = 16;
/** Block nesting is indentation; a real policy indents a dozen columns. */
const MAX_INDENT_COLUMNS = 256;

/**
 * The yaml library is a pure-JS parser that takes seconds over a hostile 1 MiB file (hundreds of
 * thousands of tokens, or `- - -` / `? ? ?` / `[[[` nesting). One lexer pass, linear and stopped
 * at the first excess, refuses such files before the parser and composer see them; it also bounds
 * how deep the composer can recurse.
 */
function yamlShapeProblem(text: string): string | null {
  let flow = 0;
  let perLine = 0;
  let tokens = 0;
  let lineStart = true;
  for (const token of new Lexer().lex(text)) {
    if (++tokens > MAX_YAML_TOKENS) return `(root): more than ${MAX_YAML_TOKENS} YAML tokens`;
    const type = CST.tokenType(token);
    if (lineStart && type === "space" && token.length > MAX_INDENT_COLUMNS)
      return `(root): indented more than ${MAX_INDENT_COLUMNS} columns`;
    lineStart = type === "newline";
    switch (type) {
      case "flow-map-start":
      case "flow-seq-start":
        if (++flow > MAX_NESTING_DEPTH) return `(root): nested deeper than ${MAX_NESTING_DEPTH} levels`;
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
        if (flow === 0 && ++perLine > MAX_BLOCK_INDICATORS_PER_LINE)
          return `(root): more than ${MAX_BLOCK_INDICATORS_PER_LINE} block indicators on one line`;
        break;
    }
  }
  return null;
}

function forEachCstToken(roots: unknown[], visit: (type: string, offset: number) => void): void {
  const todo: unknown[] = [...roots];
  while (todo.length > 0) {
    const node = todo.pop();
    if (Array.isArray(node)) {
      // One by one: spreading a huge item list into push() would overflow the call stack.
      for (const item of node) todo.push(item);
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

/** Problems found while converting, kept to the first few (a hostile file may have thousands). */
class Problems {
  readonly reasons: string[] = [];
  add(path: readonly PathSegment[], what: string): void {
    if (this.reasons.length < MAX_REPORTED_PROBLEMS) this.reasons.push(`${formatPath(path)}: ${what}`);
  }
}

/**
 * The composed document as plain data. Recursion is bounded by MAX_NESTING_DEPTH (deeper nodes
 * are refused, not visited), and a path is formatted only for a reported problem.
 */
function toPlain(node: unknown, path: PathSegment[], problems: Problems): unknown {
  if (path.length > MAX_NESTING_DEPTH) {
    problems.add(path, `nested deeper than ${MAX_NESTING_DEPTH} levels`);
    return null;
  }
  if (node === null || node === undefined) return null;
  if (isAlias(node)) {
    problems.add(path, "aliases (*name) are not supported");
    return null;
  }
  if (isScalar(node)) {
    const v = node.value;
    if (typeof v === "number" && node.type === Scalar.PLAIN && !DECIMAL.test(node.source ?? "")) {
      problems.add(path, "numbers must be written in decimal");
    }
    if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
    problems.add(path, "unsupported scalar");
    return null;
  }
  if (isSeq(node)) return node.items.map((item, i) => toPlain(item, [...path, i], problems));
  if (isMap(node)) {
    const out: Record<string, unknown> = {};
    for (const pair of node.items) {
      if (!isPair(pair)) continue;
      const k = pair.key;
      if (!isScalar(k) || typeof k.value !== "string") {
        problems.add(path, "keys must be strings");
        continue;
      }
      const key = k.value;
      if (key === "<<" && k.type === Scalar.PLAIN) {
        problems.add(path, "merge keys (<<) are not supported");
        continue;
      }
      if (Object.hasOwn(out, key)) {
        problems.add([...path, key], "duplicate key");
        continue;
      }
      setOwn(out, key, toPlain(pair.value, [...path, key], problems));
    }
    return out;
  }
  problems.add(path, "unsupported YAML node");
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
