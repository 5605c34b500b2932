import { regexes } from "zod";
import { ERROR_CODES } from "../shared/errors.js";
import { CAPABILITIES } from "./policy/schema.js";

/**
 * The audit event's check, written out for the one shape it checks. audit.ts declares the same
 * rules as a zod schema (the documented shape, and the output schema of get_audit_events); this
 * is what every recorded event goes through. zod's parsers are shared by every schema of the
 * server, so on the supervisor thread they run megamorphic: about 6 µs an event there against
 * 0.6 µs here (docs/benchmarks.md). test/authz/audit-check.test.ts holds the two to the same
 * answers, event by event.
 */

export const HEX12 = /^[0-9a-f]{12}$/;
/** Tool and counter names are identifiers we choose, so a narrow pattern keeps free text out. */
export const IDENT = /^[a-z][a-z0-9_]{0,63}$/;
/** Bounded, and without control or format characters. */
export const POLICY_ID = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u;
export const POLICY_ID_MAX = 128;
export const MAX_COUNTERS = 32;
/** RFC 3339 with `Z` or an offset: zod's own pattern for `z.iso.datetime({ offset: true })`. */
const DATETIME = regexes.datetime({ offset: true });

/** Every capability, plus the two non-capability classes of tools. */
export const AUDIT_ACTIONS = [...CAPABILITIES, "discovery", "none"] as const;
export const AUDIT_OUTCOMES = ["allow", "deny", "error"] as const;
export const AUDIT_REASONS = [...ERROR_CODES, "ok"] as const;

/** The fields of an event, in the order the stored copy has them. */
export const AUDIT_FIELD_ORDER = [
  "time",
  "correlation_id",
  "client",
  "policy_id",
  "action",
  "tool",
  "outcome",
  "reason",
  "duration_ms",
  "pid",
  "process_start",
  "counters",
] as const;

const FIELDS: ReadonlySet<string> = new Set(AUDIT_FIELD_ORDER);
const ACTIONS: ReadonlySet<unknown> = new Set(AUDIT_ACTIONS);
const OUTCOMES: ReadonlySet<unknown> = new Set(AUDIT_OUTCOMES);
const REASONS: ReadonlySet<unknown> = new Set(AUDIT_REASONS);

const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/** Counters are plain data: an object literal (or one without a prototype), never an array or a class. */
function isPlain(v: unknown): v is Record<string, unknown> {
  if (!isRecord(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

const matches = (v: unknown, re: RegExp): v is string => typeof v === "string" && re.test(v);
const datetimeOrNull = (v: unknown) => v === null || matches(v, DATETIME);

/** A copy of the counters when every name and value fits, else null. */
function checkCounters(v: unknown): Record<string, number | boolean> | null {
  if (!isPlain(v)) return null;
  const out: Record<string, number | boolean> = {};
  let n = 0;
  for (const key in v) {
    const value = v[key];
    if (!IDENT.test(key) || ++n > MAX_COUNTERS) return null;
    if (typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))) out[key] = value;
    else return null;
  }
  return out;
}

export type AuditCheck<T> = { ok: true; event: T } | { ok: false; fields: string[] };

/**
 * Checks one candidate event. Valid: a fresh copy with the fields in order (later changes to the
 * candidate do not reach it). Invalid: the names of the offending top-level fields, sorted,
 * "unknown_field" for anything that is not one (never a value, never a counter's name).
 */
export function checkAuditEvent<T>(candidate: unknown): AuditCheck<T> {
  if (!isRecord(candidate)) return { ok: false, fields: ["unknown_field"] };
  const e = candidate;
  const bad: string[] = [];
  for (const key in e) if (!FIELDS.has(key)) bad.push("unknown_field");
  const { time, correlation_id, client, policy_id, action, tool, outcome, reason } = e;
  const { duration_ms, pid, process_start } = e;
  if (!matches(time, DATETIME)) bad.push("time");
  if (!matches(correlation_id, HEX12)) bad.push("correlation_id");
  if (!matches(client, HEX12)) bad.push("client");
  if (policy_id !== null && !(matches(policy_id, POLICY_ID) && policy_id.length <= POLICY_ID_MAX))
    bad.push("policy_id");
  if (!ACTIONS.has(action)) bad.push("action");
  if (!matches(tool, IDENT)) bad.push("tool");
  if (!OUTCOMES.has(outcome)) bad.push("outcome");
  if (!REASONS.has(reason)) bad.push("reason");
  if (typeof duration_ms !== "number" || !Number.isFinite(duration_ms) || duration_ms < 0)
    bad.push("duration_ms");
  if (pid !== null && !(Number.isSafeInteger(pid) && (pid as number) >= 0)) bad.push("pid");
  if (!datetimeOrNull(process_start)) bad.push("process_start");
  const counters = checkCounters(e.counters);
  if (counters === null) bad.push("counters");
  if (bad.length > 0 || counters === null) return { ok: false, fields: [...new Set(bad)].sort() };
  const event = {
    time,
    correlation_id,
    client,
    policy_id,
    action,
    tool,
    outcome,
    reason,
    duration_ms,
    pid,
    process_start,
    counters,
  };
  return { ok: true, event: event as T };
}
