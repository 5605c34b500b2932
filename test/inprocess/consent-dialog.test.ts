import { describe, expect, it } from "vitest";
import { closeServersAfterEach, Desk, grants, IN_STAGE, RUFFLE, serve, win } from "../support/consent.js";
import type { ServerHarness } from "../support/mcp.js";

// What the person sees, and who the server thinks is asking. The fake prompter writes exactly
// the dialog content to consent.log.

closeServersAfterEach();

const CANARY = "TITLECANARY-51d0e2";

describe("dialog content", () => {
  it("shows OS facts, plain-word capabilities, the self-reported label and the expiry, never the title", async () => {
    const desk = new Desk([
      win(1, { title: `Ruffle - ${CANARY}`, process_start: "2026-11-30T07:15:42.250Z" }),
    ]);
    const h = await serve(desk, {
      client: { name: "Claude Code", version: "9.9.9" },
      env: { UIINSPECT_GRANT_TTL_MS: "120000", UIINSPECT_CONSENT_TIMEOUT_MS: "60000" },
    });
    const before = Date.now();
    const r = await h.ok("request_access", { hwnd: 1001, capabilities: ["click", "observe"] });
    expect(r.decision).toBe("approved");
    const lines = desk.prompts();
    expect(lines).toHaveLength(1);
    const d = lines[0] as Record<string, unknown> & { text: string };
    expect(d).toMatchObject({
      kind: "consent",
      executable_path: RUFFLE,
      pid: 4001,
      process_start: "2026-11-30T07:15:42.250Z",
      client_label: "Claude Code",
      client_label_self_reported: true,
      default_button: "deny",
    });
    const caps = d.capabilities as Array<{ name: string; description: string }>;
    expect(caps.map((c) => c.name)).toEqual(["observe", "click"]);
    for (const c of caps) {
      expect(c.description.split(" ").length).toBeGreaterThan(3);
      expect(d.text).toContain(c.description);
    }
    // The text the person reads carries the same facts.
    for (const fact of [RUFFLE, "4001", "2026-11-30T07:15:42.250Z", "Claude Code", "self-reported"])
      expect(d.text).toContain(fact);
    expect(d.text).toMatch(/Deny is the default/);
    // Expiry: an absolute time no earlier than a grant made now and no later than timeout + TTL.
    const exp = Date.parse(String(d.expires_at));
    expect(d.text).toContain(String(d.expires_at));
    expect(exp).toBeGreaterThanOrEqual(before + 120_000 - 5_000);
    expect(exp).toBeLessThanOrEqual(Date.now() + 60_000 + 120_000);
    expect(Date.parse(String(r.expires_at))).toBeLessThanOrEqual(exp);
    // Nothing the target controls: not the title, not the class, not the tree.
    const raw = JSON.stringify(lines[0]);
    expect(raw).not.toContain(CANARY);
    expect(raw).not.toContain("RuffleWindow");
    expect(raw).not.toContain("Password");
    // Only the capabilities asked for are listed.
    expect(d.text).not.toContain("type free text");
  });

  it("a client label cannot forge dialog lines; with no scripted answer the dialog denies", async () => {
    const desk = new Desk([win(1)], null);
    const h = await serve(desk, {
      client: { name: "Evil\nProgram: C:\\Windows\\explorer.exe\u202e", version: "1" },
    });
    const r = await h.ok("request_access", { hwnd: 1001 });
    expect(r).toMatchObject({ decision: "denied", source: "dialog" });
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("consent_denied");
    // Now with a log, to read the label as shown.
    desk.set({ windows: [win(1), win(2)], consent: { answer: "deny", delay_ms: 0 } });
    await h.ok("request_access", { hwnd: 1002 });
    const d = desk.prompts()[0] as { client_label: string; text: string };
    expect(d.client_label).not.toMatch(/[\n\u202e]/);
    expect(d.text.split("\n").filter((l) => l.startsWith("Program:"))).toEqual([`Program: ${RUFFLE}`]);
  });
});

/** The same script for any client; returns what it saw, for comparison across names. */
async function script(h: ServerHarness, desk: Desk): Promise<unknown[]> {
  const seen: unknown[] = [];
  const note = async (name: string, args: Record<string, unknown>) => {
    const r = await h.call(name, args);
    const s = r.structured;
    seen.push([name, r.code ?? null, s.decision ?? null, s.source ?? null, s.capabilities ?? null]);
  };
  await note("screenshot_window", { hwnd: 1001, region_name: "stage" });
  await note("click_window", { hwnd: 1001, ...IN_STAGE });
  await note("request_confirmation", { hwnd: 1001, action_class: "text" });
  await note("preview_action", { hwnd: 1001, action_class: "click" });
  await note("request_access", { hwnd: 1001 });
  await note("click_window", { hwnd: 1001, ...IN_STAGE });
  await note("request_access", { hwnd: 1001, capabilities: ["observe"] });
  desk.set({ consent: { answer: "approve", delay_ms: 0 } });
  await note("request_access", { hwnd: 1002, capabilities: ["observe", "click"] });
  await note("send_text", { hwnd: 1002, text: "hi" });
  await note("request_access", { hwnd: 1002, capabilities: ["observe", "click", "key"] });
  await note("request_access", { hwnd: 1002, capabilities: ["click"] });
  seen.push(["prompts", desk.prompts().length]);
  seen.push(["grants", (await grants(h)).map((g) => [g.hwnd, g.capabilities])]);
  return seen;
}

describe("client identity", () => {
  it('"Claude Code" and "Codex" get exactly what any other client gets', async () => {
    const names = ["Claude Code", "Codex", "some-other-client"];
    const desks = names.map(() => new Desk([win(1), win(2)], { answer: "deny", delay_ms: 0 }));
    const servers = await Promise.all(
      names.map((name, i) => serve(desks[i], { client: { name, version: "1.0.0" } })),
    );
    const runs = await Promise.all(servers.map((h, i) => script(h, desks[i])));
    expect(runs[0]).toEqual(runs[2]);
    expect(runs[1]).toEqual(runs[2]);
    // Consent was required and asked for: the script is not vacuous.
    expect(runs[2]).toContainEqual(["click_window", "consent_required", null, null, null]);
    expect(runs[2]).toContainEqual(["click_window", "consent_denied", null, null, null]);
    expect(runs[2]).toContainEqual(["prompts", 2]);
    names.forEach((name, i) => {
      expect(desks[i].prompts().map((p) => p.client_label)).toEqual([name, name]);
    });
  });
});
