import { describe, expect, it } from "vitest";
import { audit, closeServersAfterEach, Desk, IN_STAGE, serve, win } from "../support/consent.js";
import { InProcessHarness } from "../support/inProcess.js";
import { FakeDesktop, ruffleWindow } from "../support/mcp.js";
import { ManualTime } from "../support/time.js";

// runChain through the in-process server: each step's refusal, in the order the chain takes
// them, with the audit event it leaves; time moves only when the test says so (ManualTime).

closeServersAfterEach();

const clicks = (desk: Desk) => desk.effects().filter((e) => e.type === "button_down");

describe("runChain, step by step", () => {
  it("without a policy only the meta tools run; every refusal is audited with its code", async () => {
    const d = new FakeDesktop({ session: 1, foreground: 1001, windows: [ruffleWindow()] });
    const h = await InProcessHarness.start({ UIINSPECT_PLATFORM: "fake", UIINSPECT_FAKE_DESKTOP: d.path });
    try {
      expect((await h.call("list_windows")).code).toBe("policy_not_configured");
      expect((await h.call("click_window", { hwnd: 1001, x: 1, y: 1 })).code).toBe("policy_not_configured");
      expect((await h.call("health_check")).isError).toBe(false);
      // get_audit_events itself needs a policy: the log is read where the server keeps it.
      const events = h.sup.audit.recent(10).reverse();
      expect(events.filter((e) => e.tool !== "health_check")).toEqual([
        expect.objectContaining({ tool: "list_windows", outcome: "deny", reason: "policy_not_configured" }),
        expect.objectContaining({ tool: "click_window", outcome: "deny", reason: "policy_not_configured" }),
      ]);
      expect(d.effectsLog()).toEqual([]);
    } finally {
      await h.close();
    }
  });

  it("argument shape, then the policy's actions, then the target, then the grant", async () => {
    const stranger = win(2, { process_path: "C:\\Tools\\other.exe", title: "Other" });
    const desk = new Desk([win(1), stranger]);
    const h = await serve(desk, { policy: { allowed_actions: ["observe", "click"] } });
    // zod refuses the arguments before anything else is looked at.
    expect((await h.call("click_window", { hwnd: 1001, x: "left" })).code).toBe("invalid_argument");
    expect((await h.call("send_key", { hwnd: 1001, key: "a" })).code).toBe("action_not_allowed");
    expect((await h.call("click_window", { hwnd: 1002, ...IN_STAGE })).code).toBe("target_not_allowed");
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("consent_required");
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    // A grant without the capability is no grant for it.
    expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("consent_required");
    expect(clicks(desk)).toEqual([]);
    const reasons = (await audit(h))
      .reverse()
      .filter((e) => e.tool === "click_window" || e.tool === "send_key");
    expect(reasons.map((e) => [e.tool, e.outcome, e.reason])).toEqual([
      ["click_window", "error", "invalid_argument"],
      ["send_key", "deny", "action_not_allowed"],
      ["click_window", "deny", "target_not_allowed"],
      ["click_window", "deny", "consent_required"],
      ["click_window", "deny", "consent_required"],
    ]);
    // The target is named only once it was resolved (the stranger's pid is never written).
    expect(reasons[2]).toMatchObject({ pid: null });
    expect(reasons[3]).toMatchObject({ pid: 4001 });
  });

  it("each result's correlation id is its audit event's", async () => {
    const desk = new Desk([win(1)]);
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    const ok = await h.call("click_window", { hwnd: 1001, ...IN_STAGE });
    const refused = await h.call("click_window", { hwnd: 1001, x: 5000, y: 5000 });
    expect(refused.isError).toBe(true);
    const ids = [ok.meta?.correlation_id ?? ok.structured.correlation_id, refused.meta?.correlation_id];
    expect(ids.every((id) => typeof id === "string" && /^[0-9a-f]{12}$/.test(id))).toBe(true);
    const events = (await audit(h)).reverse().filter((e) => e.tool === "click_window");
    expect(events.map((e) => e.correlation_id)).toEqual(ids);
    expect(events.map((e) => e.outcome)).toEqual([
      "allow",
      refused.code === "out_of_bounds" ? "error" : "deny",
    ]);
  });

  it("a protected action needs a token; a rate-limited call keeps it until the budget refills", async () => {
    const time = new ManualTime();
    const desk = new Desk([win(1)]);
    const h = await serve(desk, {
      clock: time.clock,
      env: { DESKTOP_AUTOMATION_MAX_ACTIONS_PER_MINUTE: "1" },
    });
    await h.ok("request_access", { hwnd: 1001, capabilities: ["text"] });
    const typed = () => desk.effects().filter((e) => e.type === "text" || e.type === "char");
    expect((await h.call("send_text", { hwnd: 1001, text: "a" })).code).toBe("confirmation_required");
    const token = async () =>
      String(
        (await h.ok("request_confirmation", { hwnd: 1001, action_class: "text", ttl_seconds: 300 })).token_id,
      );
    const first = await token();
    expect((await h.call("send_text", { hwnd: 1001, text: "a", confirmation_token: first })).isError).toBe(
      false,
    );
    const second = await token();
    const limited = await h.call("send_text", { hwnd: 1001, text: "b", confirmation_token: second });
    expect(limited.code).toBe("rate_limited");
    const retry = Number((limited.structured.error as { retry_after_ms?: number }).retry_after_ms);
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(61_000);
    const before = typed().length;
    await time.advance(retry + 1);
    // The same token: the refused call did not use it up.
    expect((await h.call("send_text", { hwnd: 1001, text: "b", confirmation_token: second })).isError).toBe(
      false,
    );
    expect(typed().length).toBeGreaterThan(before);
    // …and the successful one did.
    await time.advance(61_000);
    expect((await h.call("send_text", { hwnd: 1001, text: "c", confirmation_token: second })).code).toBe(
      "confirmation_invalid",
    );
  });

  it("an expired grant is swept before any request is answered (ManualTime, no waiting)", async () => {
    const time = new ManualTime();
    const desk = new Desk([win(1)]);
    const h = await serve(desk, { clock: time.clock, env: { UIINSPECT_GRANT_TTL_MS: "60000" } });
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    expect((await h.ok("get_access_state")).grants).toHaveLength(1);
    await time.advance(59_000);
    expect((await h.ok("get_access_state")).grants).toHaveLength(1);
    await time.advance(2_000);
    expect((await h.ok("get_access_state")).grants).toEqual([]);
  });
});
