import { beforeAll, describe, expect, it } from "vitest";
import { audit, closeServersAfterAll, Desk, serve, win } from "../support/consent.js";
import type { ServerHarness } from "../support/mcp.js";
import { ManualTime } from "../support/time.js";

// Confirmation tokens for protected actions, and preview_action, in process; token expiry on
// ManualTime (no waiting). One server for the whole file: two approved windows (1001 foreground, 1002 behind it elsewhere on the screen).

closeServersAfterAll();

let desk: Desk;
let h: ServerHarness;
const time = new ManualTime();
const issued: string[] = [];

async function token(action_class: string, hwnd = 1001, ttl_seconds?: number): Promise<string> {
  const r = await h.ok("request_confirmation", {
    hwnd,
    action_class,
    ...(ttl_seconds ? { ttl_seconds } : {}),
  });
  expect(r.action_class).toBe(action_class);
  expect(r.token_id).toMatch(/^[0-9a-f]{32}$/);
  issued.push(String(r.token_id));
  return String(r.token_id);
}

const texts = () => desk.effects().filter((e) => e.type === "text");
const closes = () => desk.effects().filter((e) => e.type === "close");

beforeAll(async () => {
  desk = new Desk([win(1), win(2), win(3)]);
  h = await serve(desk, {
    clock: time.clock,
    env: { UIINSPECT_LOG_LEVEL: "debug" },
    policy: { protected_actions: ["key"] },
  });
  await h.ok("request_access", { hwnd: 1001 });
  await h.ok("request_access", { hwnd: 1002 });
});

describe("confirmation tokens", () => {
  it("a protected action without a token is confirmation_required; with one it runs once", async () => {
    expect((await h.call("send_text", { hwnd: 1001, text: "x" })).code).toBe("confirmation_required");
    expect((await h.call("close_window", { hwnd: 1001 })).code).toBe("confirmation_required");
    // The policy file's protected_actions add to the built-in set.
    expect((await h.call("send_key", { hwnd: 1001, key: "a" })).code).toBe("confirmation_required");
    expect(texts()).toHaveLength(0);
    const t = await token("text");
    expect((await h.call("send_text", { hwnd: 1001, text: "one", confirmation_token: t })).isError).toBe(
      false,
    );
    expect(texts()).toHaveLength(1);
    const replay = await h.call("send_text", { hwnd: 1001, text: "two", confirmation_token: t });
    expect(replay.code).toBe("confirmation_invalid");
    expect(texts()).toHaveLength(1);
    const k = await token("key");
    expect((await h.call("send_key", { hwnd: 1001, key: "a", confirmation_token: k })).isError).toBe(false);
  });

  it("a token for another class or another window is confirmation_invalid", async () => {
    const t = await token("text");
    expect((await h.call("close_window", { hwnd: 1001, confirmation_token: t })).code).toBe(
      "confirmation_invalid",
    );
    const other = await token("close", 1002);
    expect((await h.call("close_window", { hwnd: 1001, confirmation_token: other })).code).toBe(
      "confirmation_invalid",
    );
    expect((await h.call("send_text", { hwnd: 1002, text: "x", confirmation_token: t })).code).toBe(
      "confirmation_invalid",
    );
    expect(
      (await h.call("send_text", { hwnd: 1001, text: "x", confirmation_token: "0".repeat(32) })).code,
    ).toBe("confirmation_invalid");
    expect(closes()).toHaveLength(0);
    expect(texts()).toHaveLength(1);
    // A misdirected token is not used up: it still works where it was bound.
    expect((await h.call("close_window", { hwnd: 1002, confirmation_token: other })).isError).toBe(false);
    expect(closes()).toEqual([expect.objectContaining({ hwnd: "1002" })]);
  });

  it("an expired token is confirmation_invalid", async () => {
    const t = await token("text", 1001, 1);
    await time.advance(1200);
    expect((await h.call("send_text", { hwnd: 1001, text: "late", confirmation_token: t })).code).toBe(
      "confirmation_invalid",
    );
    expect(texts()).toHaveLength(1);
  });

  it("tokens are issued only after the checks the action would do", async () => {
    expect((await h.call("request_confirmation", { hwnd: 1003, action_class: "text" })).code).toBe(
      "consent_required",
    );
    expect((await h.call("request_confirmation", { hwnd: 1001, action_class: "click" })).code).toBe(
      "invalid_argument",
    );
    expect(
      (await h.call("request_confirmation", { hwnd: 1001, action_class: "text", ttl_seconds: 301 })).code,
    ).toBe("invalid_argument");
  });

  it("preview_action reports allowed / requires_confirmation / has_valid_token / reason truthfully", async () => {
    const preview = async (action_class: string, hwnd = 1001) =>
      h.ok("preview_action", { hwnd, action_class });
    expect(await preview("click")).toEqual({
      allowed: true,
      requires_confirmation: false,
      has_valid_token: false,
      reason: "ok",
    });
    expect(await preview("close")).toEqual({
      allowed: false,
      requires_confirmation: true,
      has_valid_token: false,
      reason: "confirmation_required",
    });
    const t = await token("close");
    expect(await preview("close")).toEqual({
      allowed: true,
      requires_confirmation: true,
      has_valid_token: true,
      reason: "ok",
    });
    // preview never uses the token up
    expect(await preview("close")).toMatchObject({ has_valid_token: true });
    expect((await h.call("close_window", { hwnd: 1001, confirmation_token: t })).isError).toBe(false);
    expect(await preview("close")).toMatchObject({ allowed: false, has_valid_token: false });
    expect(await preview("click", 1003)).toEqual({
      allowed: false,
      requires_confirmation: false,
      has_valid_token: false,
      reason: "consent_required",
    });
  });

  it("tokens never appear in the audit or on stderr", async () => {
    expect(issued.length).toBeGreaterThanOrEqual(6);
    const events = JSON.stringify(await audit(h, 100));
    const stderr = h.stderr.join("");
    // debug logging is on, so the log is not trivially empty (at least the start-up line)
    expect(stderr.length).toBeGreaterThan(0);
    for (const t of issued) {
      expect(events).not.toContain(t);
      expect(stderr).not.toContain(t);
    }
    const rc = (await audit(h, 100)).filter((e) => e.tool === "request_confirmation");
    expect(rc.length).toBe(issued.length + 3);
  });
});
