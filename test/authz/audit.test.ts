import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ClientIdentity } from "../../src/supervisor/access/clientIdentity.js";
import {
  type AuditEventInput,
  AuditLog,
  newCorrelationId,
  SERVER_EVENT_KEY,
} from "../../src/supervisor/audit.js";
import { ConsentBroker } from "../../src/supervisor/consent/broker.js";
import { scratchDir } from "../support/scratch.js";
import { instance, ManualTime, ScriptedPrompter } from "./helpers.js";

let dir = "";
beforeEach(() => {
  dir = scratchDir("authz-audit");
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function event(seq: number, over: Partial<AuditEventInput> = {}): AuditEventInput {
  return {
    correlation_id: newCorrelationId(),
    client: "0123456789ab",
    policy_id: "demo-policy",
    action: "click",
    tool: "click_window",
    outcome: "allow",
    reason: "ok",
    duration_ms: 12.5,
    pid: 4242,
    process_start: "2026-11-30T08:00:00.000Z",
    counters: { seq, verified: true },
    ...over,
  };
}

const posix = process.platform !== "win32";
/** The full client key the events of these tests concern. */
const KEY = "0123456789abcdef0123456789abcdef";

describe("audit", () => {
  it("correlation ids are 12 lowercase hex and unique", () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newCorrelationId()));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{12}$/);
  });

  it("keeps a ring of the newest 1000 events, newest first, stamped from the clock", () => {
    const t = new ManualTime();
    const log = new AuditLog({ clock: t.clock });
    for (let i = 0; i < 1005; i++) log.record(event(i), KEY);
    const all = log.recent(5000);
    expect(all).toHaveLength(1000);
    expect(all[0].counters.seq).toBe(1004);
    expect(all[999].counters.seq).toBe(5);
    expect(log.recent(3).map((e) => e.counters.seq)).toEqual([1004, 1003, 1002]);
    expect(log.recent(0)).toEqual([]);
    expect(all[0].time).toBe("2026-11-30T10:00:00.000Z");
    expect(Object.isFrozen(all[0])).toBe(true);
  });

  it("drops and counts events that do not fit the schema, so free text has nowhere to go", () => {
    const rejectedFields: string[][] = [];
    const log = new AuditLog({ clock: () => 0, onReject: (f) => rejectedFields.push(f) });
    const bad: unknown[] = [
      { ...event(1), title: "Secret window" },
      event(2, { counters: { typed: "hello" as unknown as number } }),
      event(3, { counters: { "Secret Title": 1 } }),
      event(4, { tool: "click window; title=x" }),
      event(5, { client: "Claude Code" }),
      event(6, { reason: "something bad happened" as "ok" }),
      event(7, { action: "format" as "click" }),
      event(8, { policy_id: "line1\nline2" }),
      event(9, { duration_ms: Number.NaN }),
      event(10, { process_start: "yesterday" }),
      event(11, { correlation_id: "ABCDEF012345" }),
      event(12, { counters: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`c${i}`, i])) }),
      event(13, { outcome: "Secret window" as "allow" }),
      event(14, { counters: { seq: 14, title: { text: "Secret" } as unknown as number } }),
      event(15, { counters: ["Secret"] as unknown as Record<string, number> }),
      event(16, { policy_id: "demo\u200bpolicy" }),
      event(17, { policy_id: "p".repeat(129) }),
      event(18, { pid: 1.5 }),
      event(19, { time: "2026-11-30 10:00:00 Secret" }),
      { ...event(20), value: "typed text" },
      [event(21)],
      "Secret window",
    ];
    for (const e of bad) log.record(e as AuditEventInput, KEY);
    log.record(event(99), KEY);
    expect(log.stats()).toMatchObject({ recorded: 1, rejected: bad.length });
    expect(log.recent(10).map((e) => e.counters.seq)).toEqual([99]);
    // The reject hook names schema fields only, never the offending keys or values.
    expect(rejectedFields[0]).toEqual(["unknown_field"]);
    expect(rejectedFields[1]).toEqual(["counters"]);
    expect(rejectedFields[12]).toEqual(["outcome"]);
    expect(rejectedFields[13]).toEqual(["counters"]);
    expect(rejectedFields[19]).toEqual(["unknown_field"]);
    expect(JSON.stringify(rejectedFields)).not.toMatch(/Secret|hello|title|typed/);
  });

  it.skipIf(!posix)("creates the JSONL file with mode 0600 and appends one line per event", async () => {
    const path = join(dir, "audit.jsonl");
    const old = process.umask(0);
    let log: AuditLog;
    try {
      log = new AuditLog({ clock: () => 0, filePath: path });
    } finally {
      process.umask(old);
    }
    expect(log.sink).toBe("open");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    for (let i = 0; i < 3; i++) log.record(event(i), KEY);
    await log.close();
    const lines = readFileSync(path, "utf8").trim().split("\n");
    expect(lines.map((l) => JSON.parse(l).counters.seq)).toEqual([0, 1, 2]);
  });

  it.skipIf(!posix)(
    "never truncates: an existing file keeps its lines and is tightened to 0600",
    async () => {
      const path = join(dir, "audit.jsonl");
      writeFileSync(path, '{"earlier":"line"}\n');
      chmodSync(path, 0o644);
      const first = new AuditLog({ clock: () => 0, filePath: path });
      first.record(event(1), KEY);
      await first.close();
      const second = new AuditLog({ clock: () => 0, filePath: path });
      second.record(event(2), KEY);
      await second.close();
      expect(statSync(path).mode & 0o777).toBe(0o600);
      const lines = readFileSync(path, "utf8").trim().split("\n");
      expect(lines[0]).toBe('{"earlier":"line"}');
      expect(lines.slice(1).map((l) => JSON.parse(l).counters.seq)).toEqual([1, 2]);
    },
  );

  it.skipIf(!posix)("refuses a symlink or a directory as the sink, and keeps working in memory", () => {
    const target = join(dir, "elsewhere.jsonl");
    writeFileSync(target, "");
    const link = join(dir, "link.jsonl");
    symlinkSync(target, link);
    const codes: string[] = [];
    const viaLink = new AuditLog({ clock: () => 0, filePath: link, onSinkError: (c) => codes.push(c) });
    expect(viaLink.sink).toBe("failed");
    viaLink.record(event(1), KEY);
    expect(viaLink.recent(1)).toHaveLength(1);
    expect(readFileSync(target, "utf8")).toBe("");
    const sub = join(dir, "adir");
    mkdirSync(sub);
    const onDir = new AuditLog({ clock: () => 0, filePath: sub, onSinkError: (c) => codes.push(c) });
    expect(onDir.sink).toBe("failed");
    onDir.record(event(2), KEY);
    expect(onDir.stats()).toMatchObject({ recorded: 1, sinkDropped: 1, sink: "failed" });
    expect(codes).toHaveLength(2);
    for (const c of codes) expect(c).toMatch(/^[A-Z0-9_]+$/);
  });

  it("a client label carrying a canary never reaches audit (ring or file)", async () => {
    const CANARY = "CANARY-7f3a9";
    const t = new ManualTime();
    const path = join(dir, "canary.jsonl");
    const log = new AuditLog({ clock: t.clock, filePath: path });
    const prompter = new ScriptedPrompter();
    const broker = new ConsentBroker({
      prompter,
      clock: t.clock,
      isInstanceAlive: async () => true,
      setTimer: t.setTimer,
      clearTimer: t.clearTimer,
    });
    const id = ClientIdentity.fromClientInfo({ name: `Claude Code ${CANARY}`, version: CANARY });
    const started = t.now;
    const p = broker.request({
      clientHash: id.hash,
      clientLabel: id.label,
      instance: instance(4242),
      capabilities: ["inspect"],
    });
    await t.advance(250);
    expect(prompter.last().content.client_label).toContain(CANARY); // the dialog shows it, marked self-reported
    prompter.last().answer("approve");
    const d = await p;
    const i = instance(4242);
    log.record(
      {
        correlation_id: newCorrelationId(),
        client: id.hash,
        policy_id: null,
        action: "none",
        tool: "request_access",
        outcome: d.decision === "approved" ? "allow" : "deny",
        reason: "ok",
        duration_ms: t.now - started,
        pid: i.pid,
        process_start: i.start_time,
        counters: { capabilities: d.capabilities.length, dialog: d.source === "dialog" },
      },
      id.hash,
    );
    // Attempts to push the label through identifier or counter fields are refused by the schema.
    log.record(event(1, { tool: id.label }), KEY);
    log.record(event(2, { counters: { [id.label]: 1 } }), KEY);
    log.record(event(3, { client: id.label }), KEY);
    await log.close();
    expect(log.stats()).toMatchObject({ recorded: 1, rejected: 3 });
    const ring = JSON.stringify(log.recent(1000));
    expect(ring).not.toContain(CANARY);
    expect(readFileSync(path, "utf8")).not.toContain(CANARY);
    expect(ring).toContain(id.hash);
  });

  it("every event names the client it concerns: a call without the key does not compile", () => {
    const log = new AuditLog({ capacity: 10, clock: () => 0 });
    // @ts-expect-error the client key is required, so no event can fall out of get_audit_events
    log.record(event(1));
    log.record(event(2), KEY);
    log.record(event(3), SERVER_EVENT_KEY);
    expect(log.recent(10, KEY).map((e) => e.counters.seq)).toEqual([2]);
    // The server's own events reach no client's reading, only the operator's.
    expect(log.recent(10, SERVER_EVENT_KEY).map((e) => e.counters.seq)).toEqual([3]);
    expect(log.recent(10)).toHaveLength(3);
  });
});
