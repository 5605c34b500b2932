import { describe, expect, it } from "vitest";
import {
  approvingDesktop as desktop,
  filePolicy,
  LOOSE_BUDGETS,
  McpHarness,
  ruffleWindow,
} from "../support/mcp.js";
import { closeServersAfterEach, track } from "../support/servers.js";

// Worker crash isolation over stdio: a fault really ends a worker thread of the built CLI (thrown,
// exited, hung); its requests fail with a code, the other workers serve, it restarts.

closeServersAfterEach();
const start = (env: Record<string, string>) =>
  track(McpHarness.start({ UIINSPECT_PLATFORM: "fake", ...env }));

describe("worker crash isolation", () => {
  const faulty = (kind: string, fault: string) =>
    ruffleWindow({
      hwnd: 2001,
      title: "Ruffle - faulty.swf",
      pid: 9001,
      z: 1,
      rect: [1000, 100, 1400, 400],
      faults: { [kind]: fault },
    });

  for (const fault of ["throw", "exit", "hang"]) {
    it(`capture worker ${fault}: its request fails with a code, other workers serve, it restarts`, async () => {
      const d = desktop([ruffleWindow()]);
      const h = await start({
        UIINSPECT_FAKE_DESKTOP: d.path,
        DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
        UIINSPECT_WORKER_DEADLINE_MS: "1500",
        ...LOOSE_BUDGETS,
      });
      await h.ok("request_access", { hwnd: 1001 });
      d.write({
        session: 1,
        foreground: 1001,
        windows: [ruffleWindow(), faulty("capture", fault)],
        consent: { answer: "approve" },
      });
      const r = await h.call("list_windows");
      expect(r.code).toBe(fault === "hang" ? "worker_timeout" : "worker_crashed");
      // Input and uia workers were never touched by the fault.
      const { structured } = await h.call("health_check");
      const workers = structured.workers as Array<{ kind: string; crashes: number; timeouts: number }>;
      expect(workers.find((w) => w.kind === "input")).toMatchObject({ crashes: 0, timeouts: 0 });
      d.write({ session: 1, foreground: 1001, windows: [ruffleWindow()], consent: { answer: "approve" } });
      const again = await h.ok("list_windows");
      expect((again.windows as unknown[]).length).toBe(1);
    });
  }

  it("input and uia workers crash alone", async () => {
    const d = desktop([ruffleWindow({ faults: { input: "exit" } })]);
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      UIINSPECT_WORKER_DEADLINE_MS: "1500",
      ...LOOSE_BUDGETS,
    });
    await h.ok("request_access", { hwnd: 1001 });
    expect((await h.call("click_window", { hwnd: 1001, x: 10, y: 10 })).code).toBe("worker_crashed");
    expect(d.effectsLog().filter((e) => e.type === "button_down")).toHaveLength(0);
    // capture and uia keep serving meanwhile
    expect((await h.ok("list_windows")).windows).toHaveLength(1);
    const tree = await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    expect(tree.node_count).toBeGreaterThan(0);
    d.write({
      session: 1,
      foreground: 1001,
      windows: [ruffleWindow({ faults: { uia: "throw" } })],
      consent: { answer: "approve" },
    });
    expect((await h.call("find_elements", { detail: "full", hwnd: 1001, name_contains: "play" })).code).toBe(
      "worker_crashed",
    );
    // the old session's refs are stale after the uia worker died
    const ref = ((tree.root as { children: Array<{ ref: string }> }).children[0] as { ref: string }).ref;
    d.write({ session: 1, foreground: 1001, windows: [ruffleWindow()], consent: { answer: "approve" } });
    expect((await h.call("invoke_element", { ref })).code).toBe("element_stale");
    expect((await h.ok("click_window", { hwnd: 1001, x: 10, y: 10 })).correlation_id).toMatch(
      /^[0-9a-f]{12}$/,
    );
  });
  it("a uia worker that dies under a walk sent ahead: worker_crashed, not asked again; the other instance's session walks on", async () => {
    const second = ruffleWindow({
      hwnd: 2001,
      title: "Ruffle - second.swf",
      pid: 9001,
      z: 1,
      rect: [1000, 100, 1400, 400],
    });
    const scene = (first: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      session: 1,
      foreground: 1001,
      windows: [first, second],
      consent: { answer: "approve" },
      ...extra,
    });
    const d = desktop([ruffleWindow(), second]);
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      UIINSPECT_WORKER_DEADLINE_MS: "1500",
      ...LOOSE_BUDGETS,
    });
    const counters = async (tool: string) => {
      const events = (await h.ok("get_audit_events", { limit: 20 })).events as Array<Record<string, unknown>>;
      return events.find((e) => e.tool === tool)?.counters;
    };
    for (const hwnd of [1001, 2001]) {
      await h.ok("request_access", { hwnd });
      await h.ok("inspect_tree", { hwnd });
    }
    // The first instance's provider now kills the worker that walks it: the walk sent ahead on
    // its open session is the one that meets it. The listing the call is authorized from comes
    // late, so the crash (which forgets the session's tags) lands before the handler asks for
    // its session: the crash must still be the answer, not a cue to walk a restarted worker.
    d.write(scene(ruffleWindow({ faults: { uia: "exit" } }), { listing_delay_ms: 400 }));
    const crashed = await h.call("inspect_tree", { hwnd: 1001, detail: "full" });
    expect(crashed.code).toBe("worker_crashed");
    expect(JSON.stringify(crashed)).not.toContain("Play");
    // Answered by the crash, not by a second walk on a restarted worker (it would have met the
    // fault again: a second crash).
    expect(await counters("inspect_tree")).toEqual({ ahead_sent: true });
    const { structured } = await h.call("health_check");
    const uia = (structured.workers as Array<{ kind: string; crashes: number }>).filter(
      (w) => w.kind === "uia",
    );
    expect(uia.reduce((n, w) => n + w.crashes, 0)).toBe(1);
    // The fault gone (a fake listing touches every window, so any uia worker's check would meet
    // it): the other instance has its own worker, and its session, untouched by the crash, still
    // walks ahead. The first instance is served by a restarted worker: a fresh walk first (a
    // walk sent ahead there, to the session the crashed call was given, finds no such session
    // in the new worker and answers nothing), then ahead again.
    d.write(scene(ruffleWindow()));
    const other = await h.call("inspect_tree", { hwnd: 2001 });
    expect(other.code ?? "ok").toBe("ok");
    expect(await counters("inspect_tree")).toMatchObject({ ahead: true, ahead_sent: true });
    await h.ok("inspect_tree", { hwnd: 1001 });
    expect(await counters("inspect_tree")).toMatchObject({ ahead: false });
    await h.ok("inspect_tree", { hwnd: 1001 });
    expect(await counters("inspect_tree")).toMatchObject({ ahead: true });
  });
});
