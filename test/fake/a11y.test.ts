import { afterEach, describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
import type { A11yHandle, A11ySession, Platform } from "../../src/shared/platform.js";
import { clone, type Fixture, fixture, platform } from "./helpers.js";

let f: Fixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});

async function code(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return isUiError(e) ? e.code : "not-a-UiError";
  }
}

async function open(p: Platform, hwnd = "1001"): Promise<A11ySession> {
  const w = await p.desktop.getWindow(hwnd);
  return p.accessibility.openSession(w!);
}

async function byId(s: A11ySession, id: string): Promise<A11yHandle> {
  const stack = [await s.root()];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if ((await s.facts(n)).automation_id === id) return n;
    stack.push(...(await s.children(n)));
  }
  throw new Error(`no node ${id}`);
}

describe("accessibility port", () => {
  it("walks the tree with screen rects and node facts", async () => {
    f = fixture();
    const p = platform(f, "uia");
    const s = await open(p);
    const root = await s.root();
    const rf = await s.facts(root);
    expect(rf.role).toBe("window");
    expect(rf.rect).toEqual([100, 100, 924, 740]);
    const kids = await s.children(root);
    expect(kids).toHaveLength(5);
    expect(await s.facts(kids[0])).toEqual({
      role: "button",
      name: "Play",
      automation_id: "play",
      class_name: null,
      rect: [120, 160, 220, 190],
      enabled: true,
      offscreen: false,
      focused: false,
      is_password: false,
      patterns: ["invoke"],
      states: [],
    });
    const pw = await s.facts(kids[1]);
    expect(pw.is_password).toBe(true);
    const items = await s.children(kids[4]);
    expect((await s.facts(items[2])).enabled).toBe(false);
    expect(await s.children(items[0])).toEqual([]);
  });

  it("a window without a tree has a root element", async () => {
    f = fixture();
    const sc = clone(f.scenario);
    sc.windows[2].tree = undefined;
    f.write(sc);
    const p = platform(f, "uia");
    const s = await open(p, "3003");
    const root = await s.root();
    expect((await s.facts(root)).rect).toEqual([600, 500, 1300, 1000]);
    expect(await s.children(root)).toEqual([]);
  });

  it("act() needs the matching pattern and records the effect", async () => {
    f = fixture();
    const p = platform(f, "uia");
    const s = await open(p);
    await s.act(await byId(s, "play"), "invoke");
    await s.act(await byId(s, "sound"), "toggle");
    await s.act(await byId(s, "quality"), "expand");
    await s.act(await byId(s, "quality"), "collapse");
    await s.act(await byId(s, "level-2"), "select");
    await s.act(await byId(s, "password"), "set_value", "hunter2");
    expect(await code(s.act(await byId(s, "play"), "toggle"))).toBe("pattern_not_supported");
    expect(await code(s.act(await byId(s, "sound"), "invoke"))).toBe("pattern_not_supported");
    expect(await code(s.act(await byId(s, "levels"), "select"))).toBe("pattern_not_supported");
    expect(await code(s.act(await byId(s, "play"), "set_value", "x"))).toBe("pattern_not_supported");
    expect(await code(s.act(await byId(s, "level-3"), "select"))).toBe("pattern_not_supported"); // disabled
    expect(await code(s.act(await byId(s, "password"), "set_value"))).toBe("invalid_argument");
    const e = f.effects().map(({ seq: _s, t: _t, ...rest }) => rest);
    expect(e).toEqual([
      { type: "a11y", hwnd: "1001", action: "invoke", automation_id: "play" },
      { type: "a11y", hwnd: "1001", action: "toggle", automation_id: "sound" },
      { type: "a11y", hwnd: "1001", action: "expand", automation_id: "quality" },
      { type: "a11y", hwnd: "1001", action: "collapse", automation_id: "quality" },
      { type: "a11y", hwnd: "1001", action: "select", automation_id: "level-2" },
      { type: "a11y", hwnd: "1001", action: "set_value", automation_id: "password", value: "hunter2" },
    ]);
  });

  it("handles go stale when their node disappears or is replaced, and stay valid otherwise", async () => {
    f = fixture();
    const p = platform(f, "uia");
    const s = await open(p);
    const play = await byId(s, "play");
    const level2 = await byId(s, "level-2");
    const sc = clone(f.scenario);
    const tree = sc.windows[0].tree!;
    // Move the window and rename the button: same node (same automation id), new screen rect.
    sc.windows[0].rect = [200, 100, 1024, 740];
    tree.children![0].name = "Pause";
    f.write(sc);
    expect(await s.alive(play)).toBe(true);
    expect((await s.facts(play)).rect).toEqual([220, 160, 320, 190]);
    // Remove the last list item, then the list's second item: level-2's path now names level-3.
    tree.children![4].children!.splice(1, 1);
    f.write(sc);
    expect(await s.alive(level2)).toBe(false);
    expect(await code(s.facts(level2))).toBe("element_stale");
    expect(await code(s.act(level2, "select"))).toBe("element_stale");
    expect(await code(s.children(level2))).toBe("element_stale");
    // Remove the button entirely.
    tree.children!.splice(0, 1);
    f.write(sc);
    expect(await code(s.facts(play))).toBe("element_stale");
    expect(await s.alive(play)).toBe(false);
  });

  it("a session dies with its window or process instance", async () => {
    f = fixture();
    const p = platform(f, "uia");
    const s = await open(p);
    const root = await s.root();
    const sc = clone(f.scenario);
    sc.windows[0].process_start = "2026-11-30T09:00:00Z"; // same pid, new process
    f.write(sc);
    expect(await code(s.facts(root))).toBe("element_stale");
    expect(await code(s.root())).toBe("element_stale");
    sc.windows.splice(0, 1);
    f.write(sc);
    expect(await code(s.facts(root))).toBe("element_stale");
  });

  it("openSession checks the window and its instance", async () => {
    f = fixture();
    const p = platform(f, "uia");
    const w = (await p.desktop.getWindow("1001"))!;
    expect(await code(p.accessibility.openSession({ ...w, hwnd: "4040" }))).toBe("target_gone");
    expect(await code(p.accessibility.openSession({ ...w, instance: { ...w.instance!, pid: 1 } }))).toBe(
      "target_changed",
    );
    expect(await code(p.accessibility.openSession({ ...w, instance: null }))).toBe("target_changed");
  });

  it("dispose() makes every later call element_stale; handles of another session are rejected", async () => {
    f = fixture();
    const p = platform(f, "uia");
    const a = await open(p);
    const b = await open(p);
    const ra = await a.root();
    expect(await code(b.facts(ra))).toBe("element_stale");
    expect(await code(b.facts({ path: [] }))).toBe("element_stale");
    await a.dispose();
    expect(await code(a.facts(ra))).toBe("element_stale");
    expect(await code(a.root())).toBe("element_stale");
    expect(await code(a.children(ra))).toBe("element_stale");
    expect(await code(a.act(ra, "invoke"))).toBe("element_stale");
    expect(await code(a.alive(ra))).toBe("element_stale");
    expect((await b.facts(await b.root())).role).toBe("window");
  });

  it("a11y_delay_ms delays every node fetch (and nothing without it)", async () => {
    f = fixture();
    const p = platform(f, "uia");
    const settledWithinATick = async (q: Promise<unknown>): Promise<boolean> => {
      let done = false;
      q.then(
        () => {
          done = true;
        },
        () => {
          done = true;
        },
      );
      await new Promise((r) => setImmediate(r));
      const settled = done;
      await q;
      return settled;
    };
    let s = await open(p);
    let root = await s.root();
    expect(await settledWithinATick(s.children(root))).toBe(true);
    expect(await settledWithinATick(s.facts(root))).toBe(true);
    const sc = clone(f.scenario);
    sc.windows[0].a11y_delay_ms = 30;
    f.write(sc);
    s = await open(p);
    root = await s.root();
    expect(await settledWithinATick(s.children(root))).toBe(false);
    expect(await settledWithinATick(s.facts(root))).toBe(false);
  });
});
