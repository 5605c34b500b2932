import { afterEach, describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
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

describe("desktop port", () => {
  it("lists windows topmost first with WindowInfo facts and a normalized instance", async () => {
    f = fixture();
    const p = platform(f);
    const ws = await p.desktop.listWindows();
    expect(ws.map((w) => w.hwnd)).toEqual(["1001", "2002", "3003"]);
    expect(ws[0]).toEqual({
      hwnd: "1001",
      title: "Ruffle - game.swf",
      window_class: "RuffleWindow",
      pid: 4242,
      instance: {
        pid: 4242,
        start_time: "2026-11-30T08:00:00.000Z",
        exe_path: "C:\\Program Files\\ruffle\\bin\\ruffle.exe",
        session: "1",
      },
      rect: [100, 100, 924, 740],
      visible: true,
      iconic: false,
      foreground: true,
      on_top: false,
      z: 0,
    });
    expect(ws[1].foreground).toBe(false);
    expect(ws[1].instance?.start_time).toBe("2026-11-30T08:05:00.250Z");
  });

  it("normalizes process_start given with an offset or as epoch milliseconds", async () => {
    f = fixture();
    const p = platform(f);
    const s = clone(f.scenario);
    s.windows[0].process_start = "2026-11-30T09:00:00+01:00";
    s.windows[1].process_start = Date.UTC(2026, 10, 30, 8, 5, 0, 250);
    f.write(s);
    const ws = await p.desktop.listWindows();
    expect(ws[0].instance?.start_time).toBe("2026-11-30T08:00:00.000Z");
    expect(ws[1].instance?.start_time).toBe("2026-11-30T08:05:00.250Z");
  });

  it("follows z changes, ties by file order, and reports z as the stacking position", async () => {
    f = fixture();
    const p = platform(f);
    const s = clone(f.scenario);
    s.windows[0].z = 7;
    s.windows[1].z = 3;
    s.windows[2].z = 3;
    s.windows[2].visible = false;
    s.windows[1].iconic = true;
    s.windows[1].on_top = true;
    s.foreground = null;
    f.write(s);
    const ws = await p.desktop.listWindows();
    expect(ws.map((w) => [w.hwnd, w.z])).toEqual([
      ["2002", 0],
      ["3003", 1],
      ["1001", 2],
    ]);
    expect(ws.find((w) => w.hwnd === "3003")?.visible).toBe(false);
    expect(ws[0].iconic).toBe(true);
    expect(ws[0].on_top).toBe(true);
    expect(ws.some((w) => w.foreground)).toBe(false);
    expect((await p.desktop.getWindow("1001"))?.z).toBe(2);
  });

  it("getWindow finds a window or returns null, and sees it disappear", async () => {
    f = fixture();
    const p = platform(f);
    expect((await p.desktop.getWindow("2002"))?.title).toBe("Notepad - notes.txt");
    expect(await p.desktop.getWindow("999")).toBeNull();
    expect(await p.desktop.getWindow("not-a-number")).toBeNull();
    const s = clone(f.scenario);
    s.windows = s.windows.filter((w) => w.hwnd !== 2002);
    f.write(s);
    expect(await p.desktop.getWindow("2002")).toBeNull();
  });

  it("isInstanceAlive needs the same pid, start time, path and session", async () => {
    f = fixture();
    const p = platform(f);
    const w = (await p.desktop.getWindow("1001"))!;
    const inst = w.instance!;
    expect(await p.desktop.isInstanceAlive(inst)).toBe(true);
    expect(
      await p.desktop.isInstanceAlive({ ...inst, exe_path: "c:/program files/ruffle/bin/RUFFLE.EXE" }),
    ).toBe(true);
    expect(await p.desktop.isInstanceAlive({ ...inst, pid: 4243 })).toBe(false);
    expect(await p.desktop.isInstanceAlive({ ...inst, start_time: "2026-11-30T08:00:00.001Z" })).toBe(false);
    expect(await p.desktop.isInstanceAlive({ ...inst, exe_path: "C:\\evil\\ruffle.exe" })).toBe(false);
    expect(await p.desktop.isInstanceAlive({ ...inst, session: "2" })).toBe(false);
    // PID reuse: same pid, new start time.
    const s = clone(f.scenario);
    s.windows[0].process_start = "2026-11-30T09:00:00Z";
    f.write(s);
    expect(await p.desktop.isInstanceAlive(inst)).toBe(false);
    // The window closed but another window of the same instance remains.
    const s2 = clone(f.scenario);
    s2.windows[1] = {
      ...s2.windows[1],
      pid: 4242,
      process_start: "2026-11-30T08:00:00.000+00:00",
      process_path: s2.windows[0].process_path,
    };
    s2.windows.splice(0, 1);
    f.write(s2);
    expect(await p.desktop.isInstanceAlive(inst)).toBe(true);
  });

  it("virtual screen and health", async () => {
    f = fixture();
    const p = platform(f);
    expect(await p.desktop.virtualScreen()).toEqual([0, 0, 1920, 1080]);
    f.write({ ...clone(f.scenario), virtual_screen: [-1280, 0, 1920, 1080] });
    expect(await p.desktop.virtualScreen()).toEqual([-1280, 0, 1920, 1080]);
    const h = await p.desktop.health();
    expect(h.platform).toBe("fake");
    expect(h.dpi_awareness).toBe("per_monitor_v2 (simulated)");
    expect(h.scenario_loaded).toBe(true);
    expect(p.desktop.platform).toBe("fake");
  });

  it("without a good scenario: health still answers, everything else is platform_unavailable", async () => {
    f = fixture();
    const p = platform({ ...f, file: `${f.file}.missing` });
    expect((await p.desktop.health()).scenario_loaded).toBe(false);
    expect(await code(p.desktop.listWindows())).toBe("platform_unavailable");
    expect(await code(p.capture.captureScreen([0, 0, 10, 10]))).toBe("platform_unavailable");
    expect(await code(p.input.moveTo(1, 1))).toBe("platform_unavailable");
  });

  it("restore/activate/close append effects lines and leave the scenario alone", async () => {
    f = fixture();
    const p = platform(f);
    await p.desktop.restoreWindow("2002");
    await p.desktop.activateWindow("2002");
    await p.desktop.closeWindow("3003");
    expect(await code(p.desktop.closeWindow("4444"))).toBe("target_gone");
    const e = f.effects();
    expect(e.map((x) => [x.type, x.hwnd])).toEqual([
      ["restore", "2002"],
      ["activate", "2002"],
      ["close", "3003"],
    ]);
    expect((await p.desktop.listWindows()).length).toBe(3);
    expect((await p.desktop.getWindow("1001"))?.foreground).toBe(true);
  });
});
