import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fullAnnotations } from "../../src/supervisor/mcp/server.js";
import { InProcessHarness } from "../support/inProcess.js";
import {
  approvingDesktop as desktop,
  filePolicy,
  LOOSE_BUDGETS,
  RUFFLE,
  ruffleWindow,
} from "../support/mcp.js";
import { closeServersAfterEach, track } from "../support/servers.js";

const CANARY = "CANARY-7f3a9c";

closeServersAfterEach();
/** `env` names the desktop and the policy, as a stdio server's environment would. */
const start = (env: Record<string, string>, info?: { name: string; version: string }) =>
  track(InProcessHarness.start({ UIINSPECT_PLATFORM: "fake", ...env }, info));

describe("foundation in process (SDK client over InMemoryTransport)", () => {
  it("lists every tool the policy can authorize, with schemas and annotations", async () => {
    const d = desktop();
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "*",
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe,inspect,hover,click,interact,key,text,close,drag",
    });
    const { tools } = await h.client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of [
      "health_check",
      "list_windows",
      "get_window_state",
      "get_virtual_screen_bounds",
      "wait_for_window",
      "wait_for_title_change",
      "get_rate_limit_state",
      "get_audit_events",
    ])
      expect(names).toContain(n);
    for (const t of tools) {
      expect(t.inputSchema.type).toBe("object");
      // Hints equal to MCP's defaults are left out; data-returning tools list their shape.
      const a = fullAnnotations(t);
      expect(t.outputSchema !== undefined, t.name).toBe(a.readOnlyHint);
      for (const [k, v] of Object.entries(t.annotations ?? {}))
        expect(v, `${t.name} ${k}`).not.toBe(k === "destructiveHint" || k === "openWorldHint");
    }
    // No profiles folder: the profile tools could only refuse; nothing protects observe.
    expect(names).not.toContain("check_coordinate_profile");
    const shot = tools.find((t) => t.name === "screenshot_window");
    expect(Object.keys(shot?.inputSchema.properties ?? {})).not.toContain("confirmation_token");
    const text = tools.find((t) => t.name === "send_text");
    expect(Object.keys(text?.inputSchema.properties ?? {})).toContain("confirmation_token");
  });

  it("without a policy only health_check works", async () => {
    const d = desktop();
    const h = await start({ UIINSPECT_FAKE_DESKTOP: d.path });
    const health = await h.ok("health_check");
    expect(health.platform).toBe("fake");
    expect((health.policy as { status: string }).status).toBe("none");
    // Event-loop delay over a rolling window, which says how many seconds it covers.
    const loop = health.event_loop as Record<string, unknown>;
    expect(Object.keys(loop).sort()).toEqual(["max_ms", "p50_ms", "p99_ms", "window_s"]);
    for (const v of Object.values(loop)) expect(v).toBeGreaterThanOrEqual(0);
    expect((await h.call("list_windows")).code).toBe("policy_not_configured");
    expect((await h.call("get_window_state", { hwnd: 1001 })).code).toBe("policy_not_configured");
  });

  it("distinguishes conflicting, unreadable, invalid and expired policies", async () => {
    const d = desktop();
    const good = d.writePolicy(filePolicy());
    const conflict = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: good,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle*",
    });
    expect((await conflict.call("list_windows")).code).toBe("policy_conflict");
    // health_check names the source(s) configured and why the policy is unusable.
    expect((await conflict.ok("health_check")).policy).toMatchObject({
      source: "file+env",
      status: "error",
      code: "policy_conflict",
      reasons: [expect.stringContaining("DESKTOP_AUTOMATION_ALLOWED_TITLES is set together with")],
    });
    const unreadable = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: join(d.dir, "nope.json"),
    });
    expect((await unreadable.call("list_windows")).code).toBe("policy_unreadable");
    const bad = d.writePolicy({ ...filePolicy(), allowed_actions: ["teleport"] }, "bad.json");
    const invalid = await start({ UIINSPECT_FAKE_DESKTOP: d.path, DESKTOP_AUTOMATION_POLICY_FILE: bad });
    expect((await invalid.call("list_windows")).code).toBe("policy_invalid");
    const why = (await invalid.ok("health_check")).policy as { source: string; reasons: string[] };
    expect(why.source).toBe("file");
    expect(why.reasons.join("\n")).toMatch(/allowed_actions/);
    const old = d.writePolicy({ ...filePolicy(), expires_at: "2020-01-01T00:00:00Z" }, "old.json");
    const expired = await start({ UIINSPECT_FAKE_DESKTOP: d.path, DESKTOP_AUTOMATION_POLICY_FILE: old });
    expect((await expired.call("list_windows")).code).toBe("policy_expired");
    expect((await expired.ok("health_check")).status).toBe("degraded");
  });

  it("filters windows by title and executable, and resolves window state", async () => {
    const d = desktop([
      ruffleWindow(),
      ruffleWindow({
        hwnd: 1002,
        title: "Ruffle - fake.swf",
        pid: 5555,
        process_path: "C:\\evil\\ruffle.exe",
        z: 1,
      }),
      ruffleWindow({
        hwnd: 1003,
        title: "Notepad",
        pid: 6666,
        process_path: "C:\\Windows\\notepad.exe",
        z: 2,
      }),
      ruffleWindow({ hwnd: 1004, title: "Ruffle - hidden", pid: 7777, visible: false, z: 3 }),
    ]);
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "ruffle - *",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: "c:/program files/RUFFLE/bin/ruffle.exe",
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe",
    });
    const list = (await h.ok("list_windows")).windows as Array<Record<string, unknown>>;
    expect(list.map((w) => w.hwnd)).toEqual(["1001"]);
    expect(list[0]).toMatchObject({
      pid: 4242,
      process_path: RUFFLE,
      rect: [100, 100, 924, 740],
      foreground: true,
    });
    const state = await h.ok("get_window_state", { hwnd: "1001" });
    expect(state).toMatchObject({ visible: true, iconic: false, foreground: true, on_top: false });
    expect((await h.call("get_window_state", { hwnd: 1002 })).code).toBe("target_not_allowed");
    expect((await h.call("get_window_state", { hwnd: 9999 })).code).toBe("target_not_found");
    // A title match is looked for among listed windows only: the hidden "Ruffle - hidden" of
    // the same executable neither matches nor makes "ruffle" ambiguous.
    expect(await h.ok("request_access", { title_contains: "ruffle" })).toMatchObject({
      decision: "approved",
    });
    const held = (await h.ok("get_access_state")).grants as Array<{ hwnd: string }>;
    expect(held.map((g) => g.hwnd)).toEqual(["1001"]);
    const bounds = await h.ok("get_virtual_screen_bounds");
    expect(bounds.size).toEqual([1920, 1080]);
  });

  it("wait_for_window reports progress and finds a window that appears later", async () => {
    const d = desktop([]);
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      ...LOOSE_BUDGETS,
    });
    const progress: unknown[] = [];
    await h.ok("list_windows");
    setTimeout(() => d.write({ session: 1, foreground: 1001, windows: [ruffleWindow()] }), 800);
    const r = await h.call(
      "wait_for_window",
      { title_contains: "game", timeout_ms: 5000, poll_interval_ms: 100 },
      { onprogress: (p) => progress.push(p) },
    );
    expect(r.structured.found).toBe(true);
    expect(r.structured.correlation_id).toMatch(/^[0-9a-f]{12}$/);
    expect(progress.length).toBeGreaterThan(0);
    const none = await h.ok("wait_for_window", {
      title_contains: "nothing",
      timeout_ms: 300,
      poll_interval_ms: 100,
    });
    expect(none.found).toBe(false);
  });

  it("a cancelled wait stops on the server, which keeps serving", async () => {
    const d = desktop();
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      ...LOOSE_BUDGETS,
    });
    const ac = new AbortController();
    const p = h.call(
      "wait_for_window",
      { title_contains: "never", timeout_ms: 30_000 },
      { signal: ac.signal },
    );
    setTimeout(() => ac.abort(), 300);
    await expect(p).rejects.toThrow();
    // The server records the call once its handler has stopped: poll the audit (bounded) for it.
    let wait: Record<string, unknown> | undefined;
    for (const end = Date.now() + 5000; !wait && Date.now() < end; ) {
      const events = (await h.ok("get_audit_events", { limit: 5 })).events as Array<Record<string, unknown>>;
      wait = events.find((e) => e.tool === "wait_for_window");
      if (!wait) await new Promise((r) => setTimeout(r, 50));
    }
    expect(wait?.reason).toBe("cancelled");
    expect(Number(wait?.duration_ms)).toBeLessThan(5000);
  });

  it("wait_for_title_change sees a retitle and fails at once when the window leaves", async () => {
    const d = desktop();
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      ...LOOSE_BUDGETS,
    });
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    // Each change is made at the first progress notification, i.e. once the server holds the
    // call's starting title (a change before that would be the starting title itself).
    const once = (change: () => void) => {
      let done = false;
      return () => {
        if (!done) change();
        done = true;
      };
    };
    const retitle = once(() =>
      d.write({ session: 1, foreground: 1001, windows: [ruffleWindow({ title: "Ruffle - level2.swf" })] }),
    );
    const r = await h.call(
      "wait_for_title_change",
      { hwnd: 1001, timeout_ms: 5000, poll_interval_ms: 100 },
      { onprogress: retitle },
    );
    expect(r.structured).toMatchObject({ changed: true, title: "Ruffle - level2.swf" });
    const leave = once(() => d.write({ session: 1, foreground: null, windows: [] }));
    const started = Date.now();
    const gone = await h.call(
      "wait_for_title_change",
      { hwnd: 1001, timeout_ms: 20_000, poll_interval_ms: 100 },
      { onprogress: leave },
    );
    expect(gone.code).toBe("target_gone");
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("rate limits discovery with retry_after_ms and keeps inspection and action budgets apart", async () => {
    const d = desktop();
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "3",
    });
    for (let i = 0; i < 3; i++) await h.ok("list_windows");
    const limited = await h.call("list_windows");
    expect(limited.code).toBe("rate_limited");
    const err = limited.structured.error as { retry_after_ms: number };
    expect(err.retry_after_ms).toBeGreaterThan(0);
    // 1 s buckets: a unit counts for 60–61 s, so the honest wait is at most 61 s.
    expect(err.retry_after_ms).toBeLessThanOrEqual(61_000);
    const state = await h.ok("get_rate_limit_state");
    expect(state.client).toMatchObject({
      discovery: { used: 3, limit: 3 },
      inspection: { used: 0 },
      action: { used: 0 },
    });
  });

  it("answers 100 malformed calls with invalid_argument and keeps serving", async () => {
    const d = desktop();
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      ...LOOSE_BUDGETS,
    });
    const bad: Array<[string, Record<string, unknown>]> = [
      ["get_window_state", { hwnd: "abc" }],
      ["get_window_state", { hwnd: -1 }],
      ["get_window_state", {}],
      ["wait_for_window", { title_contains: "" }],
      ["wait_for_window", { title_contains: "x", timeout_ms: 31_000 }],
      ["screenshot_window", { hwnd: 1001, title_contains: "Ruffle" }],
      ["click_window", { hwnd: 1001, x: "1", y: 2 }],
      ["click_window", { hwnd: 1001, x: 1.5, y: 2 }],
      ["send_key", { hwnd: 1001, key: "win" }],
      ["send_key", { hwnd: 1001, key: "a", modifiers: ["ctrl", "alt", "shift"] }],
      ["send_text", { hwnd: 1001, text: "" }],
      ["send_text", { hwnd: 1001, text: "a\u0000b" }],
      ["scroll_window", { hwnd: 1001, x: 1, y: 1, notches: 0 }],
      ["hover_window", { hwnd: 1001, x: 1, y: 1, dwell_ms: 10_001 }],
      ["inspect_tree", { detail: "full", hwnd: 1001, max_depth: 33 }],
      ["get_audit_events", { limit: 0 }],
      ["list_windows", { extra: true }],
      ["no_such_tool", {}],
      ["screenshot_window", { hwnd: 1001, region_name: "stage", crop_left: true }],
      ["request_confirmation", { hwnd: 1001, action_class: "teleport" }],
    ];
    for (let i = 0; i < 100; i++) {
      const [name, args] = bad[i % bad.length];
      const r = await h.call(name, args);
      expect(r.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
      expect(r.code).toBe("invalid_argument");
    }
    const list = await h.ok("list_windows");
    expect((list.windows as unknown[]).length).toBe(1);
  });

  it("never lets a canary title or typed text reach audit, logs or errors", async () => {
    const d = desktop([ruffleWindow({ title: `Ruffle - ${CANARY}` })]);
    const auditFile = join(d.dir, "audit.jsonl");
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      UIINSPECT_AUDIT_FILE: auditFile,
      UIINSPECT_LOG_LEVEL: "debug",
      ...LOOSE_BUDGETS,
    });
    await h.ok("list_windows");
    await h.ok("request_access", { hwnd: 1001 });
    const tok = await h.ok("request_confirmation", { hwnd: 1001, action_class: "text" });
    await h.call("send_text", { hwnd: 1001, text: `secret ${CANARY}`, confirmation_token: tok.token_id });
    await h.call("send_text", { hwnd: 1001, text: `again ${CANARY}`, confirmation_token: tok.token_id });
    const wrong = await h.call("wait_for_window", { title_contains: CANARY.toLowerCase(), timeout_ms: 0 });
    const errors = [wrong, await h.call("get_window_state", { hwnd: CANARY })].map((r) =>
      JSON.stringify(r.structured.error ?? {}),
    );
    const audit = JSON.stringify((await h.ok("get_audit_events", { limit: 100 })).events);
    await h.close();
    const file = readFileSync(auditFile, "utf8");
    expect(statSync(auditFile).mode & 0o777).toBe(0o600);
    for (const text of [audit, file, h.stderr.join(""), ...errors]) expect(text).not.toContain(CANARY);
    expect(file).not.toContain(String(tok.token_id));
    // The typed text did reach the (simulated) screen: the canary check is not vacuous.
    expect(JSON.stringify(d.effectsLog())).toContain(CANARY);
  });
});
