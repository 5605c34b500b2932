// PNG encoding of one 800×600 frame by compression level: ours (dist/workers/capture/png.js:
// node:zlib, filter None, what the capture worker uses, fed the packed RGB the X11 and Win32
// captures produce) against sharp (libvips, which it used before) and pngjs (a plain JS encoder)
// in the same run, plus the in-place pixel steps of capture.region (masks, grid, hash) when a
// build is available.
//
//   node bench/capture.mjs                 (after `npm run build`, for the pixel steps)
//   UIINSPECT_DIST=/tmp/x/dist node bench/capture.mjs
//   BENCH_ITER=30 node bench/capture.mjs
//
// Prints one JSON object on stdout.
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { PNG } from "pngjs";
import sharp from "sharp";

sharp.cache(false);

const WIDTH = 800;
const HEIGHT = 600;
const ITER = Number(process.env.BENCH_ITER ?? 15);
const WARMUP = 3;

/** A UI-like RGBA frame: flat panels, a title bar, "text" runs, and a photo-like gradient with noise. */
function makeFrame() {
  const data = Buffer.alloc(WIDTH * HEIGHT * 4);
  let seed = 0x2f6b1d;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed >>> 16;
  };
  const set = (x, y, r, g, b) => {
    const i = (y * WIDTH + x) * 4;
    data[i] = r;
    data[i + 1] = g;
    data[i + 2] = b;
    data[i + 3] = 255;
  };
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) {
      if (y < 32) set(x, y, 0x1a, 0x1a, 0x1a);
      else if (x < 200) set(x, y, 0xf0, 0xf0, 0xf0);
      else if (y > 360 && x > 420) {
        // photo-like area: gradient plus noise (hard to compress)
        const n = rnd() & 15;
        set(x, y, (x + n) & 255, (y * 2 + n) & 255, ((x + y) >> 1) & 255);
      } else set(x, y, 0x33, 0x66, 0xcc);
    }
  }
  // "text": short dark runs on the side panel, 14-px lines
  for (let line = 0; line < 36; line++) {
    const y0 = 44 + line * 15;
    if (y0 + 9 >= HEIGHT) break;
    let x = 10;
    while (x < 190) {
      const w = 2 + (rnd() % 7);
      for (let y = y0; y < y0 + 9; y++)
        for (let k = 0; k < w && x + k < 190; k++) if (rnd() & 1) set(x + k, y, 0x20, 0x20, 0x20);
      x += w + 2 + (rnd() % 5);
    }
  }
  return data;
}

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { p50_ms: round(q(0.5)), p90_ms: round(q(0.9)), mean_ms: round(mean), min_ms: round(s[0]) };
}
const round = (v) => Math.round(v * 1000) / 1000;

async function timeAsync(fn) {
  for (let i = 0; i < WARMUP; i++) await fn();
  const t = [];
  let out;
  for (let i = 0; i < ITER; i++) {
    const t0 = process.hrtime.bigint();
    out = await fn();
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { ...stats(t), bytes: out.length };
}

function timeSync(fn) {
  for (let i = 0; i < WARMUP; i++) fn();
  const t = [];
  let out;
  for (let i = 0; i < ITER; i++) {
    const t0 = process.hrtime.bigint();
    out = fn();
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { ...stats(t), result: out };
}

const frame = makeFrame();
const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(process.env.UIINSPECT_DIST ?? join(here, "..", "dist"));
const pngJs = join(dist, "workers", "capture", "png.js");
const ours = existsSync(pngJs) ? await import(pathToFileURL(pngJs).href) : null;
/** The frame as the captures hand it over: packed RGB. */
const rgb = Buffer.alloc(WIDTH * HEIGHT * 3);
for (let i = 0; i < WIDTH * HEIGHT; i++) frame.copy(rgb, i * 3, i * 4, i * 4 + 3);
const encodeOurs = (level) => ours.encodePng({ width: WIDTH, height: HEIGHT, channels: 3, data: rgb }, level);

const encodeSharp = (level, adaptive) =>
  sharp(frame, { raw: { width: WIDTH, height: HEIGHT, channels: 4 } })
    .removeAlpha()
    .png({ compressionLevel: level, adaptiveFiltering: adaptive, palette: false })
    .toBuffer();

const encodePngjs = (level) =>
  PNG.sync.write(
    { width: WIDTH, height: HEIGHT, data: frame },
    { deflateLevel: level, colorType: 2, inputColorType: 6, inputHasAlpha: true },
  );

const levels = [];
for (let level = 0; level <= 9; level++) {
  const sharpNone = await timeAsync(() => encodeSharp(level, false));
  const sharpAdaptive = await timeAsync(() => encodeSharp(level, true));
  const pngjs = await timeAsync(async () => encodePngjs(level));
  const own = ours ? timeSync(() => encodeOurs(level)) : null;
  levels.push({
    level,
    ...(own
      ? {
          ours: { ...own, result: own.result.byteLength },
          ours_over_sharp_p50: round(own.p50_ms / sharpNone.p50_ms),
        }
      : {}),
    sharp: sharpNone,
    sharp_adaptive_filtering: sharpAdaptive,
    pngjs,
    pngjs_over_sharp_p50: round(pngjs.p50_ms / sharpNone.p50_ms),
  });
}

// Check that both encoders produced the same pixels (decode one of each).
const check = async () => {
  const a = await sharp(await encodeSharp(6, false))
    .raw()
    .toBuffer();
  const b = await sharp(encodePngjs(6)).raw().toBuffer();
  const c = ours ? await sharp(encodeOurs(1)).raw().toBuffer() : a;
  return a.equals(b) && a.equals(c);
};

let pixelSteps = null;
const pixelsJs = join(dist, "workers", "capture", "pixels.js");
if (existsSync(pixelsJs)) {
  const px = await import(pathToFileURL(pixelsJs).href);
  const img = () => ({ width: WIDTH, height: HEIGHT, channels: 4, data: Buffer.from(frame) });
  const copy = timeSync(() => img());
  const masks = [
    [600, 40, 800, 600],
    [12, 560, 200, 600],
  ];
  const paint = timeSync(() => {
    const i = img();
    px.paintMasks(i, masks, [0, 0, WIDTH, HEIGHT]);
    return i;
  });
  const grid = timeSync(() => {
    const i = img();
    return px.drawGrid(i, 50, { x: 12, y: 40 }).length;
  });
  const hash = timeSync(() => px.hash(img()));
  const sub = (a) => ({ p50_ms: round(Math.max(0, a.p50_ms - copy.p50_ms)), raw_p50_ms: a.p50_ms });
  pixelSteps = {
    note: "each step timed on a fresh copy of the frame; copy time subtracted",
    frame_copy_p50_ms: copy.p50_ms,
    paint_masks: sub(paint),
    draw_grid_50: { ...sub(grid), labels: grid.result },
    sha256_rgb: sub(hash),
  };
}

// The whole capture.region chain on the simulated desktop (verify, render, verify again,
// masks, grid, then PNG or hash), 800×600, in this thread.
let chain = null;
const fakeJs = join(dist, "platforms", "fake", "index.js");
const handlersJs = join(dist, "workers", "capture", "handlers.js");
const protocolJs = join(dist, "shared", "protocol.js");
if (existsSync(fakeJs) && existsSync(handlersJs) && existsSync(protocolJs)) {
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const fake = await import(pathToFileURL(fakeJs).href);
  const { captureHandlers } = await import(pathToFileURL(handlersJs).href);
  const { OPS } = await import(pathToFileURL(protocolJs).href);
  const dir = mkdtempSync(join(tmpdir(), "uiinspect-bench-capture-"));
  try {
    const scenarioPath = join(dir, "desktop.json");
    const scenario = fake.sampleScenario(dir);
    scenario.windows[0].rect = [100, 100, 924, 740];
    fake.writeScenarioFile(scenarioPath, scenario);
    const platform = fake.createFakePlatform({ scenarioPath, workerKind: "capture" });
    const w = await platform.desktop.getWindow("1001");
    const ctx = {
      signal: new AbortController().signal,
      deadline: Date.now() + 600_000,
      init: { kind: "capture", platform: "fake", fake_desktop: scenarioPath, log_level: "silent" },
      platform,
    };
    const run = (output, grid, level) =>
      captureHandlers["capture.region"](
        OPS["capture.region"].args.parse({
          target: { hwnd: "1001", instance: w.instance },
          region: [12, 40, 812, 640],
          masks: [[612, 40, 812, 628]],
          grid_spacing: grid,
          output,
          max_png_bytes: 64 << 20,
          compression_level: level,
        }),
        ctx,
      );
    const t = async (fn) => {
      const r = await timeAsync(async () => {
        const x = await fn();
        return x.png ?? x.sha256;
      });
      return r;
    };
    chain = {
      note: "fake platform renders the frame; verify runs twice (before and after the read)",
      sha256: await t(() => run("sha256", null, 6)),
      png_level1: await t(() => run("png", null, 1)),
      png_level6: await t(() => run("png", null, 6)),
      png_level6_grid50: await t(() => run("png", 50, 6)),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const out = {
  bench: "capture-png-encode",
  frame: { width: WIDTH, height: HEIGHT, channels_in: 4, channels_out: 3 },
  iterations: ITER,
  node: process.version,
  sharp: sharp.versions.sharp,
  libvips: sharp.versions.vips,
  sharp_concurrency: sharp.concurrency(),
  same_pixels: await check(),
  levels,
  pixel_steps: pixelSteps ?? "build not found (npm run build, or UIINSPECT_DIST)",
  capture_region_800x600: chain ?? "build not found (npm run build, or UIINSPECT_DIST)",
};
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
