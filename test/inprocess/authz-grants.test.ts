import { describe, expect, it } from "vitest";
import { audit, closeServersAfterEach, Desk, grants, IN_STAGE, serve, win } from "../support/consent.js";
import { ManualTime } from "../support/time.js";

// Grants: short TTL renewed silently from the kept decision after the identity is re-resolved;
// release_access drops the grant for good (until the client asks again).

closeServersAfterEach();

describe("grants", () => {
  it("an expired grant is renewed silently from the kept decision, without a dialog", async () => {
    const desk = new Desk([win(1), win(2)]);
    const time = new ManualTime();
    const h = await serve(desk, { clock: time.clock, env: { UIINSPECT_GRANT_TTL_MS: "2000" } });
    const first = await h.ok("request_access", { hwnd: 1001, capabilities: ["observe", "click"] });
    const firstExpiry = Date.parse(String(first.expires_at));
    expect(await grants(h)).toHaveLength(1);
    await time.advance(2300);
    expect(await grants(h)).toEqual([]);
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).isError).toBe(false);
    const renewed = await grants(h);
    expect(renewed).toHaveLength(1);
    expect(renewed[0]).toMatchObject({ hwnd: "1001", capabilities: ["observe", "click"] });
    expect(Date.parse(String(renewed[0].expires_at))).toBeGreaterThan(firstExpiry);
    expect(desk.prompts()).toHaveLength(1);
    // Renewal keeps the ceiling: what was not approved stays out.
    expect((await h.call("send_key", { hwnd: 1001, key: "a" })).code).toBe("consent_required");
    // Expiry is not a revocation for cause.
    expect((await audit(h)).filter((e) => e.tool === "revocation")).toEqual([]);

    // The identity is re-resolved before renewing: a reused PID gets nothing from the old decision.
    await h.ok("request_access", { hwnd: 1002, capabilities: ["observe"] });
    await time.advance(2300);
    desk.reusePid(1002);
    expect((await h.call("restore_window", { hwnd: 1002 })).code).toBe("consent_required");
    expect(await grants(h)).toEqual([]);
    expect(desk.prompts()).toHaveLength(2);
  });

  it("an expired grant's automation session ends before the next request is answered, whatever it is", async () => {
    const desk = new Desk([win(1)]);
    // Time moves only below, so the grant outlives request_access → inspect_tree → health_check.
    const time = new ManualTime();
    const h = await serve(desk, { clock: time.clock, env: { UIINSPECT_GRANT_TTL_MS: "4000" } });
    await h.ok("request_access", { hwnd: 1001, capabilities: ["inspect"] });
    await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    const uia = async () =>
      ((await h.ok("health_check")).workers as Array<{ kind: string; sessions?: number }>).find(
        (w) => w.kind === "uia",
      )?.sessions;
    expect(await uia()).toBe(1);
    // The live grant's expiry (inspect_tree may have renewed it), read before health_check is asked again.
    const held = await grants(h);
    expect(held).toHaveLength(1);
    await time.advance(Date.parse(String(held[0].expires_at)) - time.now + 300);
    // health_check looks at no grant itself: the session must be gone anyway.
    expect(await uia()).toBe(0);
  });

  it("a grant dies with its process: the next call of any kind ends it; release_access by hwnd works with the window gone", async () => {
    const desk = new Desk([win(1), win(2), win(3)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001, capabilities: ["inspect"] });
    await h.ok("request_access", { hwnd: 1002, capabilities: ["observe"] });
    await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    // Process 1 exits: its only window goes away.
    desk.set({ windows: [win(2), win(3)] });
    expect((await h.ok("list_windows")).windows).toHaveLength(2);
    expect((await grants(h)).map((g) => g.hwnd)).toEqual(["1002"]);
    const uia = (await h.ok("health_check")).workers as Array<{ kind: string; sessions?: number }>;
    expect(uia.find((w) => w.kind === "uia")?.sessions).toBe(0);
    const gone = (await audit(h)).filter((e) => e.tool === "revocation");
    expect(gone).toEqual([expect.objectContaining({ reason: "target_gone", pid: 4001 })]);
    // Process 2 hides its window but lives: the grant stays, and can still be given up by hwnd.
    desk.set({ windows: [win(2, { visible: false }), win(3)] });
    expect((await grants(h)).map((g) => g.hwnd)).toEqual(["1002"]);
    expect((await h.ok("release_access", { hwnd: 1002 })).released).toBe(true);
    expect(await grants(h)).toEqual([]);
    expect((await h.call("release_access", { hwnd: 1009 })).code).toBe("target_not_found");
  });

  it("a policy may protect observe and inspect: those tools then take a confirmation token like any other", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk, { policy: { protected_actions: ["observe", "inspect"] } });
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe", "inspect"] });
    const shot = { hwnd: 1001, region_name: "stage" };
    expect((await h.call("screenshot_window", shot)).code).toBe("confirmation_required");
    expect((await h.call("inspect_tree", { detail: "full", hwnd: 1001 })).code).toBe("confirmation_required");
    const token = async (action_class: string) =>
      String((await h.ok("request_confirmation", { hwnd: 1001, action_class })).token_id);
    expect(
      (await h.call("screenshot_window", { ...shot, confirmation_token: await token("observe") })).isError,
    ).toBe(false);
    const tree = await h.call("inspect_tree", {
      detail: "full",
      hwnd: 1001,
      confirmation_token: await token("inspect"),
    });
    expect(tree.isError).toBe(false);
    // One token, one use; and a token for another class does not fit.
    const once = await token("observe");
    expect((await h.call("screenshot_window", { ...shot, confirmation_token: once })).isError).toBe(false);
    expect((await h.call("screenshot_window", { ...shot, confirmation_token: once })).code).toBe(
      "confirmation_invalid",
    );
    expect(
      (
        await h.call("find_elements", {
          detail: "full",
          hwnd: 1001,
          confirmation_token: await token("observe"),
        })
      ).code,
    ).toBe("confirmation_invalid");
  });

  it("request_confirmation checks what the action will: input classes need the window in front (passive focus)", async () => {
    const desk = new Desk([win(1), win(2)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1002, capabilities: ["drag", "text", "close"] });
    // 1001 is in front: dragging in 1002 would be refused, so no token is issued for it.
    expect((await h.call("request_confirmation", { hwnd: 1002, action_class: "drag" })).code).toBe(
      "not_foreground",
    );
    // Closing needs no focus; nor does a text token (set_element_value enters text without it).
    expect((await h.call("request_confirmation", { hwnd: 1002, action_class: "close" })).isError).toBe(false);
    expect((await h.call("request_confirmation", { hwnd: 1002, action_class: "text" })).isError).toBe(false);
    const active = await serve(desk, { env: { DESKTOP_AUTOMATION_FOCUS_MODE: "activate" } });
    await active.ok("request_access", { hwnd: 1002, capabilities: ["drag"] });
    expect((await active.call("request_confirmation", { hwnd: 1002, action_class: "drag" })).isError).toBe(
      false,
    );
  });

  it("release_access drops the grant: the next action is consent_required and element refs are stale", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    const found = await h.ok("find_elements", { detail: "full", hwnd: 1001, automation_id: "play" });
    const ref = (found.elements as Array<{ ref: string }>)[0].ref;
    const tree = await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    expect(tree.node_count).toBeGreaterThan(1);
    expect((await h.ok("release_access", { hwnd: 1001 })).released).toBe(true);
    expect(await grants(h)).toEqual([]);
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("consent_required");
    expect((await h.call("inspect_tree", { detail: "full", hwnd: 1001 })).code).toBe("consent_required");
    expect((await h.call("invoke_element", { ref })).code).toBe("element_stale");
    expect((await h.ok("preview_action", { hwnd: 1001, action_class: "click" })).reason).toBe(
      "consent_required",
    );
    expect(desk.effects().filter((e) => e.type === "button_down" || e.type === "a11y")).toHaveLength(0);
    expect((await h.ok("release_access", { hwnd: 1001 })).released).toBe(false);

    // Asking again asks the person again: the released approval is not reused. Old refs stay dead.
    expect(await h.ok("request_access", { hwnd: 1001 })).toMatchObject({
      decision: "approved",
      source: "dialog",
    });
    expect(desk.prompts()).toHaveLength(2);
    // A second request while the grant stands reuses the approval, and says so and how to reset it.
    const kept = await h.ok("request_access", { hwnd: 1001 });
    expect(kept).toMatchObject({ decision: "approved", source: "cached" });
    expect(String(kept.note)).toContain("release_access");
    expect(desk.prompts()).toHaveLength(2);
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).isError).toBe(false);
    expect((await h.call("invoke_element", { ref })).code).toBe("element_stale");
    const fresh = await h.ok("find_elements", { detail: "full", hwnd: 1001, automation_id: "play" });
    const newRef = (fresh.elements as Array<{ ref: string }>)[0].ref;
    expect(newRef).not.toBe(ref);
    const inv = await h.call("invoke_element", { ref: newRef });
    expect(inv.isError, JSON.stringify(inv.structured)).toBe(false);
  });

  it("two connections with the same clientInfo never share grants or decisions", async () => {
    const desk = new Desk([win(1)], { answer: "approve", delay_ms: 0 });
    const info = { name: "twin", version: "1.0.0" };
    const a = await serve(desk, { client: info });
    const b = await serve(desk, { client: info });
    expect((await a.ok("request_access", { hwnd: 1001 })).source).toBe("dialog");
    expect(await grants(a)).toHaveLength(1);
    expect(await grants(b)).toEqual([]);
    expect((await b.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("consent_required");
    expect((await b.call("preview_action", { hwnd: 1001, action_class: "click" })).structured).toMatchObject({
      allowed: false,
      reason: "consent_required",
    });
    // B asks for itself: its own dialog, not A's cached decision.
    desk.set({ consent: { answer: "deny", delay_ms: 0 } });
    expect(await b.ok("request_access", { hwnd: 1001 })).toMatchObject({
      decision: "denied",
      source: "dialog",
    });
    expect(desk.prompts()).toHaveLength(2);
    expect((await a.call("click_window", { hwnd: 1001, ...IN_STAGE })).isError).toBe(false);
    const hashA = new Set((await audit(a)).map((e) => e.client));
    const hashB = new Set((await audit(b)).map((e) => e.client));
    expect(hashA.size).toBe(1);
    expect(hashB.size).toBe(1);
    expect([...hashA][0]).not.toBe([...hashB][0]);
  });
});
