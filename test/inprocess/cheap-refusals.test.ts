import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InProcessHarness } from "../support/inProcess.js";
import { FakeDesktop, filePolicy, LOOSE_BUDGETS, ruffleWindow } from "../support/mcp.js";

/**
 * Refusals that need nothing but the arguments (system chords) come before the budgets are taken
 * and before the confirmation token is used up: a refused chord costs the client nothing it
 * could have spent on a real key. Budget of 2 actions a minute: three refused chords, then the
 * real key with the same token, all inside one minute.
 */

let d: FakeDesktop;
let h: InProcessHarness;

beforeAll(async () => {
  d = new FakeDesktop({
    session: 1,
    foreground: 1001,
    windows: [ruffleWindow()],
    consent: { answer: "approve", delay_ms: 0 },
  });
  h = await InProcessHarness.start({
    UIINSPECT_PLATFORM: "fake",
    UIINSPECT_FAKE_DESKTOP: d.path,
    DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy({ protected_actions: ["key"] })),
    ...LOOSE_BUDGETS,
    UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE: "2",
  });
  await h.ok("request_access", { hwnd: 1001 });
});

afterAll(async () => {
  await h?.close();
});

const actionsUsed = async () => {
  const s = await h.ok("get_rate_limit_state");
  return (s.client as { action: { used: number } }).action.used;
};

describe("cheap refusals before budgets", () => {
  it("a refused system chord uses neither the action budget nor the token", async () => {
    const { confirmation_token: token } = await h.ok("request_confirmation", {
      hwnd: 1001,
      action_class: "key",
    });
    expect(typeof token).toBe("string");
    const before = d.effectsLog().length;
    for (const chord of [
      { key: "delete", modifiers: ["ctrl", "alt"] },
      { key: "f2", modifiers: ["alt"] },
      { key: "f1", modifiers: ["ctrl", "alt"] },
    ]) {
      const r = await h.call("send_key", { hwnd: 1001, ...chord, hold_ms: 0, confirmation_token: token });
      expect(r.isError).toBe(true);
      expect((r.structured.error as { code: string }).code).toBe("invalid_argument");
    }
    const seq = await h.call("send_key_sequence", {
      hwnd: 1001,
      keys: ["a", { key: "f4", modifiers: ["alt"] }],
      hold_ms: 0,
      confirmation_token: token,
    });
    expect((seq.structured.error as { code: string }).code).toBe("invalid_argument");
    expect(d.effectsLog().length).toBe(before);
    expect(await actionsUsed()).toBe(0);
    const preview = await h.ok("preview_action", { hwnd: 1001, action_class: "key" });
    expect(preview.has_valid_token).toBe(true);

    // Control: the same token and budget still carry a real key, once.
    const ok = await h.call("send_key", { hwnd: 1001, key: "a", hold_ms: 0, confirmation_token: token });
    expect(ok.isError, JSON.stringify(ok.structured)).toBe(false);
    expect(await actionsUsed()).toBe(1);
    const again = await h.call("send_key", { hwnd: 1001, key: "a", hold_ms: 0, confirmation_token: token });
    expect((again.structured.error as { code: string }).code).toBe("confirmation_invalid");
  });

  it("a chord without a token on a protected class is still confirmation_required (grant and token first)", async () => {
    const r = await h.call("send_key", { hwnd: 1001, key: "delete", modifiers: ["ctrl", "alt"], hold_ms: 0 });
    expect((r.structured.error as { code: string }).code).toBe("confirmation_required");
  });
});
