import { describe, expect, it } from "vitest";
import { audit, closeServersAfterEach, Desk, grants, serve, until, win } from "../support/consent.js";

// Consent single flight in process: the supervisor, the SDK client and the simulated desktop's
// scripted dialog (consent.log gets one line per dialog shown).

closeServersAfterEach();

describe("consent single flight", () => {
  it("50 concurrent request_access open one dialog and all get the same decision (approve, then deny)", async () => {
    const desk = new Desk([win(1), win(2)], { answer: "approve", delay_ms: 1500 });
    const h = await serve(desk);
    const approved = await Promise.all(
      Array.from({ length: 50 }, () => h.call("request_access", { hwnd: 1001, capabilities: ["observe"] })),
    );
    expect(desk.prompts()).toHaveLength(1);
    for (const r of approved) {
      expect(r.isError, JSON.stringify(r.structured)).toBe(false);
      expect(r.structured).toMatchObject({ decision: "approved", capabilities: ["observe"] });
    }
    expect(approved.some((r) => r.structured.source === "dialog")).toBe(true);
    expect(await grants(h)).toHaveLength(1);

    desk.set({ consent: { answer: "deny", delay_ms: 1500 } });
    const denied = await Promise.all(
      Array.from({ length: 50 }, () => h.call("request_access", { hwnd: 1002, capabilities: ["observe"] })),
    );
    expect(desk.prompts()).toHaveLength(2);
    for (const r of denied) {
      expect(r.isError, JSON.stringify(r.structured)).toBe(false);
      expect(r.structured).toMatchObject({ decision: "denied", capabilities: [], expires_at: null });
    }
    expect((await grants(h)).map((g) => g.hwnd)).toEqual(["1001"]);
  });

  it("a cancelled caller (notifications/cancelled) detaches only its own wait", async () => {
    const desk = new Desk([win(1), win(2)], { answer: "approve", delay_ms: 2500 });
    const h = await serve(desk);
    const ac = new AbortController();
    const cancelled = h.call("request_access", { hwnd: 1001 }, { signal: ac.signal });
    const others = Array.from({ length: 10 }, () => h.call("request_access", { hwnd: 1001 }));
    await until(() => desk.prompts().length === 1, "the dialog");
    ac.abort();
    await expect(cancelled).rejects.toThrow();
    const results = await Promise.all(others);
    for (const r of results) expect(r.structured.decision, JSON.stringify(r.structured)).toBe("approved");
    expect(desk.prompts()).toHaveLength(1);
    const events = (await audit(h)).filter((e) => e.tool === "request_access");
    expect(events.filter((e) => e.reason === "cancelled")).toHaveLength(1);
    expect(events.filter((e) => e.reason === "ok")).toHaveLength(10);

    // Every waiter leaves: the dialog stays up for the person, and its answer is kept.
    const alone = new AbortController();
    const lone = h.call("request_access", { hwnd: 1002 }, { signal: alone.signal });
    await until(() => desk.prompts().length === 2, "the second dialog");
    alone.abort();
    await expect(lone).rejects.toThrow();
    const retry = await h.ok("request_access", { hwnd: 1002 });
    expect(retry.decision).toBe("approved");
    expect(desk.prompts()).toHaveLength(2);
    expect((await grants(h)).map((g) => g.hwnd).sort()).toEqual(["1001", "1002"]);
  });

  it("a timeout fails closed with consent_timeout and releases the key for a clean second prompt", async () => {
    const desk = new Desk([win(1)], { answer: "timeout" });
    // One timeout for both prompts: the second (answered at once) must fit in it too, and its
    // scenario read and log write took over 400 ms at load 15 (the second request timed out).
    const h = await serve(desk, { env: { UIINSPECT_CONSENT_TIMEOUT_MS: "3000" } });
    const r = await h.call("request_access", { hwnd: 1001 });
    expect(r.code).toBe("consent_timeout");
    expect(desk.prompts()).toHaveLength(1);
    expect(await grants(h)).toEqual([]);
    expect((await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" })).code).toBe(
      "consent_required",
    );

    desk.set({ consent: { answer: "approve", delay_ms: 0 } });
    const again = await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    expect(again).toMatchObject({ decision: "approved", source: "dialog" });
    expect(desk.prompts()).toHaveLength(2);
    expect(await grants(h)).toHaveLength(1);
    const shot = await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" });
    expect(shot.isError, JSON.stringify(shot.structured)).toBe(false);
    const reasons = (await audit(h)).filter((e) => e.tool === "request_access").map((e) => e.reason);
    expect(reasons).toEqual(["ok", "consent_timeout"]);
  });

  it("the target process exiting during the prompt closes it and fails closed", async () => {
    // The scripted answer (approve) would only come after 30 s: the exit must end it first.
    const desk = new Desk([win(1)], { answer: "approve", delay_ms: 30_000 });
    const h = await serve(desk);
    const pending = h.call("request_access", { hwnd: 1001 });
    await until(() => desk.prompts().length === 1, "the dialog");
    desk.set({ windows: [] });
    const r = await pending;
    expect(r.code).toBe("target_gone");
    expect(await grants(h)).toEqual([]);
    expect(desk.prompts()).toHaveLength(1);
  });
});
