import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConsentBroker } from "../../src/supervisor/consent/broker.js";
import { buildDialogContent } from "../../src/supervisor/consent/content.js";
import { FakePrompter } from "../../src/supervisor/consent/fakePrompter.js";
import type { ConsentDialogContent } from "../../src/supervisor/consent/prompter.js";
import { scratchDir } from "../support/scratch.js";
import { instance, ManualTime, outcome, peekState } from "./helpers.js";

const TITLE_CANARY = "TITLE-CANARY-91c2";

let dir = "";
beforeEach(() => {
  dir = scratchDir("authz-consent");
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function content(over: Partial<Parameters<typeof buildDialogContent>[0]> = {}): ConsentDialogContent {
  return buildDialogContent({
    instance: instance(4242),
    capabilities: ["click", "inspect"],
    clientLabel: "Codex",
    expiresAt: Date.parse("2026-11-30T10:06:00.000Z"),
    ...over,
  });
}

function scenario(consent: unknown): string {
  const path = join(dir, "desktop.json");
  writeFileSync(
    path,
    JSON.stringify({
      session: 1,
      windows: [{ hwnd: 1001, title: `Ruffle ${TITLE_CANARY}`, pid: 4242 }],
      ...(consent === undefined ? {} : { consent }),
    }),
  );
  return path;
}

/** Real file I/O happens inside the prompter; wait (briefly, for real) until a condition holds. */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
}

describe("dialog content", () => {
  it("states OS facts, capabilities in plain words, the self-reported label, expiry and deny default", () => {
    const c = content();
    expect(c).toMatchObject({
      kind: "consent",
      executable_path: "c:\\program files\\ruffle\\bin\\ruffle.exe",
      pid: 4242,
      process_start: "2026-11-30T08:00:00.000Z",
      client_label: "Codex",
      client_label_self_reported: true,
      expires_at: "2026-11-30T10:06:00.000Z",
      default_button: "deny",
    });
    // Fixed display order, each with plain words.
    expect(c.capabilities.map((l) => l.name)).toEqual(["inspect", "click"]);
    for (const l of c.capabilities) expect(l.description.length).toBeGreaterThan(10);
    for (const s of [
      c.executable_path,
      "4242",
      c.process_start,
      "Codex (self-reported",
      c.expires_at,
      "Deny is the default.",
      c.capabilities[1].description,
    ])
      expect(c.text).toContain(s);
  });

  it("escapes control characters so a crafted path or label cannot forge dialog lines", () => {
    const c = content({
      instance: { ...instance(1), exe_path: "/tmp/evil\nClient: Trusted (verified)" },
      clientLabel: "nice\nApproved by admin\u202E",
    });
    expect(c.executable_path).toBe("/tmp/evil\\u000aClient: Trusted (verified)");
    expect(c.client_label).toBe("nice Approved by admin");
    expect(c.text.split("\n").filter((l) => l.startsWith("Client:"))).toHaveLength(1);
  });

  it("refuses unknown or no capabilities", async () => {
    expect(await outcome(() => content({ capabilities: ["observe", "root"] }))).toBe("action_not_allowed");
    expect(await outcome(() => content({ capabilities: [] }))).toBe("invalid_argument");
  });
});

describe("FakePrompter", () => {
  it("appends exactly the dialog content as one JSON line (relative to the scenario) and answers", async () => {
    const path = scenario({ answer: "approve", delay_ms: 0, log: "out/prompts.jsonl" });
    const p = new FakePrompter(path);
    expect(p.simulated).toBe(true);
    const c = content();
    expect(await p.prompt(c, new AbortController().signal)).toBe("approve");
    expect(await p.prompt(c, new AbortController().signal)).toBe("approve");
    const raw = readFileSync(join(dir, "out", "prompts.jsonl"), "utf8");
    const lines = raw.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0])).toEqual(c);
    expect(raw).not.toContain(TITLE_CANARY);
  });

  it("re-reads the scenario on every prompt, and keeps the last good script over a half-written file", async () => {
    const path = scenario({ answer: "approve" });
    const p = new FakePrompter(path);
    expect(await p.prompt(content(), new AbortController().signal)).toBe("approve");
    scenario({ answer: "deny" });
    expect(await p.prompt(content(), new AbortController().signal)).toBe("deny");
    writeFileSync(path, '{"session": 1, "windows": [');
    expect(await p.prompt(content(), new AbortController().signal)).toBe("deny");
  });

  it("answers deny when the scenario has no consent script; fails when it is unreadable from the start", async () => {
    expect(await new FakePrompter(scenario(undefined)).prompt(content(), new AbortController().signal)).toBe(
      "deny",
    );
    expect(
      await outcome(
        new FakePrompter(join(dir, "missing.json")).prompt(content(), new AbortController().signal),
      ),
    ).toBe("platform_unavailable");
    const bad = scenario({ answer: "maybe" });
    expect(await outcome(new FakePrompter(bad).prompt(content(), new AbortController().signal))).toBe(
      "platform_unavailable",
    );
  });

  it("waits delay_ms before answering", async () => {
    const t = new ManualTime();
    const log = join(dir, "p.jsonl");
    const p = new FakePrompter(scenario({ answer: "deny", delay_ms: 1500, log }), {
      setTimer: t.setTimer,
      clearTimer: t.clearTimer,
    });
    const answer = p.prompt(content(), new AbortController().signal);
    await until(() => t.pendingTimers === 1);
    await t.advance(1499);
    expect(await peekState(answer)).toBe("pending");
    await t.advance(1);
    expect(await answer).toBe("deny");
  });

  it('"timeout" and "ignore" never answer; an abort closes them', async () => {
    for (const mode of ["timeout", "ignore"]) {
      const log = join(dir, `${mode}.jsonl`);
      const p = new FakePrompter(scenario({ answer: mode, log }));
      const ac = new AbortController();
      const answer = p.prompt(content(), ac.signal);
      await until(() => existsSync(log));
      expect(await peekState(answer)).toBe("pending");
      ac.abort();
      expect(await outcome(answer)).toBe("cancelled");
    }
  });

  it("drives the broker end to end: scripted approval, one log line per dialog, timeout closes an ignored one", async () => {
    const t = new ManualTime();
    const path = scenario({ answer: "approve", log: "consent.log" });
    const broker = new ConsentBroker({
      prompter: new FakePrompter(path),
      clock: t.clock,
      isInstanceAlive: async () => true,
      setTimer: t.setTimer,
      clearTimer: t.clearTimer,
    });
    const req = (pid: number) =>
      broker.request({
        clientHash: "aaaaaaaaaaaa",
        clientLabel: "Codex",
        instance: instance(pid),
        capabilities: ["inspect"],
      });
    expect(await req(1)).toEqual({ decision: "approved", capabilities: ["inspect"], source: "dialog" });
    expect((await req(1)).source).toBe("cached");
    scenario({ answer: "ignore", log: "consent.log" });
    const ignored = outcome(req(2));
    await until(() => readFileSync(join(dir, "consent.log"), "utf8").trim().split("\n").length === 2);
    await t.advance(60_000);
    expect(await ignored).toBe("consent_timeout");
    const lines = readFileSync(join(dir, "consent.log"), "utf8").trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0])).toMatchObject({ pid: 1, client_label: "Codex", default_button: "deny" });
    expect(lines.join("\n")).not.toContain(TITLE_CANARY);
  });
});
