// Where one screenshot_window's time goes, step by step, in this process on a private Xvfb
// desktop (gtk3-widget-factory), with the built capture worker's own code (dist/): the
// capture.window handler as a whole, capture.region's as the supervisor asks it (desktop.list,
// then capture.region by the listing's id; and the capture.region message alone; and both again
// on the same platform without askRead, which is capture.region's two-flush path), and each
// step alone, against the floor (XShmGetImage + BGRX→RGB + sharp PNG level 1), interleaved
// round by round.
//
//   npm run build && node bench/x11-shot-steps.mjs      (BENCH_ROUNDS, default 60)
//
// Another build: copy this file into its bench/ and run it there (it loads that build's dist/;
// two builds' native bindings cannot share one process).
import { loadavg } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { deflate, deflateSync } from "node:zlib";
import { percentiles } from "./lib/mcp.mjs";
import { floorShot, REPO, startDesk } from "./lib/x11desk.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60);
const DIST = join(REPO, "dist");
const REGION = [0, 0, 800, 600];
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);
const loadStart = la();
const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const { createX11Platform } = await import(join(DIST, "platforms/x11/index.js"));
  const { captureHandlers } = await import(join(DIST, "workers/capture/handlers.js"));
  const { verifyTarget, verifyUnchangedAfter } = await import(join(DIST, "workers/verify.js"));
  const { FramePool } = await import(join(DIST, "workers/capture/frames.js"));
  const { encodePngFrame } = await import(join(DIST, "workers/capture/png.js"));
  const { hash, tileHashes } = await import(join(DIST, "workers/capture/pixels.js"));
  const { frameHashOfPng } = await import(join(DIST, "workers/capture/frameHash.js"));
  const { OPS } = await import(join(DIST, "shared/protocol.js"));
  const platform = await createX11Platform({ workerKind: "capture" });
  const ctx = { signal: new AbortController().signal, deadline: Date.now() + 1e9, init: {}, platform };
  // The same platform without a read asked ahead: capture.region's two flushes (check, then read
  // and the check after it), as before the read went in the check's batch.
  const twoFlushes = {
    ...ctx,
    platform: { ...platform, capture: { captureScreen: (...a) => platform.capture.captureScreen(...a) } },
  };
  const shot = {
    region: REGION,
    masks: [],
    grid_spacing: null,
    output: "png",
    tiles: true,
    max_png_bytes: 64 * 1024 * 1024,
    compression_level: 2,
  };
  const args = OPS["capture.window"].args.parse({
    hwnd: win.hwnd,
    ...shot,
    granted: [{ instance: win.instance, shown_before: [] }],
  });
  const regionTarget = { hwnd: win.hwnd, instance: win.instance };
  const frames = new FramePool();
  const rect = [win.rect[0], win.rect[1], win.rect[0] + 800, win.rect[1] + 600];
  const t = {};
  const time = async (k, f) => {
    const s = performance.now();
    const r = await f();
    if (!t[k]) t[k] = [];
    t[k].push(performance.now() - s);
    return r;
  };
  for (let i = 0; i < ROUNDS + 5; i++) {
    const keep = i >= 5;
    const rec = keep ? time : (_k, f) => f();
    await rec("handler_capture_window", () => captureHandlers["capture.window"](args, ctx));
    await rec("handler_list_then_region", async () => {
      const { listing_id } = await rec("handler_desktop_list", () =>
        captureHandlers["desktop.list"]({}, ctx),
      );
      const region = OPS["capture.region"].args.parse({ target: regionTarget, listing_id, ...shot });
      return rec("handler_capture_region", () => captureHandlers["capture.region"](region, ctx));
    });
    await rec("handler_list_then_region_two_flushes", async () => {
      const { listing_id } = await captureHandlers["desktop.list"]({}, ctx);
      const region = OPS["capture.region"].args.parse({ target: regionTarget, listing_id, ...shot });
      return rec("handler_capture_region_two_flushes", () =>
        captureHandlers["capture.region"](region, twoFlushes),
      );
    });
    const windows = await rec("list", () => platform.desktop.listWindows());
    const target = { hwnd: win.hwnd, instance: windows.find((w) => w.hwnd === win.hwnd).instance };
    const before = await rec("pre_check", () =>
      verifyTarget(platform.desktop, target, { region: REGION, windows }),
    );
    const frame = frames.acquire(800, 600);
    const raw = await rec("read", () => platform.capture.captureScreen(rect, frame.target));
    await rec("post_check", () => verifyUnchangedAfter(platform.desktop, target, before.window, REGION));
    // The frame hash as it was (SHA-256 of the 1.44 MB of RGB) and as it is (of the PNG).
    await rec("raw_sha256", () => hash(raw));
    await rec("tile_hashes", () => tileHashes(raw));
    await rec("encode_l1", () => encodePngFrame(frame, 1));
    const png = await rec("encode_l2", () => encodePngFrame(frame, 2));
    await rec("frame_hash_of_png", () => frameHashOfPng(png, raw, null, 2));
    // The frame hash and the level-2 deflate one after the other on this thread (as capture.window
    // does), and the deflate on libuv's pool while this thread hashes (tried, not kept: slower at
    // p50 on a loaded machine, docs/benchmarks.md).
    await rec("hash_then_deflate", () => {
      hash(raw);
      return deflateSync(frame.rows, { level: 2, chunkSize: 64 * 1024 });
    });
    await rec("hash_over_deflate", async () => {
      const png = new Promise((ok, fail) =>
        deflate(frame.rows, { level: 2, chunkSize: 64 * 1024 }, (e, r) => (e ? fail(e) : ok(r))),
      );
      hash(raw);
      return await png;
    });
    frames.release(frame);
    await rec("floor", () => floorShot(platform.capture, rect));
  }
  const p50 = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, percentiles(v).p50_ms]));
  const min = Object.fromEntries(
    Object.entries(t).map(([k, v]) => [k, Math.round(Math.min(...v) * 1000) / 1000]),
  );
  console.log(
    JSON.stringify(
      { rounds: ROUNDS, loadavg_start: loadStart, loadavg_end: la(), p50_ms: p50, min_ms: min },
      null,
      2,
    ),
  );
  await platform.desktop.dispose?.();
} finally {
  await desk.stop();
}
