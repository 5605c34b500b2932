import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Rect } from "../../src/shared/geometry.js";
import { type Platform, type RawImage, rowStride } from "../../src/shared/platform.js";
import { PngFrame } from "../../src/workers/capture/frames.js";
import {
  parseXwd,
  startApp,
  startSession,
  waitFor,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
  xwdRootRaw,
} from "./support.js";

type Root = ReturnType<typeof parseXwd>;

function sameAsRoot(img: RawImage, rect: Rect, root: Root): number {
  let diffs = 0;
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      const sx = rect[0] + x;
      const sy = rect[1] + y;
      const d = y * rowStride(img) + x * img.channels;
      const inside = sx >= 0 && sy >= 0 && sx < root.width && sy < root.height;
      for (let c = 0; c < img.channels; c++) {
        const want = inside ? root.rgba[(sy * root.width + sx) * 4 + c]! : c === 3 ? 255 : 0;
        if (img.data[d + c] !== want) diffs++;
      }
    }
  }
  return diffs;
}

/** Whether two root captures hold the same pixels inside `rect` (clipped to the screen). */
function sameRegion(a: Root, b: Root, rect: Rect): boolean {
  for (let y = Math.max(0, rect[1]); y < Math.min(a.height, rect[3]); y++) {
    const from = (y * a.width + Math.max(0, rect[0])) * 4;
    const to = (y * a.width + Math.min(a.width, rect[2])) * 4;
    for (let i = from; i < to; i++) if (a.rgba[i] !== b.rgba[i]) return false;
  }
  return true;
}

/**
 * Captures `rect` with `capture` between two independent xwd root captures and expects it to equal
 * one of them exactly. Something on screen may repaint meanwhile (a focus change, a frame, a caret):
 * then the two xwd captures differ there and the attempt is repeated (bounded). A mismatch while the
 * screen stood still is a wrong capture: it fails after a second occurrence (a repaint that changed
 * and changed back inside one bracket does not repeat).
 */
async function expectSameAsRoot(rect: Rect, capture: () => Promise<RawImage>): Promise<RawImage> {
  let still = 0;
  let last = "";
  for (let attempt = 0; attempt < 8; attempt++) {
    const beforeRaw = xwdRootRaw();
    const img = await capture();
    const afterRaw = xwdRootRaw();
    const before = parseXwd(beforeRaw);
    const diffs = sameAsRoot(img, rect, before);
    if (diffs === 0) return img;
    const after = parseXwd(afterRaw);
    if (sameAsRoot(img, rect, after) === 0) return img;
    if (sameRegion(before, after, rect)) {
      still++;
      last = `${diffs} channel values differ from the root while the screen stood still`;
      if (still >= 2) break;
    } else {
      last = `${diffs} channel values differ; the screen changed during the capture`;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(last);
}

describe.skipIf(!X11_AVAILABLE)("x11 capture port against an independent xwd root capture", () => {
  let session: X11Session;
  let p: Platform;

  beforeAll(async () => {
    session = startSession();
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "capture" });
    startApp("xterm", ["-T", "uix cap term", "-geometry", "70x20+30+40", "-bg", "#203040", "-fg", "#f0e0a0"]);
    startApp("zenity", ["--info", "--title=uix cap info", "--text=pixels"]);
    const term = await waitForWindow(p, "uix cap term");
    await waitForWindow(p, "uix cap info");
    // zenity maps last and openbox focuses it around now: put the xterm in front and wait until the
    // window manager agrees, so no focus change (frame and cursor repaint) is still on its way.
    await p.desktop.activateWindow(term.hwnd);
    await waitFor("xterm in front", async () => (await p.desktop.getWindow(term.hwnd))?.foreground);
  }, 90_000);

  afterAll(async () => {
    await p?.dispose();
    session?.stop();
  });

  it("returns exactly the root window's pixels for a window rect (XShm path)", async () => {
    const listed = (await p.desktop.listWindows()).find((w) => w.title === "uix cap term")!;
    const term = await waitFor("xterm in front", async () => {
      const w = await p.desktop.getWindow(listed.hwnd);
      if (w?.foreground) return w;
      await p.desktop.activateWindow(listed.hwnd);
      return null;
    });
    const img = await expectSameAsRoot(term.rect, () => p.capture.captureScreen(term.rect));
    // Packed RGB: the PNG encoder's input as it is.
    expect(img.channels).toBe(3);
    expect(img.data.byteLength).toBe(img.width * img.height * 3);
    expect(img.width).toBe(term.rect[2] - term.rect[0]);
    // The xterm background colour is in there (not an all-black image).
    let bg = 0;
    for (let i = 0; i < img.data.length; i += 3) {
      if (img.data[i] === 0x20 && img.data[i + 1] === 0x30 && img.data[i + 2] === 0x40) bg++;
    }
    expect(bg).toBeGreaterThan(1000);
    // The same through the port class directly, to see which path ran.
    const { XConnection } = await import("../../src/platforms/x11/xconn.js");
    const { X11Capture } = await import("../../src/platforms/x11/capture.js");
    const x = XConnection.open();
    try {
      const cap = new X11Capture(x);
      await expectSameAsRoot(term.rect, () => cap.captureScreen(term.rect));
      expect(cap.lastMethod).toBe("xshm");
    } finally {
      x.close();
    }
  });

  it("clips to the screen: what lies outside is black", async () => {
    const rect: Rect = [1200, 750, 1400, 900];
    await expectSameAsRoot(rect, () => p.capture.captureScreen(rect));
    const off: Rect = [-300, -300, -100, -100];
    const black = await p.capture.captureScreen(off);
    expect(black.data.every((v) => v === 0)).toBe(true);
  });

  it("asks no root size before an XShm read of a rect wholly on screen; one half off it is clipped and XShm stays", async () => {
    const { XConnection } = await import("../../src/platforms/x11/xconn.js");
    const { X11Capture } = await import("../../src/platforms/x11/capture.js");
    const x = XConnection.open();
    const asked: number[] = [];
    const target = x as unknown as Record<string, (...a: unknown[]) => unknown>;
    const getGeometry = target.getGeometry as (...a: unknown[]) => unknown;
    target.getGeometry = (...a: unknown[]) => {
      asked.push(Number(a[0]));
      return getGeometry.apply(x, a);
    };
    try {
      const cap = new X11Capture(x);
      const on: Rect = [20, 30, 420, 330];
      await expectSameAsRoot(on, () => cap.captureScreen(on));
      expect(cap.lastMethod).toBe("xshm");
      // The server's own bounds check of that read stands for the size: nothing asked before it.
      expect(asked).toEqual([]);
      const g = getGeometry.call(x, x.root) as { resolve(): { width: number; height: number } };
      const { width, height } = g.resolve();
      const half: Rect = [width - 150, height - 100, width + 150, height + 100];
      const clipped = await expectSameAsRoot(half, () => cap.captureScreen(half));
      // The whole rect failed the server's check: the root's size was asked and the read clipped.
      expect(asked.length).toBeGreaterThan(0);
      expect(asked.every((w) => w === x.root)).toBe(true);
      expect(cap.lastMethod).toBe("xshm");
      expect(clipped.data[(clipped.width * clipped.height - 1) * 3]).toBe(0);
      asked.length = 0;
      await expectSameAsRoot(on, () => cap.captureScreen(on));
      expect(cap.lastMethod).toBe("xshm");
      expect(asked).toEqual([]);
    } finally {
      delete target.getGeometry;
      x.close();
    }
  });

  it("gives the same pixels through the XGetImage fallback", async () => {
    process.env.UIINSPECT_X11_NO_SHM = "1";
    const { XConnection } = await import("../../src/platforms/x11/xconn.js");
    const { X11Capture } = await import("../../src/platforms/x11/capture.js");
    const x = XConnection.open();
    try {
      const cap = new X11Capture(x);
      const rect: Rect = [10, 10, 650, 490];
      await expectSameAsRoot(rect, () => cap.captureScreen(rect));
      expect(cap.lastMethod).toBe("xgetimage");
    } finally {
      delete process.env.UIINSPECT_X11_NO_SHM;
      x.close();
    }
  });

  it("writes into the caller's PNG frame: the same pixels, the filter bytes untouched, no leftovers", async () => {
    const { XConnection } = await import("../../src/platforms/x11/xconn.js");
    const { X11Capture } = await import("../../src/platforms/x11/capture.js");
    const filterBytes = (f: PngFrame) => {
      const out: number[] = [];
      for (let y = 0; y < f.height; y++) out.push(f.rows[y * f.target.stride] ?? -1);
      return out;
    };
    for (const noShm of [false, true]) {
      if (noShm) process.env.UIINSPECT_X11_NO_SHM = "1";
      const x = XConnection.open();
      try {
        const cap = new X11Capture(x);
        const on: Rect = [20, 30, 420, 330];
        const f = new PngFrame(400, 300);
        const img = await expectSameAsRoot(on, () => cap.captureScreen(on, f.target));
        expect(cap.lastMethod).toBe(noShm ? "xgetimage" : "xshm");
        expect(f.holds(img)).toBe(true);
        expect(filterBytes(f).every((b) => b === 0)).toBe(true);
        // The same frame again, for a rect half off screen: what the last shot wrote there is gone.
        const g = x.getGeometry(x.root).resolve();
        const half: Rect = [g.width - 200, 100, g.width + 200, 400];
        const again = await expectSameAsRoot(half, () => cap.captureScreen(half, f.target));
        expect(f.holds(again)).toBe(true);
        expect(filterBytes(f).every((b) => b === 0)).toBe(true);
        // Through the platform, as the capture worker calls it.
        if (!noShm) {
          const via = await expectSameAsRoot(on, () => p.capture.captureScreen(on, f.target));
          expect(f.holds(via)).toBe(true);
        }
        // A frame of another size is not written: the port returns a packed frame of its own.
        const other = new PngFrame(10, 10);
        const own = await cap.captureScreen(on, other.target);
        expect(other.holds(own)).toBe(false);
        expect(own.stride).toBeUndefined();
        expect(other.rows.every((v) => v === 0)).toBe(true);
      } finally {
        delete process.env.UIINSPECT_X11_NO_SHM;
        x.close();
      }
    }
  });
});
