import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeDesktop, filePolicy, ruffleWindow, type ServerHarness } from "../support/mcp.js";
import { serveFake } from "../support/servers.js";

/**
 * Exact emitted sequences in process (SDK client over InMemoryTransport), read from the fake effects_log.
 * The Ruffle window's origin is (100, 100): every screen coordinate is origin + (x, y).
 */

type Effect = Record<string, unknown>;
const CANARY = "CANARY-input-51d2e8";
const ORIGIN = { x: 100, y: 100 };

const scenario = (over: Record<string, unknown> = {}) => ({
  session: 1,
  foreground: 1001,
  windows: [ruffleWindow(over)],
  consent: { answer: "approve", delay_ms: 0 },
});

/** Effects appended since `from`, without the bookkeeping fields. */
function since(d: FakeDesktop, from: number): Effect[] {
  return d
    .effectsLog()
    .slice(from)
    .map(({ seq: _s, t: _t, ...rest }) => rest);
}

let d: FakeDesktop;
let h: ServerHarness;

beforeAll(async () => {
  d = new FakeDesktop(scenario());
  h = await serveFake(d, { policy: filePolicy(), env: { UIINSPECT_LOG_LEVEL: "debug" } });
  await h.ok("request_access", { hwnd: 1001 });
});
afterAll(async () => {
  await h?.close();
});

/** Runs one call and returns it with exactly what it emitted. */
async function emitted(name: string, args: Record<string, unknown>) {
  const from = d.effectsLog().length;
  const r = await h.call(name, args);
  return { r, fx: since(d, from) };
}

async function token(action_class: string): Promise<string> {
  return String((await h.ok("request_confirmation", { hwnd: 1001, action_class })).token_id);
}

describe("pointer tools emit the sequence of docs/spec.md §6 at window origin + (x, y)", () => {
  it("click_window: move, down, up (left), with the 150 ms settle and the 50 ms press", async () => {
    const from = d.effectsLog().length;
    const r = await h.call("click_window", { hwnd: 1001, x: 10, y: 20 });
    expect(r.isError).toBe(false);
    expect(r.structured).toMatchObject({ screen_x: 110, screen_y: 120 });
    expect(r.structured.correlation_id).toMatch(/^[0-9a-f]{12}$/);
    const raw = d.effectsLog().slice(from);
    expect(raw.map(({ seq: _s, t: _t, ...e }) => e)).toEqual([
      { type: "move", x: 110, y: 120 },
      { type: "button_down", button: "left" },
      { type: "button_up", button: "left" },
    ]);
    // Lower bounds only (load can only lengthen them): the waits of docs/spec.md §6 did happen.
    const t = raw.map((e) => Number(e.t));
    expect(t[1] - t[0]).toBeGreaterThanOrEqual(140);
    expect(t[2] - t[1]).toBeGreaterThanOrEqual(40);
  });

  it("double_click_window: move, down, up, down, up", async () => {
    const { r, fx } = await emitted("double_click_window", { hwnd: "1001", x: 0, y: 0 });
    expect(r.isError).toBe(false);
    expect(fx).toEqual([
      { type: "move", x: ORIGIN.x, y: ORIGIN.y },
      { type: "button_down", button: "left" },
      { type: "button_up", button: "left" },
      { type: "button_down", button: "left" },
      { type: "button_up", button: "left" },
    ]);
  });

  it("right_click_window: move, right down, right up (last pixel of the window)", async () => {
    const { r, fx } = await emitted("right_click_window", { title_contains: "game", x: 823, y: 639 });
    expect(r.isError).toBe(false);
    expect(fx).toEqual([
      { type: "move", x: 923, y: 739 },
      { type: "button_down", button: "right" },
      { type: "button_up", button: "right" },
    ]);
  });

  it("hover_window: one move and nothing else, dwell honoured", async () => {
    const zero = await emitted("hover_window", { hwnd: 1001, x: 5, y: 6, dwell_ms: 0 });
    expect(zero.r.isError).toBe(false);
    expect(zero.fx).toEqual([{ type: "move", x: 105, y: 106 }]);
    const started = Date.now();
    const dwell = await emitted("hover_window", { hwnd: 1001, x: 7, y: 8, dwell_ms: 300 });
    expect(dwell.fx).toEqual([{ type: "move", x: 107, y: 108 }]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290); // lower bound: the dwell happened
  });

  it("scroll_window: move then one wheel line with the signed notches (±1…20)", async () => {
    for (const notches of [1, -1, 3, -5, 20, -20]) {
      const { r, fx } = await emitted("scroll_window", { hwnd: 1001, x: 30, y: 40, notches });
      expect(r.isError, String(notches)).toBe(false);
      expect(fx).toEqual([
        { type: "move", x: 130, y: 140 },
        { type: "wheel", notches },
      ]);
    }
    const def = await emitted("scroll_window", { hwnd: 1001, x: 30, y: 40 });
    expect(def.fx).toEqual([
      { type: "move", x: 130, y: 140 },
      { type: "wheel", notches: 1 },
    ]);
  });

  it("drag_window with 16 waypoints: move, down, 17 moves, up", async () => {
    const path = Array.from({ length: 16 }, (_, i) => ({ x: 20 + i * 10, y: 30 + i * 5 }));
    const { r, fx } = await emitted("drag_window", {
      hwnd: 1001,
      start_x: 10,
      start_y: 10,
      end_x: 400,
      end_y: 300,
      path,
      confirmation_token: await token("drag"),
    });
    expect(r.isError).toBe(false);
    expect(r.structured.legs).toBe(17);
    expect(fx).toEqual([
      { type: "move", x: 110, y: 110 },
      { type: "button_down", button: "left" },
      ...path.map((p) => ({ type: "move", x: 100 + p.x, y: 100 + p.y })),
      { type: "move", x: 500, y: 400 },
      { type: "button_up", button: "left" },
    ]);
    const plain = await emitted("drag_window", {
      hwnd: 1001,
      start_x: 1,
      start_y: 2,
      end_x: 3,
      end_y: 4,
      confirmation_token: await token("drag"),
    });
    expect(plain.fx).toEqual([
      { type: "move", x: 101, y: 102 },
      { type: "button_down", button: "left" },
      { type: "move", x: 103, y: 104 },
      { type: "button_up", button: "left" },
    ]);
  });
});

describe("keyboard and text", () => {
  it("send_text types exactly the text, astral characters and CJK included", async () => {
    const text = `héllo 😀 漢字テスト 𝄞 ${CANARY}`;
    const { r, fx } = await emitted("send_text", {
      hwnd: 1001,
      text,
      confirmation_token: await token("text"),
    });
    expect(r.isError).toBe(false);
    expect(r.structured.chars).toBe(text.length);
    expect(fx.every((e) => e.type === "text" && e.hwnd === "1001" && e.mode === "sendinput")).toBe(true);
    expect(fx.map((e) => e.text).join("")).toBe(text);
  });

  it("send_text accepts 4096 UTF-16 units (2048 astral characters) and never splits a pair", async () => {
    const ascii = "abcdefgh".repeat(512);
    const a = await emitted("send_text", {
      hwnd: 1001,
      text: ascii,
      confirmation_token: await token("text"),
    });
    expect(a.r.isError).toBe(false);
    expect(a.fx.map((e) => e.text).join("")).toBe(ascii);
    const astral = "😀".repeat(2048);
    expect(astral.length).toBe(4096);
    const b = await emitted("send_text", {
      hwnd: 1001,
      text: astral,
      confirmation_token: await token("text"),
    });
    expect(b.r.isError).toBe(false);
    expect(b.fx.map((e) => e.text).join("")).toBe(astral);
    for (const e of b.fx) expect(String(e.text)).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
  });

  it("send_text refuses 4097 characters and NUL with invalid_argument and emits nothing", async () => {
    for (const text of ["x".repeat(4097), `a\u0000b ${CANARY}`, `${"😀".repeat(2048)}x`]) {
      const { r, fx } = await emitted("send_text", {
        hwnd: 1001,
        text,
        confirmation_token: await token("text"),
      });
      expect(r.code, `${text.length} UTF-16 units ${JSON.stringify(r.structured)}`).toBe("invalid_argument");
      expect(fx).toEqual([]);
    }
  });

  it("send_key presses modifiers in order and releases in reverse", async () => {
    const { r, fx } = await emitted("send_key", {
      hwnd: 1001,
      key: "A",
      modifiers: ["ctrl", "shift"],
      hold_ms: 0,
    });
    expect(r.isError).toBe(false);
    expect(fx).toEqual([
      { type: "key_down", key: "ctrl" },
      { type: "key_down", key: "shift" },
      { type: "key_down", key: "a" },
      { type: "key_up", key: "a" },
      { type: "key_up", key: "shift" },
      { type: "key_up", key: "ctrl" },
    ]);
    const alt = await emitted("send_key", { hwnd: 1001, key: "f5", modifiers: ["alt", "shift"] });
    expect(alt.fx).toEqual([
      { type: "key_down", key: "alt" },
      { type: "key_down", key: "shift" },
      { type: "key_down", key: "f5" },
      { type: "key_up", key: "f5" },
      { type: "key_up", key: "shift" },
      { type: "key_up", key: "alt" },
    ]);
    const plain = await emitted("send_key", { hwnd: 1001, key: "enter" });
    expect(plain.fx).toEqual([
      { type: "key_down", key: "enter" },
      { type: "key_up", key: "enter" },
    ]);
  });

  it("send_key_sequence: each step pressed and released in turn; 10 steps ok, 11 refused", async () => {
    const { r, fx } = await emitted("send_key_sequence", {
      hwnd: 1001,
      keys: ["h", { key: "s", modifiers: ["ctrl"] }, { key: "t", modifiers: ["shift", "alt"] }, "enter"],
      hold_ms: 0,
    });
    expect(r.isError).toBe(false);
    expect(r.structured.steps).toBe(4);
    expect(fx).toEqual([
      { type: "key_down", key: "h" },
      { type: "key_up", key: "h" },
      { type: "key_down", key: "ctrl" },
      { type: "key_down", key: "s" },
      { type: "key_up", key: "s" },
      { type: "key_up", key: "ctrl" },
      { type: "key_down", key: "shift" },
      { type: "key_down", key: "alt" },
      { type: "key_down", key: "t" },
      { type: "key_up", key: "t" },
      { type: "key_up", key: "alt" },
      { type: "key_up", key: "shift" },
      { type: "key_down", key: "enter" },
      { type: "key_up", key: "enter" },
    ]);
    const ten = "0123456789".split("");
    const ok = await emitted("send_key_sequence", { hwnd: 1001, keys: ten, hold_ms: 0 });
    expect(ok.r.structured.steps).toBe(10);
    expect(ok.fx.filter((e) => e.type === "key_down").map((e) => e.key)).toEqual(ten);
    const eleven = await emitted("send_key_sequence", { hwnd: 1001, keys: [...ten, "a"], hold_ms: 0 });
    expect(eleven.r.code).toBe("invalid_argument");
    expect(eleven.fx).toEqual([]);
  });
});

describe("window commands", () => {
  it("close_window emits one close line and nothing else", async () => {
    const { r, fx } = await emitted("close_window", { hwnd: 1001, confirmation_token: await token("close") });
    expect(r.isError).toBe(false);
    expect(fx).toEqual([{ type: "close", hwnd: "1001" }]);
  });

  it("restore_window restores only a minimized window and never activates it", async () => {
    const normal = await emitted("restore_window", { hwnd: 1001 });
    expect(normal.r.structured.was_minimized).toBe(false);
    expect(normal.fx).toEqual([]);
    d.write(scenario({ iconic: true }));
    const min = await emitted("restore_window", { hwnd: 1001 });
    expect(min.r.isError).toBe(false);
    expect(min.r.structured.was_minimized).toBe(true);
    expect(min.fx).toEqual([{ type: "restore", hwnd: "1001" }]);
    const background = { ...scenario({ iconic: true }), foreground: null };
    d.write(background);
    const bg = await emitted("restore_window", { hwnd: 1001 });
    expect(bg.fx).toEqual([{ type: "restore", hwnd: "1001" }]);
    d.write(scenario());
  });
});

describe("audit of input attempts", () => {
  it("every attempt is audited with counts only; typed text and token never appear", async () => {
    const tok = await token("text");
    const typed = `pass ${CANARY} 😀`;
    await h.ok("send_text", { hwnd: 1001, text: typed, confirmation_token: tok });
    const refused = await h.call("send_text", { hwnd: 1001, text: `${CANARY}\u0000` });
    expect(refused.code).toBe("invalid_argument");
    await h.ok("send_key", { hwnd: 1001, key: "q", modifiers: ["ctrl"], hold_ms: 0 });
    const events = (await h.ok("get_audit_events", { limit: 100 })).events as Array<Record<string, unknown>>;
    const sent = events.find((e) => e.tool === "send_text" && e.outcome === "allow");
    expect(sent).toMatchObject({ action: "text", reason: "ok", pid: 4242 });
    expect((sent?.counters as Record<string, unknown> | undefined)?.chars).toBe(typed.length);
    expect(events.some((e) => e.tool === "send_text" && e.reason === "invalid_argument")).toBe(true);
    const key = events.find((e) => e.tool === "send_key");
    expect(key).toMatchObject({ action: "key", outcome: "allow" });
    // Every tool call made in this file is in the ring (newest first), one event per call.
    for (const tool of [
      "click_window",
      "double_click_window",
      "right_click_window",
      "hover_window",
      "scroll_window",
      "drag_window",
      "send_key_sequence",
      "close_window",
      "restore_window",
    ])
      expect(
        events.some((e) => e.tool === tool),
        tool,
      ).toBe(true);
    const everything = JSON.stringify(events) + h.stderr.join("");
    expect(everything).not.toContain(CANARY);
    expect(everything).not.toContain("😀");
    expect(everything).not.toContain("漢字");
    expect(everything).not.toContain(tok);
    // The canary did reach the simulated screen, so its absence above is not vacuous.
    expect(JSON.stringify(d.effectsLog())).toContain(CANARY);
  });
});

describe("text mode", () => {
  it("DESKTOP_AUTOMATION_TEXT_MODE=wm_char reaches the platform", async () => {
    const d2 = new FakeDesktop(scenario());
    const h2 = await serveFake(d2, {
      policy: filePolicy(),
      env: { DESKTOP_AUTOMATION_TEXT_MODE: "wm_char" },
    });
    try {
      await h2.ok("request_access", { hwnd: 1001 });
      const tok = String(
        (await h2.ok("request_confirmation", { hwnd: 1001, action_class: "text" })).token_id,
      );
      await h2.ok("send_text", { hwnd: 1001, text: "Zürich 😀", confirmation_token: tok });
      expect(d2.effectsLog().map(({ seq: _s, t: _t, ...e }) => e)).toEqual([
        { type: "text", hwnd: "1001", text: "Zürich 😀", mode: "wm_char" },
      ]);
    } finally {
      await h2.close();
    }
  });
});
