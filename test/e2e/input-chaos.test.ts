import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createFakePlatform } from "../../src/platforms/fake/index.js";
import { uiError } from "../../src/shared/errors.js";
import type { Platform } from "../../src/shared/platform.js";
import type { HandlerContext } from "../../src/workers/handlers.js";
import { inputHandlers } from "../../src/workers/input/handlers.js";
import { codeOf } from "../support/codes.js";
import { FakeDesktop, filePolicy, otherWindow, ruffleWindow, type ServerHarness } from "../support/mcp.js";
import { closeServersAfterAll, serveFake } from "../support/servers.js";

/**
 * Chaos between the steps of a gesture: the scenario is rewritten while a drag or a key
 * sequence runs (the test watches effects_log for the first press, then rewrites). Whatever
 * happens, every pressed button and key is released, in reverse order, and the call fails
 * with the code that names the change.
 */

type Effect = Record<string, unknown>;
type Args = Record<string, unknown>;

const other = (over: Args = {}): Args => otherWindow({ rect: [1200, 800, 1600, 1000], z: 1, ...over });

const scenario = (windows: Args[], foreground: number | null = 1001): Args => ({
  session: 1,
  foreground,
  windows,
  consent: { answer: "approve", delay_ms: 0 },
});
const calm = () => scenario([ruffleWindow(), other()]);

/** The four changes, each with the code the interrupted gesture must fail with. */
const CHANGES: Array<{ name: string; scenario: () => Args; code: string }> = [
  {
    name: "loses focus",
    scenario: () => scenario([ruffleWindow(), other()], 2002),
    code: "not_foreground",
  },
  {
    name: "moves",
    scenario: () => scenario([ruffleWindow({ rect: [150, 130, 974, 770] }), other()]),
    code: "target_changed",
  },
  {
    name: "is covered",
    scenario: () => scenario([ruffleWindow({ z: 1 }), other({ rect: [0, 0, 1920, 1080], z: 0 })]),
    code: "occluded",
  },
  {
    name: "is replaced by a new process instance",
    scenario: () => scenario([ruffleWindow({ pid: 4343, process_start: "2026-11-30T10:00:00Z" }), other()]),
    code: "target_changed",
  },
];

const strip = (fx: Effect[]) => fx.map(({ seq: _s, t: _t, ...e }) => e);

/** Polls effects_log until a line after `from` matches, then returns. */
async function waitForEffect(d: FakeDesktop, from: number, match: (e: Effect) => boolean, ms = 20_000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (d.effectsLog().slice(from).some(match)) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error("effect never appeared");
}

/**
 * Every key_up releases the most recently pressed key still down (reverse order) and nothing
 * is left pressed at the end; likewise for buttons.
 */
function expectBalanced(fx: Effect[]): void {
  const keys: unknown[] = [];
  const buttons: unknown[] = [];
  for (const e of fx) {
    if (e.type === "key_down") keys.push(e.key);
    if (e.type === "key_up") expect(keys.pop(), JSON.stringify(fx)).toBe(e.key);
    if (e.type === "button_down") buttons.push(e.button);
    if (e.type === "button_up") expect(buttons.pop(), JSON.stringify(fx)).toBe(e.button);
  }
  expect(keys, "keys left pressed").toEqual([]);
  expect(buttons, "buttons left pressed").toEqual([]);
}

/** Starts `name` and applies `change` as soon as an effect matching `trigger` was emitted. */
async function interrupt(
  h: ServerHarness,
  d: FakeDesktop,
  name: string,
  args: Args,
  trigger: (e: Effect) => boolean,
  change: () => Args,
) {
  const from = d.effectsLog().length;
  const call = h.call(name, args);
  await waitForEffect(d, from, trigger);
  d.write(change());
  const r = await call;
  return { r, fx: strip(d.effectsLog().slice(from)) };
}

closeServersAfterAll();
const start = (d: FakeDesktop, env: Record<string, string> = {}) =>
  serveFake(d, { via: "stdio", policy: filePolicy(), env });

describe("chaos between the legs of a drag and the steps of a key sequence (passive mode)", () => {
  let d: FakeDesktop;
  let h: ServerHarness;
  beforeAll(async () => {
    d = new FakeDesktop(calm());
    h = await start(d);
  });
  beforeEach(async () => {
    d.write(calm());
    // A target_changed revoked the grant; the kept decision renews it for the original instance.
    await h.ok("request_access", { hwnd: 1001 });
  });

  for (const c of CHANGES) {
    it(`drag: the window ${c.name} after the button went down → button_up, ${c.code}`, async () => {
      const tok = String((await h.ok("request_confirmation", { hwnd: 1001, action_class: "drag" })).token_id);
      // A slow input path (17 legs × ≥ 250 ms): the change lands mid-drag however slowly this
      // process is scheduled, not only when it reacts within the drag's normal ~850 ms.
      d.write({ ...calm(), input_delay_ms: 200 });
      const path = Array.from({ length: 16 }, (_, i) => ({ x: 300 + i * 10, y: 300 + i * 5 }));
      const { r, fx } = await interrupt(
        h,
        d,
        "drag_window",
        { hwnd: 1001, start_x: 290, start_y: 290, end_x: 500, end_y: 400, path, confirmation_token: tok },
        (e) => e.type === "button_down",
        c.scenario,
      );
      expect(r.code, JSON.stringify(r.structured)).toBe(c.code);
      expect(fx[0]).toEqual({ type: "move", x: 390, y: 390 });
      expect(fx[1]).toEqual({ type: "button_down", button: "left" });
      expect(fx.at(-1)).toEqual({ type: "button_up", button: "left" });
      // It stopped: fewer than the 17 leg moves, each at the original origin + (x, y).
      const legs = fx.slice(2, -1);
      expect(legs.length).toBeLessThan(17);
      legs.forEach((e, i) => {
        expect(e).toEqual({ type: "move", x: 100 + path[i].x, y: 100 + path[i].y });
      });
      expectBalanced(fx);
      // Only another process instance ends the grant; a moved window keeps it.
      const held = (await h.ok("get_access_state")).grants as unknown[];
      expect(held.length, "grants after the interruption").toBe(c.name.includes("replaced") ? 0 : 1);
    });
  }

  const steps = "abcdefghij".split("").map((key) => ({ key, modifiers: ["ctrl", "shift"] }));
  for (const c of CHANGES) {
    const relevant = c.name === "loses focus" || c.name.includes("replaced");
    it(`key sequence: the window ${c.name} between steps → ${relevant ? c.code : "keys go on to the focused window"}; all released in reverse`, async () => {
      const { r, fx } = await interrupt(
        h,
        d,
        "send_key_sequence",
        // 10 steps × ≥ 300 ms: room to make the change between steps on a loaded machine.
        { hwnd: 1001, keys: steps, hold_ms: 300 },
        (e) => e.type === "key_down" && e.key === "a",
        c.scenario,
      );
      expectBalanced(fx);
      expect(fx.slice(0, 3)).toEqual([
        { type: "key_down", key: "ctrl" },
        { type: "key_down", key: "shift" },
        { type: "key_down", key: "a" },
      ]);
      const pressed = fx.filter((e) => e.type === "key_down" && e.key !== "ctrl" && e.key !== "shift");
      if (relevant) {
        // Focus and identity are what keyboard input depends on: the sequence stops.
        expect(r.code, JSON.stringify(r.structured)).toBe(c.code);
        expect(pressed.length).toBeLessThan(10);
      } else {
        // Keys go to the verified foreground window wherever it is and whatever covers it.
        expect(r.isError, JSON.stringify(r.structured)).toBe(false);
        expect(pressed.map((e) => e.key)).toEqual(steps.map((s) => s.key));
      }
    });
  }

  it("a key held for hold_ms is released when the target loses focus, and the next step is not pressed", async () => {
    const { r, fx } = await interrupt(
      h,
      d,
      "send_key_sequence",
      // The focus change must land within the hold (the test sees key_down "a", then rewrites).
      { hwnd: 1001, keys: [{ key: "a", modifiers: ["alt"] }, "b", "c"], hold_ms: 1500 },
      (e) => e.type === "key_down" && e.key === "a",
      () => scenario([ruffleWindow(), other()], 2002),
    );
    expect(r.code).toBe("not_foreground");
    expect(fx).toEqual([
      { type: "key_down", key: "alt" },
      { type: "key_down", key: "a" },
      { type: "key_up", key: "a" },
      { type: "key_up", key: "alt" },
    ]);
  });
});

describe("DESKTOP_AUTOMATION_FOCUS_MODE=activate", () => {
  let d: FakeDesktop;
  let h: ServerHarness;
  const background = () => scenario([ruffleWindow({ z: 1 }), other({ z: 0 })], 2002);
  beforeAll(async () => {
    d = new FakeDesktop(background());
    h = await start(d, { DESKTOP_AUTOMATION_FOCUS_MODE: "activate" });
    await h.ok("request_access", { hwnd: 1001 });
  });
  beforeEach(() => d.write(background()));

  it("a background window gets an activate effect, then the action once it is in front", async () => {
    const { r, fx } = await interrupt(
      h,
      d,
      "click_window",
      { hwnd: 1001, x: 10, y: 20 },
      (e) => e.type === "activate",
      () => scenario([ruffleWindow({ z: 0 }), other({ z: 1 })], 1001),
    );
    expect(r.isError, JSON.stringify(r.structured)).toBe(false);
    expect(fx).toEqual([
      { type: "activate", hwnd: "1001" },
      { type: "move", x: 110, y: 120 },
      { type: "button_down", button: "left" },
      { type: "button_up", button: "left" },
    ]);
    // Already in front: no activate line at all.
    const from = d.effectsLog().length;
    await h.ok("send_key", { hwnd: 1001, key: "x", hold_ms: 0 });
    expect(strip(d.effectsLog().slice(from))).toEqual([
      { type: "key_down", key: "x" },
      { type: "key_up", key: "x" },
    ]);
  });

  it("a window that does not come forward: not_foreground after the activation attempt, nothing else emitted", async () => {
    const from = d.effectsLog().length;
    const started = Date.now();
    const r = await h.call("send_key", { hwnd: 1001, key: "x" });
    expect(r.code).toBe("not_foreground");
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900); // lower bound: it tried ~2 s
    expect(strip(d.effectsLog().slice(from))).toEqual([{ type: "activate", hwnd: "1001" }]);
  });

  it("close_window and restore_window never activate, even in activate mode", async () => {
    const tok = String((await h.ok("request_confirmation", { hwnd: 1001, action_class: "close" })).token_id);
    let from = d.effectsLog().length;
    await h.ok("close_window", { hwnd: 1001, confirmation_token: tok });
    expect(strip(d.effectsLog().slice(from))).toEqual([{ type: "close", hwnd: "1001" }]);
    d.write(scenario([ruffleWindow({ z: 1, iconic: true }), other({ z: 0 })], 2002));
    from = d.effectsLog().length;
    expect((await h.ok("restore_window", { hwnd: 1001 })).was_minimized).toBe(true);
    expect(strip(d.effectsLog().slice(from))).toEqual([{ type: "restore", hwnd: "1001" }]);
  });

  it("a call refused for its arguments or bounds does not activate the window", async () => {
    const from = d.effectsLog().length;
    for (const [name, args, code] of [
      ["click_window", { hwnd: 1001, x: 900, y: 10 }, "out_of_bounds"],
      ["hover_window", { hwnd: 1001, x: 10, y: 700, dwell_ms: 0 }, "out_of_bounds"],
      ["send_key", { hwnd: 1001, key: "f4", modifiers: ["alt"] }, "invalid_argument"],
      [
        "send_key_sequence",
        { hwnd: 1001, keys: ["a", { key: "tab", modifiers: ["alt"] }] },
        "invalid_argument",
      ],
    ] as Array<[string, Args, string]>) {
      const r = await h.call(name, args);
      expect(r.code, name).toBe(code);
    }
    const tok = String((await h.ok("request_confirmation", { hwnd: 1001, action_class: "drag" })).token_id);
    const drag = await h.call("drag_window", {
      hwnd: 1001,
      start_x: 10,
      start_y: 10,
      end_x: 20,
      end_y: 20,
      path: [{ x: 2000, y: 10 }],
      confirmation_token: tok,
    });
    expect(drag.code).toBe("out_of_bounds");
    expect(d.effectsLog().slice(from)).toEqual([]);
  });
});

describe("worker deadline during a long hold", () => {
  let deadlineCode: string | undefined;
  it("over stdio: the deadline passes while a key is held → key_up still emitted, the call fails", async () => {
    // The deadline is UIINSPECT_WORKER_DEADLINE_MS + hold_ms; activation (~1 s here) eats into it,
    // so the deadline falls inside the 3 s hold.
    const d = new FakeDesktop(scenario([ruffleWindow({ z: 1 }), other({ z: 0 })], 2002));
    const h = await start(d, {
      DESKTOP_AUTOMATION_FOCUS_MODE: "activate",
      UIINSPECT_WORKER_DEADLINE_MS: "500",
    });
    await h.ok("request_access", { hwnd: 1001 });
    const from = d.effectsLog().length;
    const call = h.call("send_key", { hwnd: 1001, key: "a", modifiers: ["shift"], hold_ms: 3000 });
    await waitForEffect(d, from, (e) => e.type === "activate");
    // Key down between 0.5 s (else the hold would end before the deadline) and 2 s (activation gives up),
    // both counted from the activation at the latest (the deadline started before it): waiting 700 ms
    // after seeing it keeps the first bound whatever the delays, and leaves ~1.3 s for this write and
    // the worker's next foreground poll to beat the second.
    await new Promise((r) => setTimeout(r, 700));
    d.write(scenario([ruffleWindow({ z: 0 }), other({ z: 1 })], 1001));
    const r = await call;
    const fx = strip(d.effectsLog().slice(from));
    expect(fx).toEqual([
      { type: "activate", hwnd: "1001" },
      { type: "key_down", key: "shift" },
      { type: "key_down", key: "a" },
      { type: "key_up", key: "a" },
      { type: "key_up", key: "shift" },
    ]);
    deadlineCode = r.code;
    expect(r.code).toBe("worker_timeout");
    // The worker answered (it was not killed): the input worker shows no timeout teardown.
    const health = await h.ok("health_check");
    const input = (health.workers as Array<{ kind: string; timeouts: number }>).find(
      (w) => w.kind === "input",
    );
    expect(input?.timeouts).toBe(0);
    // A long drag (150 ms settle + 17 legs × 50 ms ≈ 1 s) gets its waits on top of the 500 ms.
    const tok = String((await h.ok("request_confirmation", { hwnd: 1001, action_class: "drag" })).token_id);
    const path = Array.from({ length: 16 }, (_, i) => ({ x: 300 + i * 10, y: 300 }));
    const drag = await h.call("drag_window", {
      hwnd: 1001,
      start_x: 290,
      start_y: 300,
      end_x: 500,
      end_y: 300,
      path,
      confirmation_token: tok,
    });
    expect(drag.structured, JSON.stringify(drag.structured)).toMatchObject({ legs: 17 });
  });

  // The supervisor's deadline reaches the worker as a deadline cancel, answered worker_timeout.
  it("over stdio: a deadline is reported as worker_timeout, not cancelled", () => {
    expect(deadlineCode).toBe("worker_timeout");
  });

  describe("in the worker (handler + fake platform, in process; deadline = an abort with worker_timeout)", () => {
    let d: FakeDesktop;
    let platform: Platform;
    beforeAll(() => {
      d = new FakeDesktop(calm());
      platform = createFakePlatform({ scenarioPath: d.path, workerKind: "input" });
    });
    const target = {
      hwnd: "1001",
      instance: {
        pid: 4242,
        start_time: "2026-11-30T08:00:00.000Z",
        exe_path: "C:\\Program Files\\ruffle\\bin\\ruffle.exe",
        session: "1",
      },
    };
    function ctx(p: Platform, abortAfterMs: number): HandlerContext {
      const ac = new AbortController();
      setTimeout(() => ac.abort(uiError("worker_timeout")), abortAfterMs).unref();
      return {
        signal: ac.signal,
        deadline: Date.now() + abortAfterMs,
        init: { kind: "input", platform: "fake", fake_desktop: d.path, log_level: "warn" },
        platform: p,
      };
    }
    it("keys: a 5 s hold aborted at the deadline releases key then modifiers", async () => {
      const keys = inputHandlers["input.keys"];
      if (!keys) throw new Error("no handler");
      const from = d.effectsLog().length;
      const code = await codeOf(
        keys(
          {
            target,
            steps: [{ key: "a", modifiers: ["ctrl", "alt"], hold_ms: 5000 }],
            focus_mode: "passive",
          },
          ctx(platform, 200),
        ),
      );
      expect(code).toBe("worker_timeout");
      expect(strip(d.effectsLog().slice(from))).toEqual([
        { type: "key_down", key: "ctrl" },
        { type: "key_down", key: "alt" },
        { type: "key_down", key: "a" },
        { type: "key_up", key: "a" },
        { type: "key_up", key: "alt" },
        { type: "key_up", key: "ctrl" },
      ]);
    });

    it("drag: aborted between legs releases the button", async () => {
      const drag = inputHandlers["input.drag"];
      if (!drag) throw new Error("no handler");
      const from = d.effectsLog().length;
      const points = Array.from({ length: 18 }, (_, i) => ({ x: 10 + i * 10, y: 10 }));
      // The abort must fall after check, move, 150 ms settle, check and button_down, and before the
      // drag ends. Its waits alone (150 ms + 17 legs × 50 ms) keep it running past 1 s, so an abort
      // due at 800 ms always lands inside it and leaves ~650 ms for the steps before button_down.
      const code = await codeOf(drag({ target, points, focus_mode: "passive" }, ctx(platform, 800)));
      expect(code).toBe("worker_timeout");
      const fx = strip(d.effectsLog().slice(from));
      expect(fx[1]).toEqual({ type: "button_down", button: "left" });
      expect(fx.at(-1)).toEqual({ type: "button_up", button: "left" });
      expect(fx.length).toBeLessThan(20);
      expectBalanced(fx);
    });

    it("text is re-verified before every character: focus lost after the third stops typing", async () => {
      const text = inputHandlers["input.text"];
      if (!text) throw new Error("no handler");
      let gates = 0;
      const typing: Platform = {
        ...platform,
        input: {
          moveTo: (x, y) => platform.input.moveTo(x, y),
          buttonDown: (b) => platform.input.buttonDown(b),
          buttonUp: (b) => platform.input.buttonUp(b),
          wheel: (n) => platform.input.wheel(n),
          keyDown: (k) => platform.input.keyDown(k),
          keyUp: (k) => platform.input.keyUp(k),
          typeText: (hw, t, m, beforeEachKey) =>
            platform.input.typeText(hw, t, m, async () => {
              gates += 1;
              // Three characters typed; another window takes the focus before the fourth.
              if (gates === 4) d.write(scenario([ruffleWindow(), other()], 2002));
              return beforeEachKey?.();
            }),
        },
      };
      const from = d.effectsLog().length;
      const typed = "0123456789abcdef".repeat(256);
      const code = await codeOf(
        text({ target, text: typed, mode: "sendinput", focus_mode: "passive" }, ctx(typing, 10_000)),
      );
      d.write(calm());
      expect(code).toBe("not_foreground");
      const fx = strip(d.effectsLog().slice(from));
      expect(fx.map((e) => e.text)).toEqual([typed.slice(0, 3)]);
    });

    it("a click whose window moves during the 150 ms settle is not pressed", async () => {
      const pointer = inputHandlers["input.pointer"];
      if (!pointer) throw new Error("no handler");
      const moving: Platform = {
        ...platform,
        input: {
          moveTo: async (x, y) => {
            await platform.input.moveTo(x, y);
            d.write(scenario([ruffleWindow({ rect: [300, 300, 1124, 940] }), other()]));
          },
          buttonDown: (b) => platform.input.buttonDown(b),
          buttonUp: (b) => platform.input.buttonUp(b),
          wheel: (n) => platform.input.wheel(n),
          keyDown: (k) => platform.input.keyDown(k),
          keyUp: (k) => platform.input.keyUp(k),
          typeText: (hw, t, m) => platform.input.typeText(hw, t, m),
        },
      };
      for (const kind of ["click", "double_click", "right_click", "scroll"] as const) {
        d.write(calm());
        const from = d.effectsLog().length;
        const code = await codeOf(
          pointer(
            {
              target,
              kind,
              x: 50,
              y: 50,
              dwell_ms: 0,
              notches: 1,
              focus_mode: "passive",
              prove_delivery: false,
            },
            ctx(moving, 10_000),
          ),
        );
        expect(code, kind).toBe("target_changed");
        expect(strip(d.effectsLog().slice(from))).toEqual([{ type: "move", x: 150, y: 150 }]);
      }
      d.write(calm());
    });

    it("a release that fails does not stop the other releases", async () => {
      const keys = inputHandlers["input.keys"];
      if (!keys) throw new Error("no handler");
      let failed = false;
      const flaky: Platform = {
        ...platform,
        input: {
          moveTo: (x, y) => platform.input.moveTo(x, y),
          buttonDown: (b) => platform.input.buttonDown(b),
          buttonUp: (b) => platform.input.buttonUp(b),
          wheel: (n) => platform.input.wheel(n),
          keyDown: (k) => platform.input.keyDown(k),
          typeText: (h, t, m) => platform.input.typeText(h, t, m),
          keyUp: async (k) => {
            if (k === "a" && !failed) {
              failed = true;
              throw uiError("platform_unavailable");
            }
            await platform.input.keyUp(k);
          },
        },
      };
      const from = d.effectsLog().length;
      const code = await codeOf(
        keys(
          { target, steps: [{ key: "a", modifiers: ["ctrl", "shift"], hold_ms: 0 }], focus_mode: "passive" },
          ctx(flaky, 10_000),
        ),
      );
      expect(code).toBe("platform_unavailable");
      expect(strip(d.effectsLog().slice(from))).toEqual([
        { type: "key_down", key: "ctrl" },
        { type: "key_down", key: "shift" },
        { type: "key_down", key: "a" },
        { type: "key_up", key: "shift" },
        { type: "key_up", key: "ctrl" },
      ]);
    });
  });
});
