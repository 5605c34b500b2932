import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditLog, newCorrelationId } from "../../src/supervisor/audit.js";
import { Desk, win } from "../support/consent.js";
import { AUDIENCE, ISSUER, makeIssuer, RemoteClient } from "../support/remote.js";
import { type InProcessRemote, remoteOptions, startRemoteInProcess } from "../support/remoteInProcess.js";
import { scratchDir } from "../support/scratch.js";

// What a remote client's errors may echo: the names it got wrong (unknown argument names,
// unknown action names), cut short and with everything that does not print as itself escaped;
// never a value. And audit reads keyed by the full client key, not by its 48-bit prefix.

let remote: InProcessRemote;
let client: RemoteClient;

beforeAll(async () => {
  const issuer = await makeIssuer(scratchDir("echo"));
  remote = await startRemoteInProcess(
    new Desk([win(1)]),
    remoteOptions({
      oauth: {
        issuer: ISSUER,
        audience: AUDIENCE,
        jwks: issuer.jwksFile,
        maxLifetimeSeconds: 3600,
        clockSkewSeconds: 60,
      },
    }),
  );
  client = await RemoteClient.connect(remote.url, {
    token: await issuer.sign({ sub: "echo", scope: "uiinspect:observe uiinspect:click" }),
  });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await remote?.close();
});

/** Raw characters that must never come back as themselves. */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{M}\u00a0\u2028]/u;

describe("echoed names over HTTP", () => {
  it("an unknown argument name comes back cut short and printable", async () => {
    const key = `k\u00a0\u0301\ue000\u202e${"x".repeat(5000)}`;
    const r = await client.call("list_windows", { [key]: "the value never comes back" });
    expect(r.code).toBe("invalid_argument");
    const message = String((r.structured.error as { message: string }).message);
    expect(message).toContain("unknown field");
    expect(message).toContain("\\u00a0");
    expect(message).toContain("\\u0301");
    expect(message).toContain("\\ue000");
    expect(message).toContain("\\u202e");
    expect(message).not.toMatch(UNPRINTABLE);
    expect(message).not.toContain("the value never comes back");
    expect(message.length).toBeLessThan(300);
  });

  it("an unknown action name comes back cut short and printable", async () => {
    const action = `cl\u200bi\u0308ck${"y".repeat(2000)}`;
    const r = await client.call("request_access", { hwnd: 1001, capabilities: [action] });
    expect(r.code).toBe("invalid_argument");
    const message = String((r.structured.error as { message: string }).message);
    expect(message).toContain("unknown action");
    expect(message).toContain("\\u200b");
    expect(message).toContain("\\u0308");
    expect(message).not.toMatch(UNPRINTABLE);
    expect(message.length).toBeLessThan(400);
  });
});

describe("audit reads by the full client key", () => {
  it("two keys with the same 12-hex audit id see only their own events", () => {
    const log = new AuditLog({ clock: () => Date.UTC(2026, 11, 1) });
    const shortId = "0123456789ab";
    const keyA = `${shortId}${"a".repeat(20)}`;
    const keyB = `${shortId}${"b".repeat(20)}`;
    const event = (tool: string) => ({
      correlation_id: newCorrelationId(),
      client: shortId,
      policy_id: null,
      action: "observe" as const,
      tool,
      outcome: "allow" as const,
      reason: "ok" as const,
      duration_ms: 1,
      pid: null,
      process_start: null,
      counters: {},
    });
    log.record(event("list_windows"), keyA);
    log.record(event("health_check"), keyB);
    log.record(event("list_windows"), keyA);
    expect(log.recent(10, keyA).map((e) => e.tool)).toEqual(["list_windows", "list_windows"]);
    expect(log.recent(10, keyB).map((e) => e.tool)).toEqual(["health_check"]);
    // The short id alone matches nobody: it is not a key.
    expect(log.recent(10, shortId)).toEqual([]);
    expect(log.recent(10)).toHaveLength(3);
  });

  it("get_audit_events over HTTP returns the caller's events", async () => {
    await client.ok("list_windows");
    const events = (await client.ok("get_audit_events", { limit: 10 })).events as Array<{ tool: string }>;
    expect(events.map((e) => e.tool)).toContain("list_windows");
  });
});
