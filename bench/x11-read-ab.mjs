// The X11 capture port's read of an 800×600 rect into a PNG frame (as the capture worker reads),
// with and without a root-size round trip before it, interleaved round by round in this process
// on one private Xvfb desktop (gtk3-widget-factory open). "asked_first" is what captureScreen
// did before it let the server's own bounds check of XShmGetImage stand for the size: one
// GetGeometry of the root, waited for, then the read. (Two builds cannot share one process:
// koffi's types are process-wide.)
//
//   npm run build && node bench/x11-read-ab.mjs      (BENCH_ROUNDS, default 300)
import { loadavg } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { percentiles } from "./lib/mcp.mjs";
import { REPO, startDesk } from "./lib/x11desk.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 300);
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);
const loadStart = la();
const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const rect = [win.rect[0], win.rect[1], win.rect[0] + 800, win.rect[1] + 600];
  const { XConnection } = await import(join(REPO, "dist/platforms/x11/xconn.js"));
  const { X11Capture } = await import(join(REPO, "dist/platforms/x11/capture.js"));
  const { PngFrame } = await import(join(REPO, "dist/workers/capture/frames.js"));
  const x = XConnection.open();
  const cap = new X11Capture(x);
  const frame = new PngFrame(800, 600);
  const reads = {
    ours: () => cap.captureScreen(rect, frame.target),
    asked_first: () => {
      x.getGeometry(x.root).resolve();
      return cap.captureScreen(rect, frame.target);
    },
  };
  const order = Object.keys(reads);
  const t = Object.fromEntries(order.map((k) => [k, []]));
  for (let i = 0; i < ROUNDS + 10; i++) {
    for (let j = 0; j < order.length; j++) {
      const k = order[(i + j) % order.length];
      const a = performance.now();
      await reads[k]();
      if (i >= 10) t[k].push(performance.now() - a);
    }
  }
  const stats = Object.fromEntries(
    Object.entries(t).map(([k, v]) => [
      k,
      { ...percentiles(v), min_ms: Math.round(Math.min(...v) * 1000) / 1000 },
    ]),
  );
  const r = (a, b) => Math.round((a / b) * 100) / 100;
  const ratios = {
    p50: r(stats.ours.p50_ms, stats.asked_first.p50_ms),
    min: r(stats.ours.min_ms, stats.asked_first.min_ms),
  };
  console.log(
    JSON.stringify(
      { rounds: ROUNDS, method: cap.lastMethod, loadavg_start: loadStart, loadavg_end: la(), ratios, stats },
      null,
      2,
    ),
  );
  x.close();
} finally {
  await desk.stop();
}
