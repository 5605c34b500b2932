/**
 * Every client pays for the tool listing in tokens on every turn, so the JSON schemas it carries
 * say what a model needs and no more. The server still validates every call with the full zod
 * schema; these trims change only what is shown.
 *
 * Inputs keep types, enums (long ones only at the top level), defaults, numeric ranges, required
 * and the few descriptions written for the model; string lengths and patterns go (a wrong length
 * is refused with a clear invalid_argument). Outputs keep the shape (types, properties, items, nullability, short enums,
 * fixed tuple lengths) and nothing else.
 */

type Json = Record<string, unknown>;

const INPUT_DROP = new Set(["minLength", "maxLength", "pattern", "additionalProperties"]);
const OUTPUT_DROP = new Set([
  "description",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "default",
  "required",
  "additionalProperties",
]);
/** Longer enums in outputs are shown as their type only (the vocabulary is in the docs). */
const OUTPUT_ENUM_MAX = 6;
/** Output fields that are objects or arrays are shown as their type from this depth on (0: top-level fields). */
const OUTPUT_DEPTH = 0;
/** Longer enums of nested input fields are shown as their type (see trim). */
const INPUT_NESTED_ENUM_MAX = 8;
/** Integer bounds at least this large say nothing a model needs (they are the safe-integer range). */
const HUGE = 2 ** 31;

function trim(
  node: unknown,
  drop: ReadonlySet<string>,
  output: boolean,
  key: string | null,
  depth: number,
): unknown {
  if (Array.isArray(node)) return node.map((n) => trim(n, drop, output, null, depth));
  if (!node || typeof node !== "object") return node;
  const o = node as Json;
  if (output && key !== "properties" && depth > OUTPUT_DEPTH) {
    if (o.type === "object" || o.$ref !== undefined) return { type: "object" };
    if (o.type === "array") return { type: "array" };
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(o)) {
    // Under "properties" every key is a field name, never a keyword.
    if (key !== "properties") {
      if (drop.has(k)) continue;
      if ((k === "minimum" || k === "maximum") && typeof v === "number" && Math.abs(v) >= HUGE) continue;
      if (output && k === "enum" && Array.isArray(v) && v.length > OUTPUT_ENUM_MAX) continue;
      // A long vocabulary inside an object argument (expect.state) is listed in full where it is a
      // top-level argument of some tool (find_elements.state); here its type says enough.
      if (!output && depth > 1 && k === "enum" && Array.isArray(v) && v.length > INPUT_NESTED_ENUM_MAX)
        continue;
      // Recursive definitions are cut at the depth limit, so their definitions are not needed.
      if (output && k === "$defs") continue;
    }
    out[k] = trim(v, drop, output, k, key === "properties" ? depth : k === "properties" ? depth + 1 : depth);
  }
  return out;
}

export function trimInputSchema(schema: Json): Json {
  return trim(schema, INPUT_DROP, false, null, 0) as Json;
}

/**
 * The success shape, trimmed, with an `error` property beside it: errors are results too
 * (docs/spec.md §7: structuredContent.error), and with no required fields one object schema admits both.
 */
export function trimOutputSchema(schema: Json): Json {
  const t = trim(schema, OUTPUT_DROP, true, null, 0) as Json;
  const properties = (t.properties as Json | undefined) ?? {};
  return { ...t, type: "object", properties: { ...properties, error: ERROR_PROPERTY } };
}

/** {code, message, retry_after_ms?}; the codes are listed in docs/spec.md §7. */
const ERROR_PROPERTY = { type: "object" };
