// Cost of the X11 last-moment checks that read the X server's own state, measured
// in-process on a private Xvfb + openbox desktop with real apps (gtk3-widget-factory and three
// xterms): the worker's verifyTarget with and without the platform's confirmLive (QueryTree
// stacking, hit test, GetInputFocus, grab probes, X-Resource owners), per click, per key and per
// screenshot (a screenshot verifies twice: before and after reading the pixels), plus the
// one-off connection-owner proof a new window gets.
//
//   npx tsc -p tsconfig.json && node bench/x11-checks.mjs
//   BENCH_ROUNDS=500 node bench/x11-checks.mjs
//
// Prints one JSON object on stdout (µs per call, p50 and mean).
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { startBenchApps, startX11Session, stopX11Session } from "./lib/x11.mjs";

const REPO = resolve(import.meta.dirname, "..");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 300);
// BENCH_DIST: another build to measure (e.g. main's dist/, whose listing reads no server truth).
const DIST = resolve(process.env.BENCH_DIST ?? join(REPO, "dist"));

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { p50_us: Math.round(s[Math.floor(s.length / 2)] * 1000), mean_us: Math.round(mean * 1000) };
}

/** A and B alternate round by round, so a drifting machine load weighs on both alike. */
async function paired(a, b) {
  for (let i = 0; i < 10; i++) {
    await a();
    await b();
  }
  const sa = [];
  const sb = [];
  for (let i = 0; i < ROUNDS; i++) {
    let t = performance.now();
    await a();
    sa.push(performance.now() - t);
    t = performance.now();
    await b();
    sb.push(performance.now() - t);
  }
  const A = stats(sa);
  const B = stats(sb);
  return { listing_only: A, with_server_truth: B, added_p50_us: B.p50_us - A.p50_us };
}

const sessionEnv = startX11Session();
const apps = [];
let platform = null;
try {
  const { createX11Platform } = await import(join(DIST, "platforms/x11/index.js"));
  const { verifyTarget } = await import(join(DIST, "workers/verify.js"));
  const owner = await import(join(DIST, "platforms/x11/connectionOwner.js")).catch(() => null);
  platform = await createX11Platform({ workerKind: "other" });
  const desktop = platform.desktop;
  const started = await startBenchApps(desktop, "bench");
  apps.push(...started.apps);
  const win = started.win;
  const target = { hwnd: win.hwnd, instance: win.instance };
  // The same checks without the X server's own state: what the worker did before.
  const listingOnly = new Proxy(desktop, {
    get: (t, k) => (k === "confirmLive" ? undefined : typeof t[k] === "function" ? t[k].bind(t) : t[k]),
  });
  const click = {
    requireForeground: true,
    points: [{ x: 200, y: 200 }],
    grabs: { keyboard: true, pointer: true },
  };
  const key = { requireForeground: true, grabs: { keyboard: true } };
  const shot = { region: [0, 0, 800, 600] };
  const windows = (await desktop.listWindows()).length;
  const result = {
    windows,
    rounds: ROUNDS,
    click: await paired(
      () => verifyTarget(listingOnly, target, click),
      () => verifyTarget(desktop, target, click),
    ),
    key: await paired(
      () => verifyTarget(listingOnly, target, key),
      () => verifyTarget(desktop, target, key),
    ),
    // A screenshot verifies twice (before and after the pixels): count this figure twice.
    screenshot_verify: await paired(
      () => verifyTarget(listingOnly, target, shot),
      () => verifyTarget(desktop, target, shot),
    ),
  };
  const pids = [...new Set((await desktop.listWindows()).map((w) => w.pid).filter((p) => p > 0))];
  if (owner) {
    const t = performance.now();
    owner.provenOwners(pids, process.env.DISPLAY, new Map(pids.map((p) => [p, 1])));
    result.owner_proof_first_sight_ms = Math.round((performance.now() - t) * 10) / 10;
    result.owner_proof_processes = (await import("node:fs"))
      .readdirSync("/proc")
      .filter((e) => /^\d+$/.test(e)).length;
  }
  result.machine = { node: process.version, cpus: cpus().length, loadavg: loadavg() };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await platform?.desktop.dispose();
  for (const a of apps) if (a.exitCode === null) a.kill("SIGKILL");
  stopX11Session(sessionEnv);
}
