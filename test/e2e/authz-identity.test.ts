import { describe, expect, it } from "vitest";
import {
  audit,
  closeServersAfterEach,
  Desk,
  grants,
  IN_STAGE,
  RESTART,
  START,
  serve,
  until,
  win,
} from "../support/consent.js";
import type { McpHarness } from "../support/mcp.js";

// PID reuse (same pid, same path, new process start) between every pair of lifecycle steps:
// the old instance's grant dies, the revocation is audited, refs go stale, tokens die.

closeServersAfterEach();

const OLD_START = new Date(START).toISOString();

async function expectRevoked(h: McpHarness): Promise<void> {
  expect(await grants(h)).toEqual([]);
  const rev = (await audit(h)).filter((e) => e.tool === "revocation");
  expect(rev).toHaveLength(1);
  expect(rev[0]).toMatchObject({
    outcome: "deny",
    reason: "target_changed",
    pid: 4001,
    process_start: OLD_START,
  });
}

/** The new process behind the same pid is a stranger: it needs its own dialog. */
async function newInstanceNeedsItsOwnDialog(h: McpHarness, desk: Desk, before: number): Promise<void> {
  expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("consent_required");
  expect(await h.ok("request_access", { hwnd: 1001 })).toMatchObject({
    decision: "approved",
    source: "dialog",
  });
  const prompts = desk.prompts();
  expect(prompts).toHaveLength(before + 1);
  expect(prompts.at(-1)).toMatchObject({ pid: 4001, process_start: new Date(RESTART).toISOString() });
}

describe("process-instance identity across the lifecycle", () => {
  it("changes while the dialog is up (before vs after the prompt): target_changed, nothing granted", async () => {
    const desk = new Desk([win(1)], { answer: "approve", delay_ms: 1500 });
    const h = await serve(desk);
    const pending = h.call("request_access", { hwnd: 1001 });
    await until(() => desk.prompts().length === 1, "the dialog");
    desk.reusePid(1001);
    const r = await pending;
    expect(r.code).toBe("target_changed");
    expect(await grants(h)).toEqual([]);
    const ra = (await audit(h)).find((e) => e.tool === "request_access");
    expect(ra).toMatchObject({ outcome: "error", reason: "target_changed" });
    desk.set({ consent: { answer: "approve", delay_ms: 0 } });
    await newInstanceNeedsItsOwnDialog(h, desk, 1);
  });

  it("the window passes to another process while the approved one lives on: the post-prompt check refuses", async () => {
    // The old instance keeps a second window, so the dialog's liveness poll sees it alive and the
    // approval arrives; only the identity re-resolved after the prompt can catch the change.
    const desk = new Desk([win(1), win(5, { pid: 4001 })], { answer: "approve", delay_ms: 1500 });
    const h = await serve(desk);
    const pending = h.call("request_access", { hwnd: 1001 });
    await until(() => desk.prompts().length === 1, "the dialog");
    desk.set({ windows: [win(1, { pid: 4999 }), win(5, { pid: 4001 })] });
    const r = await pending;
    expect(r.code).toBe("target_changed");
    expect(await grants(h)).toEqual([]);
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("consent_required");
    expect(desk.effects().filter((e) => e.type === "button_down")).toHaveLength(0);
  });

  it("changes after approval, before the first action", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    desk.reusePid(1001);
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("target_changed");
    expect(desk.effects().filter((e) => e.type === "button_down")).toHaveLength(0);
    await expectRevoked(h);
    await newInstanceNeedsItsOwnDialog(h, desk, 1);
  });

  it("changes between two actions: the grant dies and the old element refs are stale", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    const found = await h.ok("find_elements", { hwnd: 1001, automation_id: "play" });
    const ref = (found.elements as Array<{ ref: string }>)[0].ref;
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).isError).toBe(false);
    desk.reusePid(1001);
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("target_changed");
    expect(desk.effects().filter((e) => e.type === "button_down")).toHaveLength(1);
    await expectRevoked(h);
    expect((await h.call("invoke_element", { ref })).code).toBe("element_stale");
    await newInstanceNeedsItsOwnDialog(h, desk, 1);
    // A fresh grant for the new instance does not revive the old instance's refs.
    expect((await h.call("invoke_element", { ref })).code).toBe("element_stale");
    expect(desk.effects().filter((e) => e.type === "a11y")).toHaveLength(0);
  });

  it("changes after the automation session attached: the first ref use sees it", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    const found = await h.ok("find_elements", { hwnd: 1001, automation_id: "play" });
    const ref = (found.elements as Array<{ ref: string }>)[0].ref;
    desk.reusePid(1001);
    expect((await h.call("invoke_element", { ref })).code).toBe("target_changed");
    await expectRevoked(h);
    expect((await h.call("invoke_element", { ref })).code).toBe("element_stale");
    expect(desk.effects().filter((e) => e.type === "a11y")).toHaveLength(0);
  });

  it("changes between request_confirmation and the protected action: the token dies with the instance", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    const tok = String((await h.ok("request_confirmation", { hwnd: 1001, action_class: "text" })).token_id);
    desk.reusePid(1001);
    const r = await h.call("send_text", { hwnd: 1001, text: "hello", confirmation_token: tok });
    expect(r.code).toBe("target_changed");
    await expectRevoked(h);
    await newInstanceNeedsItsOwnDialog(h, desk, 1);
    expect((await h.ok("preview_action", { hwnd: 1001, action_class: "text" })).has_valid_token).toBe(false);
    const again = await h.call("send_text", { hwnd: 1001, text: "hello", confirmation_token: tok });
    expect(again.code).toBe("confirmation_invalid");
    expect(desk.effects().filter((e) => e.type === "text")).toHaveLength(0);
  });
});
