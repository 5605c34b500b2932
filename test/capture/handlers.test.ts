import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFakePlatform, type ScenarioInput, writeScenarioFile } from "../../src/platforms/fake/index.js";
import { isUiError } from "../../src/shared/errors.js";
import type { Rect } from "../../src/shared/geometry.js";
import { instanceKey } from "../../src/shared/identity.js";
import type { FrameTarget, Platform, RawImage, ReadAhead, WindowInfo } from "../../src/shared/platform.js";
import { OPS, type OpArgs, type OpResult } from "../../src/shared/protocol.js";
import { captureHandlers } from "../../src/workers/capture/handlers.js";
import { GRID_RGB, toRgb } from "../../src/workers/capture/pixels.js";
import type { HandlerContext } from "../../src/workers/handlers.js";
import { scratchDir } from "../support/scratch.js";

const INSTANCE = {
  pid: 4242,
  start_time: "2026-11-30T08:00:00.000Z",
  exe_path: "C:\\Program Files\\ruffle\\bin\\ruffle.exe",
  session: "1",
};

function scenario(over: { rect?: Rect; iconic?: boolean; pid?: number; coverRect?: Rect | null } = {}) {
  const s: ScenarioInput = {
    session: 1,
    foreground: 2002, // the target is NOT in front: observation does not need it
    background: "#000000",
    windows: [
      {
        hwnd: 1001,
        title: "Ruffle - game.swf",
        class: "RuffleWindow",
        pid: over.pid ?? 4242,
        process_start: "2026-11-30T08:00:00Z",
        process_path: INSTANCE.exe_path,
        rect: over.rect ?? [100, 100, 500, 400],
        visible: true,
        iconic: over.iconic ?? false,
        z: 1,
        fill: "#3366cc",
        paint: [{ rect: [10, 10, 50, 50], fill: "#ff0000" }],
      },
      {
        hwnd: 2002,
        title: "Other",
        class: "Other",
        pid: 77,
        process_start: "2026-11-30T07:00:00Z",
        process_path: "C:\\other.exe",
        rect: over.coverRect ?? [600, 100, 900, 400],
        visible: true,
        iconic: false,
        z: 0,
        fill: "#ffffff",
      },
    ],
  };
  return s;
}

let dir: string;
let path: string;
let platform: Platform;

beforeEach(() => {
  dir = scratchDir("capture");
  path = join(dir, "desktop.json");
  writeScenarioFile(path, scenario());
  platform = createFakePlatform({ scenarioPath: path, workerKind: "capture" });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function ctxFor(p: Platform, signal: AbortSignal = new AbortController().signal): HandlerContext {
  return {
    signal,
    deadline: Date.now() + 10_000,
    init: { kind: "capture", platform: "fake", fake_desktop: path, log_level: "silent" },
    platform: p,
  };
}

/** Identity keys (hex, as ClientIdentity's) and the target instance's key. */
const CLIENT_A = "a0a0a0a0a0a0";
const KEY = instanceKey(INSTANCE);

function op<K extends "capture.tiles" | "capture.forget">(name: K) {
  const h = captureHandlers[name];
  if (!h) throw new Error(`no ${name} handler`);
  return h as NonNullable<(typeof captureHandlers)[K]>;
}

function captureArgs(over: Partial<OpArgs<"capture.region">> = {}) {
  return OPS["capture.region"].args.parse({
    target: { hwnd: "1001", instance: INSTANCE },
    region: [0, 0, 100, 80],
    masks: [],
    grid_spacing: null,
    output: "png",
    max_png_bytes: 1 << 20,
    compression_level: 6,
    ...over,
  });
}

function capture(
  over: Partial<OpArgs<"capture.region">> = {},
  p: Platform = platform,
  signal?: AbortSignal,
): Promise<OpResult<"capture.region">> {
  const h = captureHandlers["capture.region"];
  if (!h) throw new Error("no handler");
  return h(captureArgs(over), ctxFor(p, signal));
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (isUiError(e)) return e.code;
    throw e;
  }
  return "no error";
}

async function decode(png: Uint8Array): Promise<RawImage> {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  expect(info.channels).toBe(3);
  return { width: info.width, height: info.height, channels: 3, data };
}

function px(img: RawImage, x: number, y: number): string {
  const i = (y * img.width + x) * img.channels;
  return [img.data[i], img.data[i + 1], img.data[i + 2]].map((v) => v.toString(16).padStart(2, "0")).join("");
}

/** The capture port of `platform`, with `during` run right after the pixels are read. */
function withHook(during: () => void): { platform: Platform; frames: RawImage[] } {
  const frames: RawImage[] = [];
  const wrapped: Platform = {
    ...platform,
    capture: {
      captureScreen: async (rect) => {
        const img = await platform.capture.captureScreen(rect);
        frames.push(img);
        during();
        return img;
      },
    },
  };
  return { platform: wrapped, frames };
}

describe("desktop ops", () => {
  it("list, get, alive, virtual screen and health come from the platform", async () => {
    const ctx = ctxFor(platform);
    const list = await captureHandlers["desktop.list"]?.({}, ctx);
    expect(list?.windows.map((w) => w.hwnd)).toEqual(["2002", "1001"]);
    const got = await captureHandlers["desktop.get"]?.({ hwnd: "1001" }, ctx);
    expect(got?.window?.rect).toEqual([100, 100, 500, 400]);
    expect((await captureHandlers["desktop.get"]?.({ hwnd: "9" }, ctx))?.window).toBeNull();
    expect((await captureHandlers["desktop.alive"]?.({ instance: INSTANCE }, ctx))?.alive).toBe(true);
    expect(
      (await captureHandlers["desktop.alive"]?.({ instance: { ...INSTANCE, pid: 1 } }, ctx))?.alive,
    ).toBe(false);
    expect((await captureHandlers["desktop.virtual_screen"]?.({}, ctx))?.rect).toEqual([0, 0, 1920, 1080]);
    const health = await captureHandlers["desktop.health"]?.({}, ctx);
    expect(health?.facts.platform).toBe("fake");
    // Results satisfy the protocol's result schemas.
    expect(() => OPS["desktop.list"].result.parse(list)).not.toThrow();
    expect(() => OPS["desktop.health"].result.parse(health)).not.toThrow();
  });
});

describe("capture.region", () => {
  it("returns a PNG of exactly the region with fill, paint and mask pixels", async () => {
    const r = await capture({
      region: [5, 5, 105, 85],
      masks: [
        [40, 40, 60, 60],
        [0, 0, 8, 8],
      ],
    });
    expect(() => OPS["capture.region"].result.parse(r)).not.toThrow();
    expect(r.sha256).toBeNull();
    expect([r.width, r.height]).toEqual([100, 80]);
    expect(r.window_offset).toEqual([105, 105]);
    expect(r.png).toBeInstanceOf(Uint8Array);
    const img = await decode(r.png ?? new Uint8Array());
    expect([img.width, img.height]).toEqual([100, 80]);
    expect(px(img, 4, 4)).toBe("3366cc"); // window (9,9): fill, just outside the paint
    expect(px(img, 0, 0)).toBe("000000"); // mask [0,0,8,8] clipped to the region → image [0,0,3,3]
    expect(px(img, 2, 2)).toBe("000000");
    expect(px(img, 3, 2)).toBe("3366cc");
    expect(px(img, 2, 3)).toBe("3366cc");
    expect(px(img, 5, 5)).toBe("ff0000"); // window (10,10): paint
    expect(px(img, 35, 35)).toBe("000000"); // window (40,40): mask over paint
    expect(px(img, 54, 54)).toBe("000000"); // window (59,59): mask over fill
    expect(px(img, 55, 55)).toBe("3366cc"); // window (60,60): fill
    expect(px(img, 99, 79)).toBe("3366cc");
  });

  it("draws the grid after the masks, on window-relative multiples", async () => {
    const r = await capture({ region: [5, 5, 105, 85], masks: [[0, 0, 100, 100]], grid_spacing: 50 });
    const img = await decode(r.png ?? new Uint8Array());
    const grid = GRID_RGB.map((v) => v.toString(16).padStart(2, "0")).join("");
    expect(px(img, 45, 70)).toBe(grid); // window x = 50
    expect(px(img, 70, 45)).toBe(grid); // window y = 50
    expect(px(img, 46, 70)).toBe("000000");
    expect(px(img, 99, 79)).toBe("3366cc"); // outside the mask, no line
  });

  it("hashes the masked RGB pixels for profiles and returns no image", async () => {
    const a = await capture({ output: "sha256", region: [0, 0, 60, 60], masks: [[10, 10, 50, 50]] });
    expect(a.png).toBeNull();
    expect(a.sha256).toMatch(/^[0-9a-f]{64}$/);
    // Everything not masked is the fill, so a repaint under the mask does not change the hash.
    const s = scenario();
    const w = s.windows[0];
    w.paint = [{ rect: [10, 10, 50, 50], fill: "#00ff00" }];
    writeScenarioFile(path, s);
    const b = await capture({ output: "sha256", region: [0, 0, 60, 60], masks: [[10, 10, 50, 50]] });
    expect(b.sha256).toBe(a.sha256);
    const c = await capture({ output: "sha256", region: [0, 0, 60, 60], masks: [] });
    expect(c.sha256).not.toBe(a.sha256);
  });

  it("does not need the foreground but does need identity, visibility and an uncovered region", async () => {
    await expect(capture()).resolves.toBeTruthy();
    expect(await codeOf(capture({ region: [350, 0, 450, 50] }))).toBe("out_of_bounds");
    expect(await codeOf(capture({ target: { hwnd: "1001", instance: { ...INSTANCE, pid: 1 } } }))).toBe(
      "target_changed",
    );
    expect(await codeOf(capture({ target: { hwnd: "31337", instance: INSTANCE } }))).toBe("target_gone");
    writeScenarioFile(path, scenario({ iconic: true }));
    expect(await codeOf(capture())).toBe("minimized");
    writeScenarioFile(path, scenario({ coverRect: [150, 150, 300, 300] }));
    expect(await codeOf(capture({ region: [0, 0, 100, 80] }))).toBe("occluded");
    // A region beside the covering window is fine.
    await expect(capture({ region: [250, 0, 400, 300] })).resolves.toBeTruthy();
  });

  it("refuses a region past the edge of the visible screen before reading anything, never clamps it", async () => {
    // The window [1800,1000,2200,1300] reaches past the 1920×1080 screen on the right and bottom.
    writeScenarioFile(path, scenario({ rect: [1800, 1000, 2200, 1300] }));
    const hook = withHook(() => undefined);
    // Screen [1800,1000,1920,1080]: touches the right and bottom edges (exclusive), inside.
    const inside = await capture({ region: [0, 0, 120, 80] }, hook.platform);
    expect([inside.width, inside.height]).toEqual([120, 80]);
    const img = await decode(inside.png ?? new Uint8Array());
    expect(px(img, 119, 79)).toBe("3366cc");
    expect(hook.frames).toHaveLength(1);
    for (const region of [
      [0, 0, 121, 80], // one column past the right edge
      [0, 0, 120, 81], // one row past the bottom edge
      [50, 50, 400, 300], // the whole rest of the window, off screen on both
    ] as Rect[]) {
      let message = "";
      try {
        await capture({ region }, hook.platform);
      } catch (e) {
        if (!isUiError(e)) throw e;
        expect(e.code).toBe("out_of_bounds");
        message = e.message;
      }
      // The screen's size and what to do instead, never the window's content.
      expect(message).toBe(
        "The region extends past the edge of the visible screen (1920×1080); ask for the part on screen.",
      );
    }
    // Nothing was read for any of them.
    expect(hook.frames).toHaveLength(1);
    // The left and top edges too: a window partly above and left of the screen's origin.
    writeScenarioFile(path, scenario({ rect: [-50, -20, 350, 280] }));
    expect(await codeOf(capture({ region: [0, 20, 100, 80] }, hook.platform))).toBe("out_of_bounds");
    expect(await codeOf(capture({ region: [50, 0, 100, 80] }, hook.platform))).toBe("out_of_bounds");
    await expect(capture({ region: [50, 20, 150, 80] }, hook.platform)).resolves.toBeTruthy();
    expect(hook.frames).toHaveLength(2);
  });

  it("returns a PNG that owns its whole ArrayBuffer (transferable without extra bytes)", async () => {
    const r = await capture({ compression_level: 0 });
    const png = r.png ?? new Uint8Array(1);
    expect(png.byteOffset).toBe(0);
    expect(png.byteLength).toBe(png.buffer.byteLength);
  });

  it("refuses a frame of the wrong size from the platform", async () => {
    const p: Platform = {
      ...platform,
      capture: {
        captureScreen: async () => ({ width: 10, height: 10, channels: 4, data: new Uint8Array(400) }),
      },
    };
    expect(await codeOf(capture({}, p))).toBe("platform_unavailable");
    const short: Platform = {
      ...platform,
      capture: {
        captureScreen: async () => ({ width: 100, height: 80, channels: 4, data: new Uint8Array(10) }),
      },
    };
    expect(await codeOf(capture({}, short))).toBe("platform_unavailable");
  });

  it("hashes the PNG it answers: the frame hash is SHA-256 of the PNG, alike for a hash-only sample", async () => {
    const png = await capture({ masks: [[5, 5, 20, 20]] });
    const bytes = png.png ?? new Uint8Array();
    const expected = createHash("sha256").update("png;100x80;grid=0;level=6;").update(bytes).digest("hex");
    expect(png.frame_hash).toBe(expected);
    // A visual wait's sample (hash only) and a screenshot of the same image compare equal.
    const only = await capture({ masks: [[5, 5, 20, 20]], output: "frame_hash" });
    expect(only.png).toBeNull();
    expect(only.frame_hash).toBe(expected);
    // The caller that has this image gets none; a grid is part of what the image shows.
    expect((await capture({ masks: [[5, 5, 20, 20]], unless_hash: expected })).png).toBeNull();
    const grid = await capture({ masks: [[5, 5, 20, 20]], grid_spacing: 25 });
    expect(grid.frame_hash).toBe(
      createHash("sha256")
        .update("png;100x80;grid=25;level=6;")
        .update(grid.png ?? new Uint8Array())
        .digest("hex"),
    );
    // Another image, another hash.
    expect((await capture({ masks: [[5, 5, 30, 20]] })).frame_hash).not.toBe(expected);
  });

  it("refuses a PNG over max_png_bytes", async () => {
    expect(await codeOf(capture({ max_png_bytes: 10 }))).toBe("image_too_large");
  });

  it("answers cancelled when the request was cancelled", async () => {
    const ac = new AbortController();
    ac.abort();
    expect(await codeOf(capture({}, platform, ac.signal))).toBe("cancelled");
  });

  describe("TOCTOU: a change while the pixels are read discards them", () => {
    const cases: [string, string, () => ScenarioInput][] = [
      ["moved", "target_changed", () => scenario({ rect: [110, 100, 510, 400] })],
      ["resized", "target_changed", () => scenario({ rect: [100, 100, 520, 400] })],
      ["covered", "occluded", () => scenario({ coverRect: [120, 120, 200, 200] })],
      ["minimized", "minimized", () => scenario({ iconic: true })],
      ["replaced", "target_changed", () => scenario({ pid: 5151 })],
      // The screen shrank (a monitor went away) under the region: screen [100,100,200,180].
      ["screen shrank", "out_of_bounds", () => ({ ...scenario(), virtual_screen: [0, 0, 150, 150] })],
      [
        "closed",
        "target_gone",
        () => {
          const s = scenario();
          s.windows = s.windows.filter((w) => w.hwnd !== 1001);
          return s;
        },
      ],
    ];
    it.each(cases)("%s → %s", async (_label, code, next) => {
      const hook = withHook(() => writeScenarioFile(path, next()));
      expect(await codeOf(capture({ region: [0, 0, 100, 80] }, hook.platform))).toBe(code);
      expect(hook.frames).toHaveLength(1);
      // The frame that was read has been wiped, not just dropped.
      expect(hook.frames[0].data.every((b) => b === 0)).toBe(true);
    });

    it("an unrelated change (another window moving elsewhere) keeps the frame", async () => {
      const hook = withHook(() => writeScenarioFile(path, scenario({ coverRect: [700, 500, 900, 700] })));
      const r = await capture({ region: [0, 0, 100, 80] }, hook.platform);
      expect(r.png).not.toBeNull();
    });
  });

  describe("the supervisor's enumeration handed to the pre-capture check", () => {
    /** The platform with its listWindows and targetAndCovers calls counted (or the latter removed). */
    function counting(opts: { partial?: boolean } = {}): {
      platform: Platform;
      lists: () => number;
      partials: () => number;
    } {
      let n = 0;
      let partial = 0;
      const desktop = new Proxy(platform.desktop, {
        get(target, prop) {
          const v: unknown = Reflect.get(target, prop, target);
          if (prop === "listWindows") {
            return () => {
              n += 1;
              return target.listWindows();
            };
          }
          if (prop === "targetAndCovers") {
            if (opts.partial === false) return undefined;
            return (hwnd: string, region: Rect) => {
              partial += 1;
              return target.targetAndCovers?.(hwnd, region);
            };
          }
          return typeof v === "function" ? v.bind(target) : v;
        },
      });
      return { platform: { ...platform, desktop }, lists: () => n, partials: () => partial };
    }

    it("a fresh one leaves no enumeration to the worker: the check after the read reads the target and its covers", async () => {
      const windows = await platform.desktop.listWindows();
      const c = counting();
      await capture({ listing: { at: Date.now(), windows } }, c.platform);
      expect(c.lists()).toBe(0);
      expect(c.partials()).toBe(1);
      const plain = counting();
      await capture({}, plain.platform);
      expect(plain.lists()).toBe(1);
      // A platform without the partial read enumerates after the read.
      const whole = counting({ partial: false });
      await capture({ listing: { at: Date.now(), windows } }, whole.platform);
      expect(whole.lists()).toBe(1);
      expect(whole.partials()).toBe(0);
    });

    it("named by the id this worker gave it: used as it is, nothing copied back; an unknown id enumerates", async () => {
      const list = captureHandlers["desktop.list"];
      if (!list) throw new Error("no handler");
      const c = counting();
      const answer = await list({}, ctxFor(c.platform));
      expect(answer.listing_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(c.lists()).toBe(1);
      await capture({ listing_id: answer.listing_id ?? null }, c.platform);
      expect(c.lists()).toBe(1); // the pre-check used the kept listing
      await capture({ listing_id: "00000000-0000-4000-8000-000000000000" }, c.platform);
      expect(c.lists()).toBe(2);
      // Kept as it was read: the region covered since is still refused by the live checks.
      const kept = await list({}, ctxFor(platform));
      writeScenarioFile(path, scenario({ coverRect: [120, 120, 200, 200] }));
      const hook = withHook(() => {});
      expect(await codeOf(capture({ listing_id: kept.listing_id ?? null }, hook.platform))).toBe("occluded");
      expect(hook.frames.every((f) => f.data.every((b) => b === 0))).toBe(true);
    });

    it("a stale one is not used: the pre-check enumerates the live desktop", async () => {
      const windows = await platform.desktop.listWindows();
      const c = counting();
      await capture({ listing: { at: Date.now() - 60_000, windows } }, c.platform);
      expect(c.lists()).toBe(1);
      // Stale and showing the region uncovered while it is covered now: refused before the read.
      writeScenarioFile(path, scenario({ coverRect: [120, 120, 200, 200] }));
      const hook = withHook(() => {});
      expect(await codeOf(capture({ listing: { at: Date.now() - 60_000, windows } }, hook.platform))).toBe(
        "occluded",
      );
      expect(hook.frames).toHaveLength(0);
    });

    it("one that says the region is uncovered while it is covered never lets the pixels out", async () => {
      const windows = await platform.desktop.listWindows();
      writeScenarioFile(path, scenario({ coverRect: [120, 120, 200, 200] }));
      const hook = withHook(() => {});
      expect(await codeOf(capture({ listing: { at: Date.now(), windows } }, hook.platform))).toBe("occluded");
      // The platform's live check before the read (the simulated server's confirmLive reads the
      // scenario afresh) refuses it unread; a port without one reads on the handed word and the
      // check after the read wipes it. Either way nothing of it is left.
      expect(hook.frames.length).toBeLessThanOrEqual(1);
      expect(hook.frames.every((f) => f.data.every((b) => b === 0))).toBe(true);
    });
  });
});

describe("frames the capture port writes into (X11, Win32)", () => {
  /** The fake port, but writing its pixels into the handler's frame as the real ports do. */
  function intoFrame(during: () => void = () => {}): { platform: Platform; targets: FrameTarget[] } {
    const targets: FrameTarget[] = [];
    const wrapped: Platform = {
      ...platform,
      capture: {
        captureScreen: async (rect, into) => {
          const img = toRgb(await platform.capture.captureScreen(rect));
          if (!into) throw new Error("the handler passed no frame");
          targets.push(into);
          const row = img.width * 3;
          for (let y = 0; y < img.height; y++)
            into.data.set(img.data.subarray(y * row, y * row + row), y * into.stride);
          during();
          return { width: img.width, height: img.height, channels: 3, data: into.data, stride: into.stride };
        },
      },
    };
    return { platform: wrapped, targets };
  }

  it("hands the port a frame of the region's size and encodes the same image from it", async () => {
    const masks: Rect[] = [[5, 5, 20, 20]];
    const packed = await capture({ masks, grid_spacing: 25 });
    const viaFrame = intoFrame();
    const framed = await capture({ masks, grid_spacing: 25 }, viaFrame.platform);
    expect(viaFrame.targets[0]?.width).toBe(100);
    expect(viaFrame.targets[0]?.height).toBe(80);
    expect(Buffer.from(framed.png ?? []).equals(Buffer.from(packed.png ?? []))).toBe(true);
    const hashed = await capture({ masks, output: "sha256" });
    expect((await capture({ masks, output: "sha256" }, intoFrame().platform)).sha256).toBe(hashed.sha256);
  });

  it("lends the same frame to the next shot, and one refused after the read comes back black", async () => {
    const first = intoFrame();
    await capture({}, first.platform);
    await capture({}, first.platform);
    expect(first.targets[1]?.data.buffer).toBe(first.targets[0]?.data.buffer);
    const covered = intoFrame(() => writeScenarioFile(path, scenario({ coverRect: [120, 120, 200, 200] })));
    expect(await codeOf(capture({}, covered.platform))).toBe("occluded");
    expect(covered.targets[0]?.data.every((b) => b === 0)).toBe(true);
  });

  it("sends the check after the read before encoding, judges it after, and a refusal drops the PNG", async () => {
    const viaFrame = intoFrame();
    const d = viaFrame.platform.desktop;
    const order: string[] = [];
    let refuse = false;
    const desktop = new Proxy(d, {
      get(t, k) {
        if (k === "askCheckAfterRead") return (hwnd: string) => order.push(`ask ${hwnd}`);
        if (k === "targetAndCovers")
          return async () => {
            const f = viaFrame.targets[viaFrame.targets.length - 1];
            const at = f ? 10 * f.stride + 10 * 3 : 0;
            order.push(`judge, mask painted: ${f?.data[at] === 0}`);
            const all = await t.listWindows();
            return refuse ? all.filter((w) => w.hwnd !== "1001") : all;
          };
        const v = Reflect.get(t, k);
        return typeof v === "function" ? v.bind(t) : v;
      },
    });
    const p: Platform = { ...viaFrame.platform, desktop };
    const shot = await capture({ masks: [[5, 5, 20, 20]] }, p);
    expect(shot.png).not.toBeNull();
    expect(order).toEqual(["ask 1001", "judge, mask painted: true"]);
    refuse = true;
    expect(await codeOf(capture({ masks: [[5, 5, 20, 20]] }, p))).toBe("target_gone");
    expect(viaFrame.targets[1]?.data.every((b) => b === 0)).toBe(true);
  });

  it("a port that takes the ask behind its read is handed it, and the handler does not ask again", async () => {
    const viaFrame = intoFrame();
    const order: string[] = [];
    const port = viaFrame.platform.capture;
    const d = viaFrame.platform.desktop;
    const desktop = new Proxy(d, {
      get(t, k) {
        if (k === "askCheckAfterRead") return (hwnd: string) => order.push(`ask ${hwnd}`);
        const v = Reflect.get(t, k);
        return typeof v === "function" ? v.bind(t) : v;
      },
    });
    const p: Platform = {
      ...viaFrame.platform,
      desktop,
      capture: {
        captureScreen: async (rect, into, afterRead) => {
          const img = await port.captureScreen(rect, into);
          // As X11 does: the ask queued behind the read, before the read's reply is taken.
          afterRead?.();
          order.push("read returned");
          return img;
        },
      },
    };
    expect((await capture({}, p)).png).not.toBeNull();
    expect(order).toEqual(["ask 1001", "read returned"]);
  });

  it('answers tiles "later" without them, then capture.tiles gives exactly the tiles of that frame', async () => {
    const tilesOp = captureHandlers["capture.tiles"];
    if (!tilesOp) throw new Error("no capture.tiles handler");
    const ctx = ctxFor(platform);
    const masks: Rect[] = [[5, 5, 20, 20]];
    const eager = await capture({ masks, tiles: true }, intoFrame().platform);
    expect(eager.tiles?.length).toBe(Math.ceil(100 / 32) * Math.ceil(80 / 32));
    const viaFrame = intoFrame();
    const late = await capture({ masks, tiles: "later", keep_for: CLIENT_A }, viaFrame.platform);
    expect(late.tiles).toBeUndefined();
    expect(late.frame_hash).toBe(eager.frame_hash);
    expect(Buffer.from(late.png ?? []).equals(Buffer.from(eager.png ?? []))).toBe(true);
    // Read at once (before the job's turn) and after it: the same tiles, those of the masked frame.
    const hash = late.frame_hash ?? "";
    const mine = { client: CLIENT_A, instance: KEY };
    expect((await tilesOp({ frame_hash: hash, ...mine }, ctx)).tiles).toEqual(eager.tiles);
    await new Promise((r) => setImmediate(r));
    expect((await tilesOp({ frame_hash: hash, ...mine }, ctx)).tiles).toEqual(eager.tiles);
    // The frame was lent to the job and came back: the next shot is handed the same one.
    await capture({ tiles: "later", keep_for: CLIENT_A }, viaFrame.platform);
    expect(viaFrame.targets[1]?.data.buffer).toBe(viaFrame.targets[0]?.data.buffer);
    expect((await tilesOp({ frame_hash: "0".repeat(64), ...mine }, ctx)).tiles).toBeNull();
  });

  it("keeps a frame only for the identity it was answered to, and forgets it when that identity's grant ends", async () => {
    const tiles = (client: string, hash: string, instance = KEY) =>
      op("capture.tiles")({ frame_hash: hash, client, instance }, ctxFor(platform)).then((r) => r.tiles);
    const forget = (client: string | null, instance: string | null) =>
      op("capture.forget")({ client, instance }, ctxFor(platform));
    // The worker's kept frames are its module's: earlier tests' go first (a policy reload's forget).
    await forget(null, null);
    const a = await capture({ tiles: "later", keep_for: "a1" }, intoFrame().platform);
    const hash = a.frame_hash ?? "";
    // Another identity never gets tiles of a frame it was not answered, nor does the same
    // identity for another instance; a shot kept for nobody keeps nothing.
    expect(await tiles("b2", hash)).toBeNull();
    expect(await tiles("a1", hash, "c".repeat(32))).toBeNull();
    await capture({ tiles: "later" }, intoFrame().platform);
    expect(await tiles("b2", hash)).toBeNull();
    // The same pixels answered to b2: its own copy, which a1's teardown leaves alone.
    const b = await capture({ tiles: "later", keep_for: "b2" }, intoFrame().platform);
    expect(b.frame_hash).toBe(hash);
    expect(await tiles("b2", hash)).not.toBeNull();
    expect((await forget("a1", KEY)).dropped).toBe(1);
    expect(await tiles("a1", hash)).toBeNull();
    expect(await tiles("b2", hash)).not.toBeNull();
    // An instance's end drops every identity's frames of it.
    await capture({ tiles: "later", keep_for: "a1" }, intoFrame().platform);
    expect((await forget(null, KEY)).dropped).toBe(2);
    expect(await tiles("a1", hash)).toBeNull();
    expect(await tiles("b2", hash)).toBeNull();
  });

  it("does not keep the frame of a shot whose identity was forgotten while it was in flight", async () => {
    const forget = op("capture.forget");
    let forgotten: Promise<{ dropped: number }> | null = null;
    const during = intoFrame(() => {
      forgotten = forget({ client: "d4", instance: null }, ctxFor(platform));
    });
    const shot = await capture({ tiles: "later", keep_for: "d4" }, during.platform);
    expect(forgotten).not.toBeNull();
    await forgotten;
    const r = await op("capture.tiles")(
      { frame_hash: shot.frame_hash ?? "", client: "d4", instance: KEY },
      ctxFor(platform),
    );
    expect(r.tiles).toBeNull();
    // Forgetting another identity meanwhile does not void this one's.
    const other = intoFrame(() => {
      void forget({ client: "e5", instance: null }, ctxFor(platform));
    });
    const kept = await capture({ tiles: "later", keep_for: "d4" }, other.platform);
    const again = await op("capture.tiles")(
      { frame_hash: kept.frame_hash ?? "", client: "d4", instance: KEY },
      ctxFor(platform),
    );
    expect(again.tiles).not.toBeNull();
  });

  it('hashes the tiles of a frame with a grid at once even when asked "later" (the grid is drawn over it)', async () => {
    const eager = await capture({ grid_spacing: 25, tiles: true }, intoFrame().platform);
    const late = await capture({ grid_spacing: 25, tiles: "later" }, intoFrame().platform);
    expect(late.tiles).toEqual(eager.tiles);
  });
});

interface BatchOpts {
  lastRect: Rect | null;
  stale?: boolean;
  refuseAfter?: boolean;
  /** The desktop has askCheckBeforeRead (capture.region against a listing already made). */
  checkAhead?: boolean;
}

/** Where a window-relative region of a window at `windowRect` lies on the screen. */
function screenRectOf(windowRect: Rect, region: Rect): Rect {
  return [
    windowRect[0] + region[0],
    windowRect[1] + region[1],
    windowRect[0] + region[2],
    windowRect[1] + region[3],
  ];
}

/**
 * The fake platform with a desktop that calls the listing's readAhead with `lastRect` (and
 * `stale()` when asked to), with `checkAhead` askCheckBeforeRead as X11 does it, and a port
 * whose askRead queues nothing but records what is done. `region`: the shots' region.
 */
async function batchedPlatform(region: Rect, opts: BatchOpts) {
  const log: string[] = [];
  const frames: FrameTarget[] = [];
  const d = platform.desktop;
  const desktop = new Proxy(d, {
    get(t, k) {
      if (k === "listWindows")
        return async (o?: Parameters<typeof d.listWindows>[0]) => {
          log.push("list");
          if (o?.readAhead && opts.lastRect) o.readAhead.ask(opts.lastRect);
          if (o?.readAhead && opts.stale) o.readAhead.stale();
          return t.listWindows();
        };
      if (k === "askCheckAfterRead") return (hwnd: string) => log.push(`ask ${hwnd}`);
      // As X11's: the check's requests, then the read at the listed window's rect behind them.
      if (k === "askCheckBeforeRead" && opts.checkAhead)
        return (w: WindowInfo, readAhead: ReadAhead) => {
          log.push(`check ahead ${w.hwnd}`);
          readAhead.ask(w.rect);
          if (opts.stale) readAhead.stale();
        };
      if (k === "targetAndCovers")
        return async () => {
          log.push("judge after");
          const all = await t.listWindows();
          return opts.refuseAfter ? all.filter((w) => w.hwnd !== "1001") : all;
        };
      const v = Reflect.get(t, k);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
  const fill = async (rect: Rect, into: FrameTarget) => {
    const img = toRgb(await platform.capture.captureScreen(rect));
    const row = img.width * 3;
    for (let y = 0; y < img.height; y++)
      into.data.set(img.data.subarray(y * row, y * row + row), y * into.stride);
    return {
      width: img.width,
      height: img.height,
      channels: 3 as const,
      data: into.data,
      stride: into.stride,
    };
  };
  // What the screen shows there now (the fake's read is async; askRead's is queued, not waited).
  const ahead = opts.lastRect
    ? toRgb(await platform.capture.captureScreen(screenRectOf(opts.lastRect, region)))
    : null;
  const p: Platform = {
    ...platform,
    desktop,
    capture: {
      captureScreen: async (rect, into) => {
        log.push(`read ${rect.join(",")}`);
        if (!into) throw new Error("the handler passed no frame");
        frames.push(into);
        return fill(rect, into);
      },
      askRead: (rect, into, afterRead) => {
        log.push(`read ahead ${rect.join(",")}`);
        frames.push(into);
        const row = (ahead?.width ?? 0) * 3;
        for (let y = 0; y < (ahead?.height ?? 0); y++)
          into.data.set(ahead!.data.subarray(y * row, y * row + row), y * into.stride);
        afterRead?.();
        return {
          take: () => {
            log.push("take");
            return {
              width: into.width,
              height: into.height,
              channels: 3,
              data: into.data,
              stride: into.stride,
            };
          },
          drop: () => {
            log.push("drop");
            into.data.fill(0);
          },
        };
      },
    },
  };
  return { p, log, frames };
}

describe("capture.window: the read asked in the listing's batch", () => {
  const FRESH: Rect = [100, 100, 500, 400];
  const REGION: Rect = [0, 0, 100, 80];

  function windowArgs() {
    return OPS["capture.window"].args.parse({
      hwnd: "1001",
      region: REGION,
      masks: [],
      grid_spacing: null,
      output: "png",
      tiles: false,
      max_png_bytes: 1 << 20,
      compression_level: 6,
      granted: [{ instance: INSTANCE, shown_before: [] }],
    });
  }

  const batched = (opts: BatchOpts) => batchedPlatform(REGION, opts);

  async function shot(p: Platform) {
    const h = captureHandlers["capture.window"];
    if (!h) throw new Error("no capture.window handler");
    return h(windowArgs(), ctxFor(p));
  }

  it("the window where the last listing had it: the read in the batch is the frame, no read or ask of its own", async () => {
    const plain = await shot(platform);
    const b = await batched({ lastRect: FRESH });
    const r = await shot(b.p);
    expect(b.log).toEqual(["list", "read ahead 100,100,200,180", "ask 1001", "take", "judge after"]);
    expect(r.shot?.png).toBeTruthy();
    expect(Buffer.from(r.shot?.png ?? []).equals(Buffer.from(plain.shot?.png ?? []))).toBe(true);
  });

  it("moved, resized or called stale: the read in the batch is zeroed, a read of the fresh rect follows with its own ask", async () => {
    const plain = await shot(platform);
    for (const o of [
      { lastRect: [90, 100, 490, 400] as Rect },
      { lastRect: [100, 100, 480, 400] as Rect },
      { lastRect: FRESH, stale: true },
    ]) {
      const b = await batched(o);
      const r = await shot(b.p);
      const at = `${o.lastRect[0]},${o.lastRect[1]},${o.lastRect[0] + 100},${o.lastRect[1] + 80}`;
      expect(b.log).toEqual([
        "list",
        `read ahead ${at}`,
        "ask 1001",
        "drop",
        "read 100,100,200,180",
        "ask 1001",
        "judge after",
      ]);
      expect(Buffer.from(r.shot?.png ?? []).equals(Buffer.from(plain.shot?.png ?? []))).toBe(true);
    }
  });

  it("refused before or after the read: nothing leaves and the frame read in the batch is zeroed", async () => {
    const after = await batched({ lastRect: FRESH, refuseAfter: true });
    const r = await shot(after.p);
    expect(r.shot).toBeNull();
    expect(r.refused?.code).toBe("target_gone");
    expect(after.log).toEqual(["list", "read ahead 100,100,200,180", "ask 1001", "take", "judge after"]);
    expect(after.frames[0]?.data.every((b) => b === 0)).toBe(true);
    writeScenarioFile(path, scenario({ coverRect: [120, 120, 200, 200] }));
    const covered = await batched({ lastRect: FRESH });
    const c = await shot(covered.p);
    expect(c.shot).toBeNull();
    expect(c.refused?.code).toBe("occluded");
    expect(covered.log).toEqual(["list", "read ahead 100,100,200,180", "ask 1001", "drop"]);
    expect(covered.frames[0]?.data.every((b) => b === 0)).toBe(true);
  });
});

describe("capture.region: the read asked in the batch of the check before it", () => {
  const FRESH: Rect = [100, 100, 500, 400];
  /** Away from the window's corner: the read is at the region's place in the listed rect. */
  const REGION: Rect = [10, 20, 110, 100];
  const AT = "110,120,210,200";

  /** The shot the supervisor asks: against this worker's listing by its id, or none (too old). */
  async function regionShot(p: Platform, listing: "id" | "none") {
    const list = captureHandlers["desktop.list"];
    if (!list) throw new Error("no desktop.list handler");
    const listed = listing === "id" ? ((await list({}, ctxFor(platform))) as { listing_id?: string }) : null;
    return capture({ region: REGION, listing_id: listed?.listing_id ?? null }, p);
  }

  it("against the supervisor's listing: the check's requests and the read at the region's place asked before the check, the read is the frame, no read or ask of its own", async () => {
    const plain = await regionShot(platform, "id");
    const b = await batchedPlatform(REGION, { lastRect: FRESH, checkAhead: true });
    const r = await regionShot(b.p, "id");
    expect(b.log).toEqual(["check ahead 1001", `read ahead ${AT}`, "ask 1001", "take", "judge after"]);
    expect(Buffer.from(r.png ?? []).equals(Buffer.from(plain.png ?? []))).toBe(true);
  });

  it("its listing too old: the shot lists with the check and the read in the batch, and a moved window is read again where it is now", async () => {
    const plain = await regionShot(platform, "none");
    const same = await batchedPlatform(REGION, { lastRect: FRESH, checkAhead: true });
    await regionShot(same.p, "none");
    expect(same.log).toEqual(["list", `read ahead ${AT}`, "ask 1001", "take", "judge after"]);
    const moved = await batchedPlatform(REGION, { lastRect: [90, 100, 490, 400], checkAhead: true });
    const r = await regionShot(moved.p, "none");
    expect(moved.log).toEqual([
      "list",
      "read ahead 100,120,200,200",
      "ask 1001",
      "drop",
      `read ${AT}`,
      "ask 1001",
      "judge after",
    ]);
    expect(Buffer.from(r.png ?? []).equals(Buffer.from(plain.png ?? []))).toBe(true);
  });

  it("called stale (its check's requests dropped, or one more asked after the read): zeroed, read again with its own ask", async () => {
    const plain = await regionShot(platform, "id");
    const b = await batchedPlatform(REGION, { lastRect: FRESH, checkAhead: true, stale: true });
    const r = await regionShot(b.p, "id");
    expect(b.log).toEqual([
      "check ahead 1001",
      `read ahead ${AT}`,
      "ask 1001",
      "drop",
      `read ${AT}`,
      "ask 1001",
      "judge after",
    ]);
    // The same frame, zeroed by the drop, then written by the read of its own.
    expect(b.frames[1]).toBe(b.frames[0]);
    expect(Buffer.from(r.png ?? []).equals(Buffer.from(plain.png ?? []))).toBe(true);
  });

  it("refused before or after the read: nothing leaves and the frame read in the batch is zeroed", async () => {
    const after = await batchedPlatform(REGION, { lastRect: FRESH, checkAhead: true, refuseAfter: true });
    expect(await codeOf(regionShot(after.p, "id"))).toBe("target_gone");
    expect(after.log).toEqual(["check ahead 1001", `read ahead ${AT}`, "ask 1001", "take", "judge after"]);
    expect(after.frames[0]?.data.every((v) => v === 0)).toBe(true);
    writeScenarioFile(path, scenario({ coverRect: [120, 120, 200, 200] }));
    const covered = await batchedPlatform(REGION, { lastRect: FRESH, checkAhead: true });
    expect(await codeOf(regionShot(covered.p, "id"))).toBe("occluded");
    expect(covered.log).toEqual(["check ahead 1001", `read ahead ${AT}`, "ask 1001", "drop"]);
    expect(covered.frames[0]?.data.every((v) => v === 0)).toBe(true);
  });
});
