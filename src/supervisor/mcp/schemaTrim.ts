/**
 * Every client pays for the tool listing in tokens on every turn, so the JSON schemas it carries
 * say what a model needs and no more. The server still validates every call with the full zod
 * schema; these trims change only what is shown.
 *
 * Inputs keep types, enums (long ones only at the top level), defaults (but false), numeric
 * ranges (but a minimum of 0), required
 * and the few descriptions written for the model; string lengths and patterns go (a wrong length
 * is refused with a clear invalid_argument). A union of plain types is shown as a list of types,
 * and an object argument that describes itself (its description names its fields) as that
 * description. Outputs keep the shape (types, properties, items, nullability, short enums,
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
/**
 * Bounds at least this large say nothing a model needs (coordinates' 65535, crops' 100000, the
 * safe-integer range): the server refuses a value past them with invalid_argument either way.
 */
const HUGE = 65_535;

/** Keys a union member may carry and still be shown as just its type. */
const PLAIN_MEMBER = new Set(["type", "minimum", "maximum", "pattern", "minLength", "maxLength"]);

/** {anyOf: [{type: integer, minimum: 0}, {type: string}]} → {type: [integer, string]}; else null. */
function plainTypes(o: Json): Json | null {
  const members = o.anyOf;
  if (!Array.isArray(members) || Object.keys(o).some((k) => k !== "anyOf")) return null;
  const types: string[] = [];
  for (const m of members) {
    if (!m || typeof m !== "object") return null;
    const t = (m as Json).type;
    if (typeof t !== "string" || Object.keys(m).some((k) => !PLAIN_MEMBER.has(k))) return null;
    types.push(t);
  }
  return new Set(types).size === types.length ? { type: types } : null;
}

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
  if (!output && key !== "properties") {
    const plain = plainTypes(o);
    if (plain) return plain;
    // An object argument below the top level whose description names its fields.
    if (depth > 0 && o.type === "object" && typeof o.description === "string")
      return { type: "object", description: o.description };
  }
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
      // What a model assumes anyway: no negative counts or coordinates, flags off unless set.
      if (!output && k === "minimum" && v === 0) continue;
      if (!output && k === "default" && v === false) continue;
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
 * Fields every result may carry, left out of the shown shape: the correlation_id (of effects and
 * waits) and the error of a refused call (structuredContent.error, {code, message,
 * retry_after_ms?}, docs/spec.md §7). With no required fields and no additionalProperties, the
 * trimmed schema admits both, so a client validating errors against it accepts them.
 */
const COMMON_OUTPUT = new Set(["correlation_id", "error"]);

/** The success shape, trimmed, without the fields every result has. */
export function trimOutputSchema(schema: Json): Json {
  const t = trim(schema, OUTPUT_DROP, true, null, 0) as Json;
  const properties = (t.properties as Json | undefined) ?? {};
  const own = Object.fromEntries(Object.entries(properties).filter(([k]) => !COMMON_OUTPUT.has(k)));
  return { ...t, type: "object", properties: own };
}
