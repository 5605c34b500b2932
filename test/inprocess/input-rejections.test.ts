import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  FakeDesktop,
  filePolicy,
  otherWindow,
  RUFFLE,
  ruffleWindow,
  type ServerHarness,
} from "../support/mcp.js";
import { closeServersAfterAll, serveFake } from "../support/servers.js";

/**
 * Every rejected input call emits nothing at all: the effects_log of the simulated desktop is
 * byte-for-byte unchanged (no move, no activate, no key). Each group also has a control call
 * that does emit, so "nothing emitted" cannot pass vacuously.
 */

type Args = Record<string, unknown>;

const other = otherWindow;

const scenario = (windows: Args[], foreground: number | null = 1001): Args => ({
  session: 1,
  foreground,
  windows,
  consent: { answer: "approve", delay_ms: 0 },
});

closeServersAfterAll();
const start = (d: FakeDesktop, env: Record<string, string> = {}, policy: Args = filePolicy()) =>
  serveFake(d, { env, policy });

/** One call per input tool, with a fresh confirmation token where the class is protected. */
async function everyInputCall(h: ServerHarness, target: Args = { hwnd: 1001 }, x = 10, y = 10) {
  const tok = async (action_class: string) => {
    const r = await h.call("request_confirmation", { ...target, action_class });
    return r.isError ? "no-token" : String(r.structured.token_id);
  };
  return [
    ["click_window", { ...target, x, y }],
    ["double_click_window", { ...target, x, y }],
    ["right_click_window", { ...target, x, y }],
    ["hover_window", { ...target, x, y, dwell_ms: 0 }],
    ["scroll_window", { ...target, x, y, notches: -2 }],
    [
      "drag_window",
      {
        ...target,
        start_x: x,
        start_y: y,
        end_x: x + 5,
        end_y: y + 5,
        confirmation_token: await tok("drag"),
      },
    ],
    ["send_text", { ...target, text: "hello", confirmation_token: await tok("text") }],
    ["send_key", { ...target, key: "a", modifiers: ["ctrl"], hold_ms: 0 }],
    ["send_key_sequence", { ...target, keys: ["a", "b"], hold_ms: 0 }],
  ] as Array<[string, Args]>;
}

/** Asserts the call fails with `code` and leaves the effects log exactly as it was. */
async function refused(h: ServerHarness, d: FakeDesktop, name: string, args: Args, code: string) {
  const before = d.effectsLog().length;
  const r = await h.call(name, args);
  expect(r.code, `${name} ${JSON.stringify(args).slice(0, 120)}`).toBe(code);
  expect(d.effectsLog().slice(before), `${name} emitted`).toEqual([]);
  return r;
}

describe("verification refusals (out_of_bounds, occluded, not_foreground, minimized)", () => {
  let d: FakeDesktop;
  let h: ServerHarness;
  beforeAll(async () => {
    d = new FakeDesktop(scenario([ruffleWindow()]));
    h = await start(d);
    await h.ok("request_access", { hwnd: 1001 });
  });
  afterEach(() => d.write(scenario([ruffleWindow()])));
  const audit = async () =>
    (await h.ok("get_audit_events", { limit: 100 })).events as Array<Record<string, unknown>>;

  it("coordinates outside the window are out_of_bounds", async () => {
    // The window is 824 × 640: x 0…823, y 0…639.
    for (const [x, y] of [
      [824, 10],
      [10, 640],
      [5000, 5000],
    ]) {
      for (const name of ["click_window", "double_click_window", "right_click_window", "scroll_window"])
        await refused(h, d, name, { hwnd: 1001, x, y }, "out_of_bounds");
      await refused(h, d, "hover_window", { hwnd: 1001, x, y, dwell_ms: 0 }, "out_of_bounds");
    }
    const drag = async (over: Args) => {
      const tok = String((await h.ok("request_confirmation", { hwnd: 1001, action_class: "drag" })).token_id);
      return { hwnd: 1001, start_x: 10, start_y: 10, end_x: 20, end_y: 20, confirmation_token: tok, ...over };
    };
    await refused(h, d, "drag_window", await drag({ end_x: 824 }), "out_of_bounds");
    await refused(h, d, "drag_window", await drag({ start_y: 640 }), "out_of_bounds");
    // One bad waypoint among good ones: refused before the first move.
    const path = [
      { x: 30, y: 30 },
      { x: 900, y: 30 },
      { x: 40, y: 40 },
    ];
    await refused(h, d, "drag_window", await drag({ path }), "out_of_bounds");
    // Control: the last pixel is inside.
    expect((await h.call("hover_window", { hwnd: 1001, x: 823, y: 639, dwell_ms: 0 })).isError).toBe(false);
  });

  it("a covered point is occluded; an uncovered point of the same window still works", async () => {
    // The other app covers screen 0…399, i.e. window-relative 0…299 of the Ruffle window.
    const calls = await everyInputCall(h, { hwnd: 1001 }, 10, 10); // tokens first
    const tok = String((await h.ok("request_confirmation", { hwnd: 1001, action_class: "drag" })).token_id);
    d.write(scenario([other(), ruffleWindow({ z: 1 })]));
    for (const [name, args] of calls) {
      if (name.startsWith("send_")) continue; // keys and text have no point
      await refused(h, d, name, args, "occluded");
    }
    const path = [
      { x: 500, y: 500 },
      { x: 200, y: 200 },
    ];
    await refused(
      h,
      d,
      "drag_window",
      { hwnd: 1001, start_x: 400, start_y: 400, end_x: 450, end_y: 450, path, confirmation_token: tok },
      "occluded",
    );
    const before = d.effectsLog().length;
    expect((await h.call("click_window", { hwnd: 1001, x: 400, y: 400 })).isError).toBe(false);
    expect(d.effectsLog().length - before).toBe(3);
  });

  it("a background window is not_foreground (passive mode); close_window does not need the focus", async () => {
    let calls = await everyInputCall(h);
    d.write(scenario([other({ rect: [1000, 800, 1200, 1000] }), ruffleWindow({ z: 1 })], 2002));
    for (const [name, args] of calls) await refused(h, d, name, args, "not_foreground");
    d.write(scenario([ruffleWindow()]));
    calls = await everyInputCall(h);
    d.write(scenario([ruffleWindow()], null));
    for (const [name, args] of calls) await refused(h, d, name, args, "not_foreground");
    const tok = String((await h.ok("request_confirmation", { hwnd: 1001, action_class: "close" })).token_id);
    const before = d.effectsLog().length;
    expect((await h.call("close_window", { hwnd: 1001, confirmation_token: tok })).isError).toBe(false);
    expect(
      d
        .effectsLog()
        .slice(before)
        .map((e) => e.type),
    ).toEqual(["close"]);
  });

  it("a minimized window is minimized for every input tool and close", async () => {
    const calls = await everyInputCall(h);
    const tok = String((await h.ok("request_confirmation", { hwnd: 1001, action_class: "close" })).token_id);
    d.write(scenario([ruffleWindow({ iconic: true })]));
    for (const [name, args] of calls) await refused(h, d, name, args, "minimized");
    await refused(h, d, "close_window", { hwnd: 1001, confirmation_token: tok }, "minimized");
  });

  it("every refused attempt is audited with its code and tool", async () => {
    const events = await audit();
    for (const reason of ["out_of_bounds", "occluded", "not_foreground", "minimized"]) {
      const hits = events.filter((e) => e.reason === reason);
      expect(hits.length, reason).toBeGreaterThan(0);
      for (const e of hits) expect(e, JSON.stringify(e)).toMatchObject({ outcome: "error" });
    }
    const tools = new Set(events.filter((e) => e.reason === "minimized").map((e) => e.tool));
    for (const t of ["click_window", "drag_window", "send_text", "send_key_sequence", "close_window"])
      expect(tools.has(t), t).toBe(true);
  });

  // A refused call is audited with the context the chain had built (target, policy, counters).
  it("a refused attempt's audit event names the target's pid and the policy", async () => {
    const events = await audit();
    const refusedInWorker = events.filter((e) => e.reason === "occluded");
    expect(refusedInWorker.length).toBeGreaterThan(0);
    for (const e of refusedInWorker) expect(e).toMatchObject({ pid: 4242, policy_id: "e2e" });
  });
});

describe("argument and token refusals, resolved before anything is emitted", () => {
  let d: FakeDesktop;
  let h: ServerHarness;
  beforeAll(async () => {
    d = new FakeDesktop(scenario([ruffleWindow()]));
    h = await start(d);
    await h.ok("request_access", { hwnd: 1001 });
  });

  it("system chords, keys off the allow-list and bad modifiers", async () => {
    const bad: Args[] = [
      { key: "tab", modifiers: ["alt"] },
      { key: "tab", modifiers: ["shift", "alt"] },
      { key: "f4", modifiers: ["alt"] },
      { key: "delete", modifiers: ["ctrl", "alt"] },
      { key: "delete", modifiers: ["alt", "ctrl"] },
      { key: "esc", modifiers: ["ctrl"] },
      { key: "esc", modifiers: ["ctrl", "shift"] },
      { key: "space", modifiers: ["alt"] },
      { key: "f2", modifiers: ["ctrl", "alt"] },
      { key: "l", modifiers: ["ctrl", "alt"] },
      { key: "win" },
      { key: "lwin" },
      { key: "printscreen" },
      { key: "capslock" },
      { key: "ab" },
      { key: "" },
      { key: "a", modifiers: ["meta"] },
      { key: "a", modifiers: ["win"] },
      { key: "a", modifiers: ["ctrl", "ctrl"] },
      { key: "a", modifiers: ["ctrl", "shift", "alt"] },
      { key: "a", hold_ms: 5001 },
      { key: "a", hold_ms: -1 },
    ];
    for (const b of bad) await refused(h, d, "send_key", { hwnd: 1001, ...b }, "invalid_argument");
    // A chord in the last step refuses the whole sequence before its first key.
    for (const last of [
      { key: "f4", modifiers: ["alt"] },
      { key: "delete", modifiers: ["ctrl", "alt"] },
      { key: "tab", modifiers: ["alt"] },
      "win",
    ])
      await refused(
        h,
        d,
        "send_key_sequence",
        { hwnd: 1001, keys: ["a", "b", last], hold_ms: 0 },
        "invalid_argument",
      );
    await refused(h, d, "send_key_sequence", { hwnd: 1001, keys: [] }, "invalid_argument");
    await refused(
      h,
      d,
      "send_key_sequence",
      { hwnd: 1001, keys: Array.from({ length: 11 }, () => "a") },
      "invalid_argument",
    );
    // Control: the same keys without the chord are pressed.
    const before = d.effectsLog().length;
    expect((await h.call("send_key", { hwnd: 1001, key: "f4", hold_ms: 0 })).isError).toBe(false);
    expect(d.effectsLog().length - before).toBe(2);
  });

  it("out-of-range pointer, drag and text arguments", async () => {
    const tok = async (c: string) =>
      String((await h.ok("request_confirmation", { hwnd: 1001, action_class: c })).token_id);
    for (const notches of [0, 21, -21, 1.5])
      await refused(h, d, "scroll_window", { hwnd: 1001, x: 1, y: 1, notches }, "invalid_argument");
    for (const dwell_ms of [-1, 10_001])
      await refused(h, d, "hover_window", { hwnd: 1001, x: 1, y: 1, dwell_ms }, "invalid_argument");
    await refused(h, d, "click_window", { hwnd: 1001, x: -1, y: 1 }, "invalid_argument");
    await refused(
      h,
      d,
      "click_window",
      { hwnd: 1001, title_contains: "game", x: 1, y: 1 },
      "invalid_argument",
    );
    const path = Array.from({ length: 17 }, (_, i) => ({ x: 10 + i, y: 10 }));
    await refused(
      h,
      d,
      "drag_window",
      {
        hwnd: 1001,
        start_x: 1,
        start_y: 1,
        end_x: 50,
        end_y: 50,
        path,
        confirmation_token: await tok("drag"),
      },
      "invalid_argument",
    );
    for (const text of ["", "a\u0000", "x".repeat(4097), `${"😀".repeat(2048)}x`])
      await refused(
        h,
        d,
        "send_text",
        { hwnd: 1001, text, confirmation_token: await tok("text") },
        "invalid_argument",
      );
  });

  it("missing or wrong confirmation tokens for text, close and drag", async () => {
    const drag = { hwnd: 1001, start_x: 1, start_y: 1, end_x: 9, end_y: 9 };
    await refused(h, d, "send_text", { hwnd: 1001, text: "hi" }, "confirmation_required");
    await refused(h, d, "close_window", { hwnd: 1001 }, "confirmation_required");
    await refused(h, d, "drag_window", drag, "confirmation_required");
    await refused(
      h,
      d,
      "send_text",
      { hwnd: 1001, text: "hi", confirmation_token: "bogus" },
      "confirmation_invalid",
    );
    // A token of another class does not fit, and a used token is spent.
    const textTok = String(
      (await h.ok("request_confirmation", { hwnd: 1001, action_class: "text" })).token_id,
    );
    await refused(h, d, "close_window", { hwnd: 1001, confirmation_token: textTok }, "confirmation_invalid");
    await refused(h, d, "drag_window", { ...drag, confirmation_token: textTok }, "confirmation_invalid");
    expect((await h.call("send_text", { hwnd: 1001, text: "hi", confirmation_token: textTok })).isError).toBe(
      false,
    );
    await refused(
      h,
      d,
      "send_text",
      { hwnd: 1001, text: "hi", confirmation_token: textTok },
      "confirmation_invalid",
    );
  });
});

describe("authorization refusals", () => {
  it("no grant: consent_required for every input tool, restore and close", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow()]));
    const h = await start(d);
    for (const [name, args] of await everyInputCall(h)) await refused(h, d, name, args, "consent_required");
    await refused(h, d, "close_window", { hwnd: 1001, confirmation_token: "x" }, "consent_required");
    await refused(h, d, "restore_window", { hwnd: 1001 }, "consent_required");
    // A grant without the capability is no better.
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    await refused(h, d, "click_window", { hwnd: 1001, x: 1, y: 1 }, "consent_required");
    await refused(h, d, "send_key", { hwnd: 1001, key: "a" }, "consent_required");
  });

  it("a policy without the capability: action_not_allowed", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow()]));
    const h = await start(d, {}, filePolicy({ allowed_actions: ["observe"] }));
    await h.ok("request_access", { hwnd: 1001 });
    for (const [name, args] of await everyInputCall(h)) await refused(h, d, name, args, "action_not_allowed");
    await refused(h, d, "close_window", { hwnd: 1001, confirmation_token: "x" }, "action_not_allowed");
    // observe is allowed, so restore works (and emits nothing for a normal window).
    expect((await h.call("restore_window", { hwnd: 1001 })).isError).toBe(false);
  });

  it("a replaced or restarted process behind the same hwnd: target_changed", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow()]));
    const h = await start(d);
    await h.ok("request_access", { hwnd: 1001 });
    // Same pid, other start time (a restart that reused the pid).
    d.write(scenario([ruffleWindow({ process_start: "2026-11-30T09:00:00Z" })]));
    await refused(h, d, "click_window", { hwnd: 1001, x: 1, y: 1 }, "target_changed");
    // The grant died with the instance: the new one needs its own consent.
    await refused(h, d, "send_key", { hwnd: 1001, key: "a" }, "consent_required");
    // Back to the consented instance, then replaced by another pid.
    d.write(scenario([ruffleWindow()]));
    await h.ok("request_access", { hwnd: 1001 });
    const calls = await everyInputCall(h);
    d.write(scenario([ruffleWindow({ pid: 4343 })]));
    await refused(h, d, calls[5][0], calls[5][1], "target_changed"); // drag, with a valid token
    await refused(h, d, "hover_window", { hwnd: 1001, x: 1, y: 1, dwell_ms: 0 }, "consent_required");
    // Another executable path at the same pid and start time is not allowed at all.
    d.write(scenario([ruffleWindow({ process_path: RUFFLE.replace("ruffle.exe", "ruffle2.exe") })]));
    await refused(h, d, "click_window", { hwnd: 1001, x: 1, y: 1 }, "target_not_allowed");
  });
});

describe("rate limits (rate_limited, nothing emitted)", () => {
  it("per-application actions and typed characters", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow()]));
    const h = await start(d, {
      DESKTOP_AUTOMATION_MAX_ACTIONS_PER_MINUTE: "4",
      DESKTOP_AUTOMATION_MAX_TEXT_CHARS_PER_MINUTE: "10",
    });
    await h.ok("request_access", { hwnd: 1001 });
    const tok = async () =>
      String((await h.ok("request_confirmation", { hwnd: 1001, action_class: "text" })).token_id);
    await h.ok("send_text", { hwnd: 1001, text: "12345678", confirmation_token: await tok() }); // action 1
    const chars = await refused(
      h,
      d,
      "send_text",
      { hwnd: 1001, text: "abc", confirmation_token: await tok() },
      "rate_limited",
    );
    expect((chars.structured.error as { retry_after_ms?: number }).retry_after_ms).toBeGreaterThan(0);
    // More than the whole minute's budget: no retry_after_ms.
    const never = await refused(
      h,
      d,
      "send_text",
      { hwnd: 1001, text: "x".repeat(11), confirmation_token: await tok() },
      "rate_limited",
    );
    expect((never.structured.error as { retry_after_ms?: number }).retry_after_ms).toBeUndefined();
    await h.ok("hover_window", { hwnd: 1001, x: 1, y: 1, dwell_ms: 0 }); // 2
    await h.ok("send_key", { hwnd: 1001, key: "a", hold_ms: 0 }); // 3
    const calls = await everyInputCall(h); // tokens cost no action
    await h.ok("scroll_window", { hwnd: 1001, x: 1, y: 1 }); // 4
    for (const [name, args] of calls) await refused(h, d, name, args, "rate_limited");
  });

  it("per-client actions", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow()]));
    const h = await start(d, { UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE: "2" });
    await h.ok("request_access", { hwnd: 1001 });
    await h.ok("hover_window", { hwnd: 1001, x: 1, y: 1, dwell_ms: 0 });
    await h.ok("send_key", { hwnd: 1001, key: "a", hold_ms: 0 });
    await refused(h, d, "click_window", { hwnd: 1001, x: 1, y: 1 }, "rate_limited");
    await refused(h, d, "send_key", { hwnd: 1001, key: "a" }, "rate_limited");
    const state = await h.ok("get_rate_limit_state");
    expect(state.client).toMatchObject({ action: { used: 2, limit: 2 } });
  });
});
