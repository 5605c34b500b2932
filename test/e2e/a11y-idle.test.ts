import { afterEach, describe, expect, it } from "vitest";
import { FakeDesktop, filePolicy, LOOSE_BUDGETS, McpHarness, ruffleWindow } from "../support/mcp.js";

/**
 * Idle uia workers are retired (UIINSPECT_UIA_IDLE_RETIRE_MS): over stdio against the built
 * CLI, in both isolation modes, a grant's worker that made no accessibility call for the
 * setting's time is stopped, the refs it handed out are element_stale, and the next call starts
 * a new worker that serves as before.
 */

const TREE = {
  role: "window",
  name: "Ruffle",
  children: [
    { role: "button", name: "Play", automation_id: "play", rect: [20, 60, 120, 90], patterns: ["invoke"] },
  ],
};

interface Node {
  ref: string;
  automation_id: string | null;
  children: Node[];
}

function play(root: unknown): Node {
  const n = (root as Node).children.find((c) => c.automation_id === "play");
  if (!n) throw new Error("no play button");
  return n;
}

interface UiaStats {
  kind: string;
  state: string;
  sessions?: number;
  idle_retirements?: number;
}

async function uiaStats(h: McpHarness): Promise<UiaStats> {
  const workers = (await h.ok("health_check")).workers as UiaStats[];
  const uia = workers.find((w) => w.kind === "uia");
  if (!uia) throw new Error("no uia worker in health_check");
  return uia;
}

/** Polls (no fixed sleep decides the outcome) until `ok`, for at most `ms`. */
async function until<T>(probe: () => Promise<T>, ok: (v: T) => boolean, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const harnesses: McpHarness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

describe.each(["thread", "process"])("idle uia worker retirement (%s isolation)", (isolation) => {
  it("an idle grant's worker is retired, its refs are element_stale, and the next call starts a new one", async () => {
    const d = new FakeDesktop({
      session: 1,
      foreground: 1001,
      windows: [ruffleWindow({ tree: TREE })],
      consent: { answer: "approve", delay_ms: 0 },
    });
    const h = await McpHarness.start({
      UIINSPECT_PLATFORM: "fake",
      ...LOOSE_BUDGETS,
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      UIINSPECT_WORKER_ISOLATION: isolation,
      UIINSPECT_UIA_IDLE_RETIRE_MS: "2000",
    });
    harnesses.push(h);
    await h.ok("request_access", { hwnd: 1001 });
    const before = play((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).root);
    expect((await h.call("invoke_element", { ref: before.ref })).isError).toBe(false);

    const retired = await until(
      () => uiaStats(h),
      (s) => (s.idle_retirements ?? 0) >= 1 && s.sessions === 0,
    );
    expect(retired).toMatchObject({ idle_retirements: 1, sessions: 0, state: "stopped" });
    // Not a crash: nothing counted against the worker.
    expect(retired).toMatchObject({ crashes: 0, timeouts: 0 });

    const stale = await h.call("invoke_element", { ref: before.ref });
    expect(stale.code).toBe("element_stale");

    const after = play((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).root);
    expect(after.ref).not.toBe(before.ref);
    expect((await h.call("invoke_element", { ref: after.ref })).isError).toBe(false);
    expect(await uiaStats(h)).toMatchObject({ sessions: 1, state: "ready" });
  });
});
