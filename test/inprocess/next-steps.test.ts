import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { closeServersAfterEach, Desk, IN_STAGE, serve, win } from "../support/consent.js";
import { FakeDesktop, filePolicy, RUFFLE, ruffleWindow, type ServerHarness } from "../support/mcp.js";
import { serveFake } from "../support/servers.js";

/**
 * A refusal says what to do next, and the server's own state is reported as it is: a kept
 * decision says how a person resets it, a wait on a minimized window ends at once, an audit file
 * that cannot be written stops every act on a window, and health_check names each policy source.
 */

closeServersAfterEach();

const message = (r: { structured: Record<string, unknown> }) =>
  String((r.structured.error as { message?: string } | undefined)?.message ?? "");

async function health(h: ServerHarness): Promise<Record<string, unknown>> {
  return h.ok("health_check", {});
}

describe("refusals name the next step", () => {
  it("a screenshot without region_name lists the policy's safe regions", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    const r = await h.call("screenshot_window", { hwnd: 1001 });
    expect(r.code).toBe("invalid_argument");
    expect(message(r)).toContain("safe regions are: stage");
  });

  it("an action outside the policy is named, with where it is added", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk, { policy: { allowed_actions: ["observe"] } });
    const r = await h.call("click_window", { hwnd: 1001, ...IN_STAGE });
    expect(r.code).toBe("action_not_allowed");
    expect(message(r)).toContain("the action click");
    expect(message(r)).toContain("allowed_actions");
  });

  it("a protected action without a token names request_confirmation and its class", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    const r = await h.call("send_text", { hwnd: 1001, text: "hi" });
    expect(r.code).toBe("confirmation_required");
    expect(message(r)).toContain('request_confirmation {hwnd, action_class: "text"}');
  });

  it("a point outside the window gives the window's size", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    const r = await h.call("click_window", { hwnd: 1001, x: 5000, y: 10 });
    expect(r.code).toBe("out_of_bounds");
    expect(message(r)).toContain("(400×320)");
  });

  it("the rate limit names its number and the setting that raises it", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk, { env: { UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE: "1" } });
    await h.ok("request_access", { hwnd: 1001 });
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).isError).toBe(false);
    const r = await h.call("click_window", { hwnd: 1001, ...IN_STAGE });
    expect(r.code).toBe("rate_limited");
    expect(message(r)).toContain("1 actions per minute");
    expect(message(r)).toContain("UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE");
  });
});

describe("kept decisions say so and how a person resets them", () => {
  it("a kept Deny is reported as kept, with the reset; release_access does not wipe it", async () => {
    const desk = new Desk([win(1)], { answer: "deny", delay_ms: 0 });
    const h = await serve(desk);
    expect(await h.ok("request_access", { hwnd: 1001 })).toMatchObject({
      decision: "denied",
      source: "dialog",
    });
    await h.ok("release_access", { hwnd: 1001 });
    const again = await h.ok("request_access", { hwnd: 1001 });
    expect(again).toMatchObject({ decision: "denied", source: "cached" });
    expect(String(again.note)).toContain("restarting the server");
    expect(desk.prompts()).toHaveLength(1);
    const act = await h.call("click_window", { hwnd: 1001, ...IN_STAGE });
    expect(act.code).toBe("consent_denied");
    expect(message(act)).toContain("restarting the server");
  });

  it("asking for more than was approved says how to ask for more; after release_access it asks", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    const wider = await h.call("request_access", { hwnd: 1001, capabilities: ["observe", "click"] });
    expect(wider.code).toBe("capability_expansion_denied");
    expect(message(wider)).toContain("release_access");
    await h.ok("release_access", { hwnd: 1001 });
    expect(await h.ok("request_access", { hwnd: 1001, capabilities: ["observe", "click"] })).toMatchObject({
      decision: "approved",
      source: "dialog",
    });
    expect(desk.prompts()).toHaveLength(2);
  });
});

describe("wait_for_title_change on a window that is not on screen", () => {
  it("ends at once with minimized when the target is minimized, before or during the wait", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    desk.set({ windows: [win(1, { iconic: true })] });
    const r = await h.call("wait_for_title_change", { hwnd: 1001, timeout_ms: 30_000 });
    expect(r.code).toBe("minimized");
    // Minimized while the wait runs: it ends at the next poll, long before the timeout.
    desk.set({ windows: [win(1)] });
    const waiting = h.call("wait_for_title_change", { hwnd: 1001, timeout_ms: 30_000, poll_interval_ms: 50 });
    desk.set({ windows: [win(1, { iconic: true })] });
    const during = await waiting;
    expect(during.code).toBe("minimized");
  });
});

describe("an audit file that cannot be written", () => {
  it("stops every act on a window with audit_unavailable and degrades health_check, until it can", async () => {
    const d = new FakeDesktop({
      session: 1,
      foreground: 1001,
      windows: [ruffleWindow()],
      consent: { answer: "approve", delay_ms: 0 },
    });
    // A folder where the file should be: it cannot be opened for appending, whoever runs this.
    const file = join(d.dir, "audit.jsonl");
    mkdirSync(file);
    const h = await serveFake(d, { policy: filePolicy(), env: { UIINSPECT_AUDIT_FILE: file } });
    const hc = await health(h);
    expect(hc.status).toBe("degraded");
    expect(hc.audit).toMatchObject({ sink: "failed" });
    // Discovery still answers; nothing that acts on a window runs.
    expect((await h.call("list_windows", {})).isError).toBe(false);
    const r = await h.call("request_access", { hwnd: 1001 });
    expect(r.code).toBe("audit_unavailable");
    expect(message(r)).toContain("UIINSPECT_AUDIT_FILE");
    expect(message(r)).toContain("EISDIR");
    expect(d.promptLog()).toHaveLength(0);
    // Fixed by the operator: the server opens the file again by itself and serves.
    rmdirSync(file);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await h.call("request_access", { hwnd: 1001 })).isError).toBe(false);
    expect((await h.call("click_window", { hwnd: 1001, x: 40, y: 80 })).isError).toBe(false);
    expect((await health(h)).status).toBe("ok");
    await h.close();
    expect(readFileSync(file, "utf8")).toContain("click_window");
  });
});

describe("health_check and the policy sources", () => {
  const envPolicy = (over: Record<string, string>) => ({
    UIINSPECT_PLATFORM: "fake",
    DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle - *",
    ...over,
  });

  it("an env policy with titles only is incomplete, names what it lacks, and lists health_check alone", async () => {
    const d = new FakeDesktop({ session: 1, foreground: 1001, windows: [ruffleWindow()] });
    const h = await serveFake(d, { env: envPolicy({}) });
    const hc = await health(h);
    expect(hc.status).toBe("degraded");
    expect(hc.policy).toMatchObject({
      source: "env",
      status: "incomplete",
      sources: { file: "unset", env: "partial" },
      missing: ["DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS", "DESKTOP_AUTOMATION_ALLOWED_ACTIONS"],
    });
    expect((await h.client.listTools()).tools.map((t) => t.name)).toEqual(["health_check"]);
  });

  it("a complete env policy is ok; a policy file is reported as the file source", async () => {
    const d = new FakeDesktop({ session: 1, foreground: 1001, windows: [ruffleWindow()] });
    const h = await serveFake(d, {
      env: envPolicy({
        DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: RUFFLE,
        DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe",
      }),
    });
    expect((await health(h)).policy).toMatchObject({ status: "ok", sources: { file: "unset", env: "set" } });
    const f = await serveFake(d, { policy: filePolicy() });
    expect((await health(f)).policy).toMatchObject({ status: "ok", sources: { file: "set", env: "unset" } });
  });

  it("both sources at once: each is reported set, and the conflict is the status", async () => {
    const d = new FakeDesktop({ session: 1, foreground: 1001, windows: [ruffleWindow()] });
    const p = join(d.dir, "p.json");
    writeFileSync(p, JSON.stringify(filePolicy()), { mode: 0o600 });
    const h = await serveFake(d, { env: envPolicy({ DESKTOP_AUTOMATION_POLICY_FILE: p }) });
    expect((await health(h)).policy).toMatchObject({
      status: "error",
      code: "policy_conflict",
      sources: { file: "set", env: "set" },
    });
  });
});
