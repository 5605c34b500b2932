import { describe, expect, it } from "vitest";
import { closeServersAfterEach, Desk, grants, IN_STAGE, serve, until, win } from "../support/consent.js";

// Kept decisions, capability ceilings and the dialog rate limit, in process (test/support/inProcess.ts).

closeServersAfterEach();

describe("kept consent decisions", () => {
  it("a denial is kept for the session: later requests are denied from the cache, no new dialog", async () => {
    const desk = new Desk([win(1)], { answer: "deny", delay_ms: 0 });
    const h = await serve(desk);
    const first = await h.ok("request_access", { hwnd: 1001 });
    expect(first).toMatchObject({ decision: "denied", capabilities: [], expires_at: null, source: "dialog" });
    expect(desk.prompts()).toHaveLength(1);
    // Even if the person would now say yes, the denial stands for this server session.
    desk.set({ consent: { answer: "approve", delay_ms: 0 } });
    for (const caps of [undefined, ["observe"], ["click", "key"]]) {
      const again = await h.ok("request_access", { hwnd: 1001, ...(caps ? { capabilities: caps } : {}) });
      expect(again).toMatchObject({ decision: "denied", capabilities: [], source: "cached" });
    }
    expect(desk.prompts()).toHaveLength(1);
    expect(await grants(h)).toEqual([]);
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("consent_denied");
    expect((await h.ok("preview_action", { hwnd: 1001, action_class: "click" })).reason).toBe(
      "consent_denied",
    );
    expect(desk.effects().filter((e) => e.type === "button_down")).toHaveLength(0);
  });

  it("the approved ceiling is kept: asking for more is capability_expansion_denied without a dialog", async () => {
    const desk = new Desk([win(1), win(2)], { answer: "approve", delay_ms: 0 });
    const h = await serve(desk, { policy: { allowed_actions: ["observe", "inspect", "click"] } });
    const ok = await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    expect(ok).toMatchObject({ decision: "approved", capabilities: ["observe"], source: "dialog" });
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("consent_required");
    const more = await h.call("request_access", { hwnd: 1001, capabilities: ["observe", "click"] });
    expect(more.code).toBe("capability_expansion_denied");
    const all = await h.call("request_access", { hwnd: 1001 });
    expect(all.code).toBe("capability_expansion_denied");
    expect(desk.prompts()).toHaveLength(1);
    const same = await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    expect(same).toMatchObject({ decision: "approved", capabilities: ["observe"], source: "cached" });
    expect((await grants(h))[0]?.capabilities).toEqual(["observe"]);
    expect(desk.effects().filter((e) => e.type === "button_down")).toHaveLength(0);

    // Outside the policy: refused before any dialog.
    expect((await h.call("request_access", { hwnd: 1002, capabilities: ["key"] })).code).toBe(
      "action_not_allowed",
    );
    expect(desk.prompts()).toHaveLength(1);

    // A wider request joining a pending dialog gets the ceiling of the dialog it joined. The dialog
    // stays up 5 s so that the wider request surely arrives before the answer, even on a loaded machine.
    desk.set({ consent: { answer: "approve", delay_ms: 5000 } });
    const narrow = h.call("request_access", { hwnd: 1002, capabilities: ["observe"] });
    await until(() => desk.prompts().length === 2, "the second dialog");
    const wide = await h.call("request_access", { hwnd: 1002, capabilities: ["observe", "click"] });
    expect(wide.code).toBe("capability_expansion_denied");
    expect((await narrow).structured).toMatchObject({ decision: "approved", capabilities: ["observe"] });
    expect(desk.prompts()).toHaveLength(2);
  });

  it("at most 3 new dialogs a minute per client; cached decisions still answer", async () => {
    const desk = new Desk([win(1), win(2), win(3), win(4)], { answer: "approve", delay_ms: 0 });
    const h = await serve(desk);
    for (const hwnd of [1001, 1002]) expect((await h.ok("request_access", { hwnd })).source).toBe("dialog");
    desk.set({ consent: { answer: "deny", delay_ms: 0 } });
    expect(await h.ok("request_access", { hwnd: 1003 })).toMatchObject({
      decision: "denied",
      source: "dialog",
    });
    desk.set({ consent: { answer: "approve", delay_ms: 0 } });
    const fourth = await h.call("request_access", { hwnd: 1004 });
    expect(fourth.code).toBe("rate_limited");
    const retry = (fourth.structured.error as { retry_after_ms?: number }).retry_after_ms;
    expect(retry).toBeGreaterThan(0);
    // The limiter books in 1 s buckets and never answers early: at most the window plus one bucket.
    expect(retry).toBeLessThanOrEqual(61_000);
    expect(desk.prompts()).toHaveLength(3);
    // Cached decisions take no permit.
    expect(await h.ok("request_access", { hwnd: 1001 })).toMatchObject({
      decision: "approved",
      source: "cached",
    });
    expect(await h.ok("request_access", { hwnd: 1003 })).toMatchObject({
      decision: "denied",
      source: "cached",
    });
    const click = await h.call("click_window", { hwnd: 1001, ...IN_STAGE });
    expect(click.isError, JSON.stringify(click.structured)).toBe(false);
    expect((await h.call("click_window", { hwnd: 1004, ...IN_STAGE })).code).toBe("consent_required");
    expect((await h.call("request_access", { hwnd: 1004 })).code).toBe("rate_limited");
    expect(desk.prompts()).toHaveLength(3);
  });
});
