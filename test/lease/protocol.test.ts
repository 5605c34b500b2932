import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkRuntimeDir, resolveLinuxScope, scopeHash, windowsScope } from "../../src/lease/endpoint.js";
import { linuxStartTime, parseStatStartTicks } from "../../src/lease/instance.js";
import {
  encodeFrame,
  FrameDecoder,
  isLeaseHours,
  LeaseRequestSchema,
  MAX_MESSAGE_BYTES,
} from "../../src/lease/protocol.js";
import { scratchDir } from "../support/scratch.js";

const instance = { pid: 42, start_time: "2026-11-30T08:00:00.000Z", exe_path: "/usr/bin/x", session: ":1:0" };

describe("lease protocol framing", () => {
  it("round-trips frames split at any byte and several per chunk", () => {
    const a = encodeFrame({ v: 1, id: "a", op: "status", timeout_ms: 10 });
    const b = encodeFrame({ v: 1, id: "b", op: "revoke", timeout_ms: 10 });
    const all = Buffer.concat([a, b]);
    for (let cut = 0; cut <= all.length; cut++) {
      const d = new FrameDecoder();
      const got = [...d.push(all.subarray(0, cut)), ...d.push(all.subarray(cut))];
      expect(got.map((m) => (m as { id: string }).id)).toEqual(["a", "b"]);
      expect(d.pending).toBe(0);
    }
    expect(a.readUInt32BE(0)).toBe(a.length - 4);
  });

  it("refuses an oversized announced length and bytes that are not JSON", () => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(MAX_MESSAGE_BYTES + 1, 0);
    expect(() => new FrameDecoder().push(head)).toThrow(
      expect.objectContaining({ code: "invalid_argument" }),
    );
    const bad = Buffer.concat([Buffer.from([0, 0, 0, 3]), Buffer.from("{x}")]);
    expect(() => new FrameDecoder().push(bad)).toThrow(expect.objectContaining({ code: "invalid_argument" }));
    expect(() => encodeFrame({ pad: "x".repeat(MAX_MESSAGE_BYTES) })).toThrow();
  });

  it("validates requests: version, deadline, capability, hours, no extra fields", () => {
    const ok = { v: 1, id: "r1", timeout_ms: 1000, op: "validate", capability: "inspect", instance };
    expect(LeaseRequestSchema.safeParse(ok).success).toBe(true);
    expect(LeaseRequestSchema.safeParse({ ...ok, v: 2 }).success).toBe(false);
    expect(LeaseRequestSchema.safeParse({ ...ok, timeout_ms: 0 }).success).toBe(false);
    expect(LeaseRequestSchema.safeParse({ ...ok, timeout_ms: undefined }).success).toBe(false);
    expect(LeaseRequestSchema.safeParse({ ...ok, capability: "text" }).success).toBe(false);
    expect(LeaseRequestSchema.safeParse({ ...ok, token: "x" }).success).toBe(false);
    const act = { v: 1, id: "r2", timeout_ms: 1000, op: "activate", hours: 5, capabilities: ["inspect"] };
    expect(LeaseRequestSchema.safeParse(act).success).toBe(true);
    for (const hours of [0, 3, 4, 6, 23, 25, 1.5, -1]) {
      expect(LeaseRequestSchema.safeParse({ ...act, hours }).success).toBe(false);
      expect(isLeaseHours(hours)).toBe(false);
    }
    for (const hours of [1, 2, 5, 8, 12, 24]) expect(isLeaseHours(hours)).toBe(true);
  });
});

describe("lease endpoint and instance helpers", () => {
  it("derives the endpoint from uid + session and refuses unsafe runtime dirs", () => {
    const root = scratchDir("lease-ep");
    const run = join(root, "run");
    mkdirSync(run, { mode: 0o700 });
    const uid = process.getuid!();
    const s = resolveLinuxScope({ DISPLAY: ":7", XDG_RUNTIME_DIR: run, HOME: root }, uid);
    expect(s.hash).toBe(scopeHash("linux", String(uid), "display::7"));
    expect(s.endpoint).toBe(join(run, `uiinspect-lease-${s.hash}.sock`));
    expect(s.instance_session).toBe(`:7:${uid}`);
    expect(s.audit_path).toBe(join(root, ".local/state/uiinspect-mcp/audit/unattended-approval.jsonl"));
    const other = resolveLinuxScope({ DISPLAY: ":8", XDG_RUNTIME_DIR: run }, uid);
    expect(other.hash).not.toBe(s.hash);
    const xdg = resolveLinuxScope({ XDG_SESSION_ID: "3", XDG_RUNTIME_DIR: run }, uid);
    expect(xdg.session_id).toBe("xdg:3");
    expect(() => resolveLinuxScope({ XDG_RUNTIME_DIR: run }, uid)).toThrow(
      expect.objectContaining({ code: "broker_unavailable" }),
    );
    expect(() => resolveLinuxScope({ DISPLAY: ":7" }, uid)).toThrow(
      expect.objectContaining({ code: "broker_unavailable" }),
    );
    expect(() => checkRuntimeDir(run, uid + 1)).toThrow(/owned/);
    const open = join(root, "open");
    mkdirSync(open, { mode: 0o755 });
    expect(() => checkRuntimeDir(open, uid)).toThrow(/0700/);
    rmSync(root, { recursive: true, force: true });
  });

  it("derives the Windows pipe, mutex and audit path from SID + session and refuses malformed ones", () => {
    const sid = "S-1-5-21-1004336348-1177238915-682003330-1001";
    const s = windowsScope({ sid, session: "1" }, { LOCALAPPDATA: "C:\\Users\\u\\AppData\\Local" });
    const hash = scopeHash("win32", sid, "ts:1");
    expect(s).toEqual({
      platform: "win32",
      user: sid,
      session_id: "ts:1",
      instance_session: "1",
      hash,
      endpoint: `\\\\.\\pipe\\uiinspect-lease-${hash}`,
      marker: `Local\\uiinspect-lease-${hash}`,
      runtime_dir: null,
      audit_path: "C:\\Users\\u\\AppData\\Local\\UIInspect.MCP\\audit\\unattended-approval.jsonl",
    });
    expect(windowsScope({ sid, session: "2" }, {}).hash).not.toBe(hash);
    for (const bad of [
      { sid: "S-1-5-21-1 ", session: "1" },
      { sid: "administrator", session: "1" },
      { sid, session: "" },
      { sid, session: "1; x" },
    ]) {
      expect(() => windowsScope(bad, {})).toThrow(expect.objectContaining({ code: "broker_unavailable" }));
    }
  });

  it("parses /proc/PID/stat field 22 even with spaces and parentheses in comm", () => {
    const rest = Array.from({ length: 50 }, (_, i) => String(i + 3));
    const stat = `123 (a) b (c)) ${rest.join(" ")}`;
    expect(parseStatStartTicks(stat)).toBe(22);
    expect(linuxStartTime(1_000_000, 250, 100)).toBe(new Date(1_000_002_500).toISOString());
  });
});
