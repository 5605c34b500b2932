// screenshot_window 800×600 over MCP from two builds side by side, interleaved round by round
// on one private Xvfb desktop (gtk3-widget-factory), with the floor of bench/x11-floor.mjs
// (XShmGetImage + BGRX→RGB + sharp PNG level 1 in this process) in the same rounds. For a
// change to the screenshot path, the ratio of one interleaved run is what to trust on a shared,
// noisy machine; two separate runs are not comparable.
//
//   git worktree add /tmp/base <commit> && (cd /tmp/base && ln -s "$OLDPWD/node_modules" . && npm run build)
//   npm run build && BENCH_BASELINE=/tmp/base/dist/cli.js node bench/ab-screenshot.mjs
//   (BENCH_ROUNDS, default 60; BENCH_BASELINE may list several builds, comma-separated: all of
//   them take part in every round)
//
// Prints one JSON object: p50 of each, ours/each baseline and each/floor, the load average.
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { CLI, call, LOOSE, percentiles } from "./lib/mcp.mjs";
import { floorShot, REPO, startDesk } from "./lib/x11desk.mjs";

const BASELINES = (process.env.BENCH_BASELINE ?? "").split(",").filter((b) => b.length > 0);
if (BASELINES.length === 0)
  throw new Error("BENCH_BASELINE: the other build's dist/cli.js (or several, comma-separated)");
/** "baseline" for one other build (as before), "baseline1", "baseline2", … for several. */
const label = (i) => (BASELINES.length === 1 ? "baseline" : `baseline${i + 1}`);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60);
const REGION = [0, 0, 800, 600];
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);
const loadStart = la();

const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const policy = { safe_regions: [{ name: "r800x600", rect: REGION }] };
  const servers = { ours: (await desk.grantedServer(win, policy, LOOSE, CLI)).client };
  for (const [i, b] of BASELINES.entries())
    servers[label(i)] = (await desk.grantedServer(win, policy, LOOSE, resolve(b))).client;
  const { createX11Platform } = await import(join(REPO, "dist/platforms/x11/index.js"));
  const cap = await createX11Platform({ workerKind: "capture" });
  const rect = [win.rect[0], win.rect[1], win.rect[0] + 800, win.rect[1] + 600];
  const floor = () => floorShot(cap.capture, rect);
  const shot = (client) => call(client, "screenshot_window", { hwnd: win.hwnd, region_name: "r800x600" });
  const steps = Object.fromEntries(Object.entries(servers).map(([k, c]) => [k, () => shot(c)]));
  steps.floor = floor;
  for (let i = 0; i < 5; i++) for (const fn of Object.values(steps)) await fn();
  const t = Object.fromEntries(Object.keys(steps).map((k) => [k, []]));
  const order = Object.keys(steps);
  for (let i = 0; i < ROUNDS; i++) {
    // Each round rotates who goes first, so none always meets the aftermath of another.
    for (let j = 0; j < order.length; j++) {
      const k = order[(i + j) % order.length];
      const a = performance.now();
      await steps[k]();
      t[k].push(performance.now() - a);
    }
  }
  const p50 = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, percentiles(v).p50_ms]));
  const r = (a, b) => Math.round((a / b) * 100) / 100;
  process.stdout.write(
    `${JSON.stringify(
      {
        rounds: ROUNDS,
        baselines: Object.fromEntries(BASELINES.map((b, i) => [label(i), b])),
        loadavg_start: loadStart,
        loadavg_end: la(),
        p50_ms: p50,
        ratios: Object.fromEntries([
          ["ours_vs_floor", r(p50.ours, p50.floor)],
          ...BASELINES.flatMap((_, i) => [
            [`ours_vs_${label(i)}`, r(p50.ours, p50[label(i)])],
            [`${label(i)}_vs_floor`, r(p50[label(i)], p50.floor)],
          ]),
        ]),
        latency: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, percentiles(v)])),
      },
      null,
      2,
    )}\n`,
  );
  await cap.desktop.dispose();
} finally {
  await desk.stop();
}
