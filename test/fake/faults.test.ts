import { afterEach, describe, expect, it } from "vitest";
import type { FaultKind } from "../../src/platforms/fake/scenario.js";
import { clone, type Fixture, fixture, platform } from "./helpers.js";

/**
 * Which calls reach a window's fault. The real faults (throw/exit/hang) kill the thread and are
 * exercised by the worker crash tests; here a recording handler stands in for them.
 */

let f: Fixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});

class Fired extends Error {
  constructor(readonly kind: FaultKind) {
    super("fired");
  }
}

function setup(kind: "capture" | "input" | "uia") {
  f = fixture();
  const sc = clone(f.scenario);
  sc.windows[1].faults = { [kind]: "hang" }; // Notepad, hwnd 2002, rect [900,150,1600,800]
  f.write(sc);
  const fired: FaultKind[] = [];
  const p = platform(f, kind, async (k) => {
    fired.push(k);
    throw new Fired(k);
  });
  return { p, fired };
}

async function fires(call: () => Promise<unknown>): Promise<boolean> {
  try {
    await call();
    return false;
  } catch (e) {
    if (e instanceof Fired) return true;
    throw e;
  }
}

describe("fault targeting", () => {
  it("capture worker: a capture meeting the window faults, others do not", async () => {
    const { p, fired } = setup("capture");
    expect(await fires(() => p.desktop.virtualScreen())).toBe(false);
    expect(await fires(() => p.desktop.health())).toBe(false);
    expect(await fires(() => p.capture.captureScreen([100, 100, 200, 200]))).toBe(false);
    expect(await fires(() => p.capture.captureScreen([1500, 700, 1700, 900]))).toBe(true);
    expect(await fires(() => p.desktop.getWindow("1001"))).toBe(false);
    expect(await fires(() => p.desktop.getWindow("2002"))).toBe(true);
    expect(await fires(() => p.desktop.listWindows())).toBe(true); // enumeration touches every window
    const ruffle = {
      pid: 4242,
      start_time: "2026-11-30T08:00:00.000Z",
      exe_path: "C:\\Program Files\\ruffle\\bin\\ruffle.exe",
      session: "1",
    };
    expect(await fires(() => p.desktop.isInstanceAlive(ruffle))).toBe(false);
    expect(await fires(() => p.desktop.isInstanceAlive({ ...ruffle, pid: 5150 }))).toBe(true);
    expect(fired).toEqual(["hang", "hang", "hang", "hang"]);
    // The fault belongs to the worker kind: an "input" instance over the same file is unaffected.
    const other = platform(f!, "input", async () => {
      throw new Fired("hang");
    });
    expect(await fires(() => other.capture.captureScreen([1500, 700, 1700, 900]))).toBe(false);
    expect(await fires(() => other.desktop.getWindow("2002"))).toBe(false);
    expect(await fires(() => other.desktop.listWindows())).toBe(false);
  });

  it("input worker: the window under the point/cursor, the foreground for keys, the named for text", async () => {
    const { p } = setup("input");
    expect(await fires(() => p.input.moveTo(150, 150))).toBe(false);
    expect(await fires(() => p.input.buttonDown("left"))).toBe(false);
    expect(await fires(() => p.input.moveTo(1000, 400))).toBe(true);
    expect(f!.effects().map((e) => e.type)).toEqual(["move", "button_down"]);
    expect(await fires(() => p.input.keyDown("a"))).toBe(false);
    expect(await fires(() => p.input.typeText("2002", "x", "sendinput"))).toBe(true);
    const sc = clone(f!.scenario);
    sc.windows[1].faults = { input: "exit" };
    sc.foreground = 2002;
    f!.write(sc);
    expect(await fires(() => p.input.keyDown("a"))).toBe(true);
    expect(await fires(() => p.desktop.closeWindow("2002"))).toBe(true);
  });

  it("uia worker: opening or using a session of the window faults", async () => {
    const { p } = setup("uia");
    expect(await fires(() => p.desktop.listWindows())).toBe(true);
    const all = await platform(f!, "other").desktop.listWindows();
    const w = all.find((x) => x.hwnd === "2002")!;
    expect(await fires(() => p.accessibility.openSession(w))).toBe(true);
    const other = all.find((x) => x.hwnd === "1001")!;
    const s = await p.accessibility.openSession(other);
    expect(await fires(() => s.root())).toBe(false);
  });
});
