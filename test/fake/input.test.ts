import { afterEach, describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
import { clone, type Fixture, fixture, platform } from "./helpers.js";

let f: Fixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});

describe("input port", () => {
  it("appends one line per call, in order, visible right after each call", async () => {
    f = fixture();
    const p = platform(f, "input");
    const before = Date.now();
    await p.input.moveTo(150, 170);
    expect(f.effects()).toHaveLength(1);
    await p.input.buttonDown("left");
    await p.input.buttonUp("left");
    await p.input.wheel(-3);
    await p.input.keyDown("ctrl");
    await p.input.keyDown("a");
    await p.input.keyUp("a");
    await p.input.keyUp("ctrl");
    await p.input.typeText("2002", "héllo 😀", "wm_char");
    const e = f.effects();
    const strip = e.map(({ seq: _s, t: _t, ...rest }) => rest);
    expect(strip).toEqual([
      { type: "move", x: 150, y: 170 },
      { type: "button_down", button: "left" },
      { type: "button_up", button: "left" },
      { type: "wheel", notches: -3 },
      { type: "key_down", key: "ctrl" },
      { type: "key_down", key: "a" },
      { type: "key_up", key: "a" },
      { type: "key_up", key: "ctrl" },
      { type: "text", hwnd: "2002", text: "héllo 😀", mode: "wm_char" },
    ]);
    const seqs = e.map((x) => x.seq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    for (const x of e) expect(x.t as number).toBeGreaterThanOrEqual(before);
  });

  it("typeText to a window that is gone is target_gone and emits nothing", async () => {
    f = fixture();
    const p = platform(f, "input");
    try {
      await p.input.typeText("9999", "x", "sendinput");
      expect.unreachable();
    } catch (e) {
      expect(isUiError(e) && e.code).toBe("target_gone");
    }
    expect(f.effects()).toEqual([]);
  });

  it("follows effects_log when the scenario changes it, creating folders; none set means no file", async () => {
    f = fixture();
    const p = platform(f, "input");
    const s = clone(f.scenario);
    s.effects_log = "sub/dir/e.jsonl";
    f.write(s);
    await p.input.moveTo(1, 2);
    const { readFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    expect(JSON.parse(readFileSync(join(f.dir, "sub/dir/e.jsonl"), "utf8").trim())).toMatchObject({
      type: "move",
      x: 1,
      y: 2,
    });
    s.effects_log = undefined;
    f.write(s);
    await p.input.moveTo(3, 4);
    expect(f.effects()).toEqual([]);
  });

  it("input_delay_ms: each event is logged first, then the call takes at least that long", async () => {
    f = fixture();
    const p = platform(f, "input");
    f.write({ ...clone(f.scenario), input_delay_ms: 120 });
    const started = Date.now();
    const moving = p.input.moveTo(5, 6);
    // Logged before the delay: a test watching effects_log sees the event while the call waits.
    await new Promise((r) => setTimeout(r, 40));
    expect(f.effects().map((e) => e.type)).toEqual(["move"]);
    await moving;
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);
  });
});
