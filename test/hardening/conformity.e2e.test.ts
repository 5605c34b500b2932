import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, FakeDesktop, filePolicy, RUFFLE, ruffleWindow } from "../support/mcp.js";
import { fakeScenario, fakeServers } from "./harness.js";

/** The conformity points over stdio against the built CLI on the simulated desktop. */

const start = fakeServers();
const scenario = fakeScenario;
const MINIMIZED = ruffleWindow({ hwnd: 1002, pid: 4243, title: "Ruffle - other.swf", iconic: true, z: 1 });

describe("wait_for_title_change never shows a title outside the policy", () => {
  it("a title leaving the policy mid-wait answers target_not_allowed without the title", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow()]));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
    });
    await h.ok("request_access", { hwnd: 1001 });
    // Mid-wait for certain: the change is written once the wait has reported progress twice
    // (it polled the old title at least once).
    const waitFor = () => {
      let progressed = 0;
      let midWait = () => {};
      const started = new Promise<void>((r) => {
        midWait = r;
      });
      const call = h.call(
        "wait_for_title_change",
        { hwnd: 1001, timeout_ms: 30_000, poll_interval_ms: 50 },
        { onprogress: () => (++progressed === 2 ? midWait() : undefined) },
      );
      return { call, started };
    };
    const first = waitFor();
    await first.started;
    d.write(scenario([ruffleWindow({ title: "SECRET inbox - Mail" })]));
    const waiting = first.call;
    const r = await waiting;
    expect(r.code).toBe("target_not_allowed");
    expect(JSON.stringify(r)).not.toContain("SECRET");
    expect((await h.ok("list_windows")).windows).toEqual([]);
    // A change within the policy is reported with the new title.
    d.write(scenario([ruffleWindow()]));
    const again = waitFor();
    await again.started;
    d.write(scenario([ruffleWindow({ title: "Ruffle - level2.swf" })]));
    expect((await again.call).structured).toMatchObject({ changed: true, title: "Ruffle - level2.swf" });
  });
});

describe("discovery and meta tools", () => {
  it("list_windows lists visible, not minimized windows; the minimized one is reached by hwnd only", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow(), MINIMIZED]));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
    });
    const listed = (await h.ok("list_windows")).windows as Array<{ hwnd: string }>;
    expect(listed.map((w) => w.hwnd)).toEqual(["1001"]);
    const state = await h.ok("get_window_state", { hwnd: 1002 });
    expect(state).toMatchObject({
      hwnd: "1002",
      iconic: true,
      correlation_id: expect.stringMatching(/^[0-9a-f]{12}$/),
    });
    expect(
      (await h.call("wait_for_window", { title_contains: "other.swf", timeout_ms: 0 })).structured,
    ).toMatchObject({
      found: false,
    });
    expect((await h.call("restore_window", { title_contains: "other.swf" })).code).toBe("invalid_argument");
    await h.ok("request_access", { hwnd: 1002 });
    expect(await h.ok("restore_window", { hwnd: 1002 })).toMatchObject({ was_minimized: true });
    // get_window_state's correlation_id is its audit event's.
    const events = (await h.ok("get_audit_events", { limit: 100 })).events as Array<Record<string, unknown>>;
    expect(
      events.some((e) => e.tool === "get_window_state" && e.correlation_id === state.correlation_id),
    ).toBe(true);
  });

  it("get_audit_events takes 1–100; it, get_rate_limit_state and get_virtual_screen_bounds write no audit event", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow()]));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
    });
    for (const limit of [0, 101, 1000])
      expect((await h.call("get_audit_events", { limit })).code).toBe("invalid_argument");
    await h.ok("list_windows");
    for (let i = 0; i < 3; i++) {
      await h.ok("get_rate_limit_state");
      await h.ok("get_virtual_screen_bounds");
      await h.ok("get_audit_events", { limit: 100 });
    }
    const events = (await h.ok("get_audit_events", { limit: 100 })).events as Array<{ tool: string }>;
    // The refused get_audit_events calls above are not recorded either.
    expect(events.map((e) => e.tool)).toEqual(["list_windows"]);
  });
});

describe("environment policy: all three variables are required", () => {
  const windows = [ruffleWindow()];
  it("without ALLOWED_PROCESS_PATHS no window is admitted", async () => {
    const d = new FakeDesktop(scenario(windows));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle - *",
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe",
    });
    expect((await h.ok("list_windows")).windows).toEqual([]);
    expect((await h.call("request_access", { hwnd: 1001 })).code).toBe("target_not_allowed");
  });

  it("without ALLOWED_ACTIONS no tool but health_check is authorized", async () => {
    const d = new FakeDesktop(scenario(windows));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle - *",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: RUFFLE,
    });
    // Not "ok": the env policy lacks its action list, and health_check names it.
    expect((await h.ok("health_check")).policy).toMatchObject({
      source: "env",
      status: "incomplete",
      missing: ["DESKTOP_AUTOMATION_ALLOWED_ACTIONS"],
    });
    const calls: Array<[string, Record<string, unknown>]> = [
      ["list_windows", {}],
      ["get_window_state", { hwnd: 1001 }],
      ["wait_for_window", { title_contains: "Ruffle", timeout_ms: 0 }],
      ["get_access_state", {}],
      ["release_access", { hwnd: 1001 }],
      ["request_access", { hwnd: 1001 }],
      ["get_audit_events", {}],
      ["resolve_coordinate_profile_point", { profile_path: "p.json", region_name: "a" }],
    ];
    for (const [name, args] of calls)
      expect((await h.call(name, args)).code, name).toBe("action_not_allowed");
  });
});

describe("a policy file another user can write", () => {
  it("is refused at start: health_check and doctor name the file and the bit; nothing else is allowed", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow()]));
    const policy = d.writePolicy(filePolicy());
    chmodSync(policy, 0o666);
    const h = await start({ UIINSPECT_FAKE_DESKTOP: d.path, DESKTOP_AUTOMATION_POLICY_FILE: policy });
    const health = await h.ok("health_check");
    expect(health.policy).toMatchObject({
      status: "error",
      code: "policy_insecure",
      reasons: [`${policy}: writable by group and others (mode 0666); fix: chmod go-w ${policy}`],
    });
    expect((await h.call("list_windows")).code).toBe("policy_insecure");
    const env = {
      ...process.env,
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: policy,
    };
    const doctor = spawnSync(process.execPath, [CLI, "doctor"], { env, encoding: "utf8", timeout: 60_000 });
    expect(doctor.stdout).toContain("policy_insecure");
    expect(doctor.stdout).toContain(`${policy}: writable by group and others (mode 0666)`);
    const v = spawnSync(process.execPath, [CLI, "validate-policy", policy], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(v.status).toBe(1);
    expect(v.stderr).toContain("writable by group and others (mode 0666)");
    chmodSync(policy, 0o644);
    expect(execFileSync(process.execPath, [CLI, "validate-policy", policy], { encoding: "utf8" })).toContain(
      "valid policy",
    );
  });
});

describe("a hostile policy file costs the server nothing", () => {
  it("the 48 KB nested policy with duplicate keys: the server starts and serves health_check; validate-policy exits 1 with the reason", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow()]));
    let nested = "";
    for (let i = 0; i < 3400; i++) nested += '{"a": 1, "a": ';
    const policy = join(d.dir, "nested.json");
    writeFileSync(policy, `${nested}1${"}".repeat(3400)}`);
    const h = await start({ UIINSPECT_FAKE_DESKTOP: d.path, DESKTOP_AUTOMATION_POLICY_FILE: policy });
    const health = await Promise.all(Array.from({ length: 5 }, () => h.ok("health_check")));
    for (const r of health)
      expect(r.policy).toMatchObject({
        status: "error",
        code: "policy_invalid",
        reasons: ["(root): nested deeper than 64 levels (line 1, column 897)"],
      });
    expect((await h.call("list_windows")).code).toBe("policy_invalid");
    const v = spawnSync(process.execPath, [CLI, "validate-policy", policy], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(v.status).toBe(1);
    expect(v.stderr).toContain("nested deeper than 64 levels");
  });
});
