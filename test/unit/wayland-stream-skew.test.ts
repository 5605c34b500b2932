import { describe, expect, it } from "vitest";
import type { PipewireFrames, StreamFrame } from "../../src/platforms/wayland/pipewireFrames.js";
import type { Binding } from "../../src/platforms/wayland/portalStreams.js";
import { PortalStreams } from "../../src/platforms/wayland/portalStreams.js";
import type { RgbaFrame } from "../../src/platforms/wayland/streamMatch.js";
import { codeOf } from "../support/codes.js";

/**
 * The point proof judges only the newest pair of frames, and waits briefly for the two streams
 * to agree after a redraw (they are composited and sent apart): a window that redrew in one
 * stream a frame before the other is proven once the other catches up; a real cover stays
 * refused.
 */

function frame(width: number, height: number, fill: (x: number, y: number) => number[]): RgbaFrame {
  const rgba = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) rgba.set(fill(x, y), (y * width + x) * 4);
  return { width, height, rgba };
}

/** A textured 120×90 window; `hover` changes its look (as a button's hover highlight does). */
const windowLook = (hover: boolean) =>
  frame(120, 90, (x, y) => [(x * 7 + (hover ? 90 : 0)) & 255, (y * 13) & 255, ((x ^ y) * 3) & 255, 255]);

function monitorWith(win: RgbaFrame, dx: number, dy: number, cover = false): RgbaFrame {
  return frame(400, 300, (mx, my) => {
    const [x, y] = [mx - dx, my - dy];
    if (cover && x >= 40 && y >= 30 && x < 80 && y < 60) return [200, 30, 30, 255];
    if (x >= 0 && y >= 0 && x < win.width && y < win.height) {
      const i = (y * win.width + x) * 4;
      return [win.rgba[i], win.rgba[i + 1], win.rgba[i + 2], 255];
    }
    return [90, 90, 90, 255];
  });
}

/** A stream whose frames the test pushes. */
class ScriptedStream {
  private seq = 0;
  private last: StreamFrame | null = null;
  private waiters: Array<(f: StreamFrame) => void> = [];
  readonly ended = false;
  /** How often a caller waited for a newer frame. */
  waits = 0;
  /** `ageMs`: how long ago the frame arrived (a picture that has stood a while). */
  push(f: RgbaFrame, ageMs = 0): void {
    this.last = { ...f, seq: ++this.seq, receivedAt: Date.now() - ageMs };
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w(this.last);
  }
  async frame(): Promise<StreamFrame> {
    if (!this.last) throw new Error("no frame");
    return this.last;
  }
  next(after: number, timeoutMs: number): Promise<StreamFrame> {
    this.waits += 1;
    if (this.last && this.last.seq > after) return Promise.resolve(this.last);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("timeout")), timeoutMs);
      this.waiters.push((f) => {
        clearTimeout(t);
        resolve(f);
      });
    });
  }
}

function binding(win: ScriptedStream, mon: ScriptedStream): Binding {
  return {
    hwnd: "w1",
    source: { streams: [], isOpen: true, onClosed: () => () => {} },
    session: null,
    windowStream: { node: 1, sourceType: "window" } as Binding["windowStream"],
    window: win as unknown as PipewireFrames,
    monitor: mon as unknown as PipewireFrames,
  };
}

describe("wayland point proof across stream skew", () => {
  it("a redraw shown in the window stream first is proven once the monitor stream shows it", async () => {
    const [win, mon] = [new ScriptedStream(), new ScriptedStream()];
    win.push(windowLook(true));
    mon.push(monitorWith(windowLook(false), 100, 80));
    setTimeout(() => mon.push(monitorWith(windowLook(true), 100, 80)), 120);
    const fact = await new PortalStreams().provePoint(binding(win, mon), 50, 40);
    expect(fact).toMatchObject({ dx: 100, dy: 80 });
  });

  it("the monitor stream's counterpart arriving a second after the window's redraw (a lagging reader) is waited for", async () => {
    const [win, mon] = [new ScriptedStream(), new ScriptedStream()];
    mon.push(monitorWith(windowLook(false), 100, 80), 5000);
    win.push(windowLook(true));
    setTimeout(() => mon.push(monitorWith(windowLook(true), 100, 80)), 1000);
    const fact = await new PortalStreams().provePoint(binding(win, mon), 50, 40);
    expect(fact).toMatchObject({ dx: 100, dy: 80 });
  });

  it("a cover both streams have shown for a while is refused without waiting for frames", async () => {
    const [win, mon] = [new ScriptedStream(), new ScriptedStream()];
    win.push(windowLook(false), 6000);
    mon.push(monitorWith(windowLook(false), 100, 80, true), 5000);
    expect(await codeOf(new PortalStreams().provePoint(binding(win, mon), 50, 40))).toBe("occluded");
    expect(win.waits + mon.waits).toBe(0);
  });

  it("a cover that stays is refused (occluded) once no newer frame agrees", async () => {
    const [win, mon] = [new ScriptedStream(), new ScriptedStream()];
    win.push(windowLook(false));
    mon.push(monitorWith(windowLook(false), 100, 80, true));
    // The monitor keeps sending frames, all still covered: each newer pair is judged, none agrees.
    const ticker = setInterval(() => mon.push(monitorWith(windowLook(false), 100, 80, true)), 100);
    try {
      expect(await codeOf(new PortalStreams().provePoint(binding(win, mon), 50, 40))).toBe("occluded");
    } finally {
      clearInterval(ticker);
    }
  });

  it("a cover is refused even when the streams go quiet (no frame to wait for)", async () => {
    const [win, mon] = [new ScriptedStream(), new ScriptedStream()];
    win.push(windowLook(false));
    mon.push(monitorWith(windowLook(false), 100, 80, true));
    expect(await codeOf(new PortalStreams().provePoint(binding(win, mon), 50, 40))).toBe("occluded");
  });
});
