import { describe, expect, it } from "vitest";
import { type AuditEvent, AuditEventSchema } from "../../src/supervisor/audit.js";
import { checkAuditEvent } from "../../src/supervisor/auditCheck.js";

/** The names of the offending top-level fields zod reports, as record() reported them before. */
function zodFields(candidate: unknown): string[] | null {
  const parsed = AuditEventSchema.safeParse(candidate);
  if (parsed.success) return null;
  const fields = new Set<string>();
  const known = new Set(Object.keys(AuditEventSchema.shape));
  for (const issue of parsed.error.issues) {
    const top = issue.path[0];
    fields.add(typeof top === "string" && known.has(top) ? top : "unknown_field");
  }
  return [...fields].sort();
}

const good = (): Record<string, unknown> => ({
  time: "2026-12-02T17:00:00.000Z",
  correlation_id: "0123456789ab",
  client: "ba9876543210",
  policy_id: "demo-policy",
  action: "observe",
  tool: "screenshot_window",
  outcome: "allow",
  reason: "ok",
  duration_ms: 12.5,
  pid: 4242,
  process_start: "2026-11-30T08:00:00+01:00",
  counters: { width: 640, verified: true },
});

class Shaped {
  readonly time = "2026-12-02T17:00:00.000Z";
}

const STRINGS = [
  "",
  "Secret window - Notepad",
  "0123456789ab",
  "0123456789AB",
  "0123456789abc",
  "click_window",
  "Click_window",
  "a".repeat(64),
  "a".repeat(65),
  "ok",
  "target_not_allowed",
  "observe",
  "none",
  "allow",
  "2026-12-02T17:00:00Z",
  "2026-12-02T17:00:00.123456+05:30",
  "2026-12-02T17:00Z",
  "2026-12-02 17:00:00Z",
  "2026-12-02T17:00:00",
  "2026-02-29T00:00:00Z",
  "2024-02-29T00:00:00Z",
  "2026-12-02T24:00:00Z",
  "2026-12-02T17:00:00+24:00",
  "line1\nline2",
  "zero\u200bwidth",
  "tab\there",
  "para\u2029graph",
  "x".repeat(128),
  "x".repeat(129),
  "ünïcödé policy",
];
const OTHERS: unknown[] = [
  null,
  undefined,
  0,
  -0,
  -1,
  1.5,
  4242,
  2 ** 53,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  {},
  [],
  [1],
  { a: 1 },
  new Date(0),
  new Shaped(),
  Object.create(null),
];
const VALUES: unknown[] = [...STRINGS, ...OTHERS];

const COUNTERS: unknown[] = [
  {},
  { seq: 1, verified: false },
  { typed: "hello" },
  { "Secret Title": 1 },
  { __proto__x: 1 },
  { nested: { a: 1 } },
  { list: [1] },
  { n: Number.NaN },
  { n: Number.NEGATIVE_INFINITY },
  { n: null },
  { n: -3.5 },
  Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`c${i}`, i])),
  Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`c${i}`, i])),
  Object.assign(Object.create(null), { a: 1 }),
  [],
  "counters",
  null,
  new Shaped(),
];

/** Every field given every value in turn, plus whole-event oddities. */
function candidates(): unknown[] {
  const out: unknown[] = [good()];
  for (const field of Object.keys(good()))
    for (const v of field === "counters" ? [...COUNTERS, ...VALUES] : VALUES)
      out.push({ ...good(), [field]: v });
  for (const field of Object.keys(good())) {
    const e = good();
    delete e[field];
    out.push(e);
  }
  out.push({ ...good(), title: "Secret window" }, { ...good(), value: "typed text" });
  out.push({ ...good(), tool: "Secret window", counters: { "Secret Title": 1 }, extra: 1 });
  out.push(
    null,
    undefined,
    "event",
    42,
    [],
    [good()],
    new Shaped(),
    Object.assign(Object.create(null), good()),
  );
  return out;
}

describe("the audit event's written-out check", () => {
  it("refuses exactly what the zod schema refuses, naming the same fields", () => {
    let refused = 0;
    for (const c of candidates()) {
      const ours = checkAuditEvent<AuditEvent>(c);
      const theirs = zodFields(c);
      const label = JSON.stringify(c) ?? String(c);
      if (theirs === null) {
        expect(ours.ok, label).toBe(true);
        if (ours.ok) expect(ours.event, label).toEqual(AuditEventSchema.parse(c));
      } else {
        refused++;
        expect(ours.ok ? null : ours.fields, label).toEqual(theirs);
      }
    }
    expect(refused).toBeGreaterThan(400);
  });

  it("stores a copy: the candidate changed afterwards does not change the event", () => {
    const c = good();
    const r = checkAuditEvent<AuditEvent>(c);
    expect(r.ok).toBe(true);
    (c.counters as Record<string, unknown>).width = "Secret";
    c.tool = "Secret window";
    if (r.ok) {
      expect(r.event.counters.width).toBe(640);
      expect(r.event.tool).toBe("screenshot_window");
    }
  });
});
