import { afterEach, describe, expect, it } from "vitest";
import { audit, Desk, expectRevoked, win } from "../support/consent.js";
import { InProcessHarness } from "../support/inProcess.js";
import { LOOSE_BUDGETS, type ServerHarness } from "../support/mcp.js";

/**
 * inspect_tree and find_elements by hwnd on the caller's open session: the walk is sent with the
 * instance of the caller's grant while the chain resolves the target from the capture worker's
 * listing, and answers the call only once the call is authorized for exactly that session and
 * instance. A call refused meanwhile releases nothing of it.
 */

const started: InProcessHarness[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((h) => h.close()));
});

type Sent = { what: string; ahead: boolean };

/** The uia worker messages and desktop listings the supervisor sends, in order. */
function spy(h: InProcessHarness): Sent[] {
  const log: Sent[] = [];
  const sessions = h.sup.sessions;
  const call = sessions.call.bind(sessions);
  sessions.call = ((rec, op, args, opts) => {
    log.push({ what: op, ahead: (args as { ahead?: boolean }).ahead === true });
    return call(rec, op, args, opts);
  }) as typeof sessions.call;
  const capture = h.sup.workers.capture;
  const list = capture.call.bind(capture);
  capture.call = ((op, args, opts) => {
    if (op === "desktop.list") log.push({ what: op, ahead: false });
    return list(op, args, opts);
  }) as typeof capture.call;
  return log;
}

async function setup(env: Record<string, string> = {}, policy: Record<string, unknown> = {}) {
  const desk = new Desk([win(1), win(2)]);
  const h = await InProcessHarness.start({
    UIINSPECT_PLATFORM: "fake",
    UIINSPECT_FAKE_DESKTOP: desk.fake.path,
    DESKTOP_AUTOMATION_POLICY_FILE: desk.policy(policy),
    ...LOOSE_BUDGETS,
    ...env,
  });
  started.push(h);
  return { desk, h, log: spy(h) };
}

/** Access to window 1001 granted and its session opened by a first walk (nothing goes ahead of that one). */
async function openSession(h: ServerHarness): Promise<void> {
  await h.ok("request_access", { hwnd: 1001 });
  await h.ok("inspect_tree", { hwnd: 1001 });
}

const inspects = (log: Sent[]) => log.filter((s) => s.what === "a11y.inspect");
/** The counters of the tool's latest audit event (the ring answers newest first). */
async function lastCounters(h: ServerHarness, tool: string) {
  const ev = (await audit(h)).find((e) => e.tool === tool);
  return (ev as { counters?: Record<string, unknown> } | undefined)?.counters;
}

describe("an observation sent ahead of its authorization", () => {
  it("a second inspect_tree goes to the open session before the listing and answers the call", async () => {
    const { h, log } = await setup();
    await h.ok("request_access", { hwnd: 1001 });
    const first = await h.ok("inspect_tree", { hwnd: 1001, detail: "full" });
    // No session yet: nothing could go ahead.
    expect(inspects(log)).toEqual([{ what: "a11y.inspect", ahead: false }]);
    expect(await lastCounters(h, "inspect_tree")).toMatchObject({ ahead: false });
    expect(await lastCounters(h, "inspect_tree")).not.toHaveProperty("ahead_sent");

    log.length = 0;
    const second = await h.ok("inspect_tree", { hwnd: 1001, detail: "full" });
    expect(second.root).toEqual(first.root);
    // One walk, sent before the target's listing was asked, and it is the call's answer.
    expect(log.map((s) => s.what)).toEqual(["a11y.inspect", "desktop.list"]);
    expect(log[0].ahead).toBe(true);
    expect(await lastCounters(h, "inspect_tree")).toMatchObject({ ahead: true, ahead_sent: true, nodes: 3 });
  });

  it("find_elements likewise", async () => {
    const { h, log } = await setup();
    await openSession(h);
    log.length = 0;
    const r = await h.ok("find_elements", { hwnd: 1001, name_contains: "Play", detail: "full" });
    expect(r.count).toBe(1);
    expect(log.map((s) => [s.what, s.ahead])).toEqual([
      ["a11y.find", true],
      ["desktop.list", false],
    ]);
    expect(await lastCounters(h, "find_elements")).toMatchObject({ ahead: true });
  });

  it("a window retitled out of the policy meanwhile: target_not_allowed, nothing of the walk released", async () => {
    const { desk, h, log } = await setup();
    await openSession(h);
    desk.set({ windows: [win(1, { title: "canary-ahead-7f3e" }), win(2)] });
    log.length = 0;
    const r = await h.call("inspect_tree", { hwnd: 1001, detail: "full" });
    expect(r.code).toBe("target_not_allowed");
    // The walk did go ahead, and none of it is in the answer, the audit or the log.
    expect(log[0]).toEqual({ what: "a11y.inspect", ahead: true });
    const out = JSON.stringify(r);
    for (const s of ["Play", "Password", "canary-ahead-7f3e"]) expect(out).not.toContain(s);
    const ev = JSON.stringify(await audit(h));
    expect(ev).not.toContain("canary-ahead-7f3e");
    expect(ev).not.toContain("Play");
    expect(h.stderr.join("\n")).not.toContain("canary-ahead-7f3e");
    // The refused call's audit still says the app was read for it.
    expect(await lastCounters(h, "inspect_tree")).not.toHaveProperty("ahead");
    expect(await lastCounters(h, "inspect_tree")).toMatchObject({ ahead_sent: true });
  });

  it("the PID reused by another process meanwhile: target_changed, the grant ends, the early walk unused", async () => {
    const { desk, h, log } = await setup();
    await openSession(h);
    desk.reusePid(1001);
    log.length = 0;
    const r = await h.call("inspect_tree", { hwnd: 1001, detail: "full" });
    expect(r.code).toBe("target_changed");
    expect(JSON.stringify(r)).not.toContain("Play");
    expect(log[0]).toEqual({ what: "a11y.inspect", ahead: true });
    // No walk of the new process's window: the chain refused before any handler ran.
    expect(inspects(log)).toHaveLength(1);
    expect(await lastCounters(h, "inspect_tree")).toMatchObject({ ahead_sent: true });
    await expectRevoked(h);
  });

  it("out of the inspection budget: nothing is sent ahead, the call is rate_limited", async () => {
    const { h, log } = await setup({ UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: "2" });
    await openSession(h);
    await h.ok("inspect_tree", { hwnd: 1001 });
    log.length = 0;
    expect((await h.call("inspect_tree", { hwnd: 1001 })).code).toBe("rate_limited");
    expect(inspects(log)).toEqual([]);
    expect(await lastCounters(h, "inspect_tree")).not.toHaveProperty("ahead_sent");
  });

  it("a capture worker with other calls in flight: nothing is sent ahead (the walk waits its turn)", async () => {
    const { h, log } = await setup();
    await openSession(h);
    const capture = h.sup.workers.capture;
    const stats = capture.stats.bind(capture);
    capture.stats = () => ({ ...stats(), inflight: 1 });
    log.length = 0;
    await h.ok("inspect_tree", { hwnd: 1001 });
    expect(log.map((s) => [s.what, s.ahead])).toEqual([
      ["desktop.list", false],
      ["a11y.inspect", false],
    ]);
    expect(await lastCounters(h, "inspect_tree")).toMatchObject({ ahead: false });
    capture.stats = stats;
    await h.ok("inspect_tree", { hwnd: 1001 });
    expect(await lastCounters(h, "inspect_tree")).toMatchObject({ ahead: true });
  });

  it("a protected inspect class: nothing is sent before the token is checked", async () => {
    const { h, log } = await setup({}, { protected_actions: ["inspect"] });
    await h.ok("request_access", { hwnd: 1001 });
    const issued = await h.ok("request_confirmation", { hwnd: 1001, action_class: "inspect" });
    await h.ok("inspect_tree", { hwnd: 1001, confirmation_token: issued.token_id });
    log.length = 0;
    expect((await h.call("inspect_tree", { hwnd: 1001 })).code).toBe("confirmation_required");
    expect(inspects(log)).toEqual([]);
  });

  it("by title, a subtree, another window of the grant, another identity's session: not sent ahead", async () => {
    const { h, log } = await setup();
    await h.ok("request_access", { hwnd: 1001 });
    const tree = await h.ok("inspect_tree", { hwnd: 1001, detail: "full" });
    const other = await h.join({ name: "agent-2", version: "1.0.0" });
    await other.ok("request_access", { hwnd: 1001 });
    log.length = 0;
    await h.ok("inspect_tree", { title_contains: "game1" });
    await h.ok("inspect_tree", { hwnd: 1001, root_ref: (tree.root as { ref: string }).ref });
    // The other identity has a grant but no session of its own yet: its walk waits for its call.
    await other.ok("inspect_tree", { hwnd: 1001 });
    await h.ok("request_access", { hwnd: 1002 });
    await h.ok("inspect_tree", { hwnd: 1002 });
    expect(inspects(log).map((s) => s.ahead)).toEqual([false, false, false, false]);
    expect(await lastCounters(other, "inspect_tree")).toMatchObject({ ahead: false });
  });
});
