import { describe, expect, it } from "vitest";
import {
  audit,
  closeServersAfterEach,
  Desk,
  expectRevoked,
  grants,
  IN_STAGE,
  newInstanceNeedsItsOwnDialog,
  serve,
  until,
  win,
} from "../support/consent.js";

// PID reuse (same pid, same path, new process start) between every pair of lifecycle steps:
// the old instance's grant dies, the revocation is audited, refs go stale, tokens die.

closeServersAfterEach();

describe("process-instance identity across the lifecycle", () => {
  it("changes while the dialog is up (before vs after the prompt): target_changed, nothing granted", async () => {
    // The dialog stays up 5 s so that the change surely comes before the answer; the liveness poll
    // (every 500 ms) ends the dialog soon after it, so the test does not wait the 5 s out.
    const desk = new Desk([win(1)], { answer: "approve", delay_ms: 5000 });
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
    // The dialog stays up 5 s so that the change surely comes before the approval, even on a loaded machine.
    const desk = new Desk([win(1), win(5, { pid: 4001 })], { answer: "approve", delay_ms: 5000 });
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
});
