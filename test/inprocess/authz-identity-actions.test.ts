import { describe, expect, it } from "vitest";
import {
  closeServersAfterEach,
  Desk,
  expectRevoked,
  IN_STAGE,
  newInstanceNeedsItsOwnDialog,
  serve,
  win,
} from "../support/consent.js";

// PID reuse between actions, after the automation session attached and between
// request_confirmation and the protected action (the prompt-side steps are in authz-identity).

closeServersAfterEach();

describe("process-instance identity between actions", () => {
  it("changes between two actions: the grant dies and the old element refs are stale", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    const found = await h.ok("find_elements", { detail: "full", hwnd: 1001, automation_id: "play" });
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
    const found = await h.ok("find_elements", { detail: "full", hwnd: 1001, automation_id: "play" });
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
