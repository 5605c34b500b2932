// Memory soak on a private Xvfb desktop: one built server per isolation mode (thread, then
// process: one after the other, so neither run slows the other), each granted
// gtk3-widget-factory, runs a mixed loop for SOAK_MINUTES (default 10): screenshot_window
// 800×600, inspect_tree, find_elements, list_windows, health_check. The resident set of the
// server and its worker processes is sampled every SOAK_SAMPLE_S seconds (default 10).
//
//   npm run build && node bench/soak.mjs
//   SOAK_MINUTES=2 SOAK_MODES=thread node bench/soak.mjs    (a short exploratory run)
//
// Prints one JSON object: per mode the samples (MiB: the server's RSS, RSS and PSS summed over
// the server and its child processes, and each process by role), start / minute 3 / peak / end,
// the slope after minute 3 (MiB/min, least squares), the uia worker's counters from
// health_check (grant expiry and idle retirement replace it), and the load average.
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { call, LOOSE } from "./lib/mcp.mjs";
import { slope } from "./lib/stats.mjs";
import { memoryMiB, startDesk } from "./lib/x11desk.mjs";

const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const SAMPLE_S = Number(process.env.SOAK_SAMPLE_S ?? 10);
const MODES = (process.env.SOAK_MODES ?? "thread,process").split(",");
const REGION = [0, 0, 800, 600];

async function soak(desk, win, mode) {
  const server = await desk.grantedServer(
    win,
    { safe_regions: [{ name: "r800x600", rect: REGION }] },
    { ...LOOSE, UIINSPECT_WORKER_ISOLATION: mode },
  );
  const r = { samples: [], ops: 0, errors: 0, loadavg_at_start: loadavg().map(round2) };
  const t0 = performance.now();
  const end = t0 + MINUTES * 60_000;
  const mix = [
    (c) => call(c, "screenshot_window", { hwnd: win.hwnd, region_name: "r800x600" }),
    (c) => call(c, "inspect_tree", { detail: "full", hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 }),
    (c) => call(c, "screenshot_window", { hwnd: win.hwnd, region_name: "r800x600" }),
    (c) => call(c, "find_elements", { detail: "full", hwnd: win.hwnd, role: "button" }),
    (c) => call(c, "list_windows", {}),
    (c) => call(c, "health_check", {}),
  ];
  const loop = (async () => {
    for (let i = 0; performance.now() < end; i += 1) {
      try {
        await mix[i % mix.length](server.client);
        r.ops += 1;
      } catch {
        r.errors += 1;
      }
    }
  })();
  const sampler = (async () => {
    for (;;) {
      const t = (performance.now() - t0) / 60_000;
      r.samples.push({ min: round2(t), ...memoryMiB(server.pid) });
      if (performance.now() >= end) return;
      await new Promise((res) =>
        setTimeout(res, Math.min(SAMPLE_S * 1000, Math.max(0, end - performance.now()))),
      );
    }
  })();
  await Promise.all([loop, sampler]);
  const health = await call(server.client, "health_check", {});
  await server.client.close();
  const series = (pick) => {
    const v = r.samples.map(pick);
    const at3 = r.samples.find((s) => s.min >= 3);
    return {
      start: v[0],
      min3: at3 ? pick(at3) : null,
      peak: Math.max(...v),
      end: v[v.length - 1],
      slope_after_min3_per_min: slope(r.samples.filter((s) => s.min >= 3).map((s) => [s.min, pick(s)])),
    };
  };
  const roles = [...new Set(r.samples.flatMap((s) => s.processes.map((p) => p.role)))];
  const ofRole = (role, k) => (s) => s.processes.filter((p) => p.role === role).reduce((a, p) => a + p[k], 0);
  return {
    ops: r.ops,
    errors: r.errors,
    loadavg_at_start: r.loadavg_at_start,
    loadavg_at_end: loadavg().map(round2),
    uia_worker: health.workers.find((w) => w.kind === "uia"),
    server_rss_mib: series((s) => s.rss),
    tree_rss_mib: series((s) => s.tree_rss),
    tree_pss_mib: series((s) => s.tree_pss),
    pss_by_role_mib: Object.fromEntries(roles.map((role) => [role, series(ofRole(role, "pss"))])),
    samples: r.samples,
  };
}

function round2(v) {
  return Math.round(v * 100) / 100;
}

const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const modes = {};
  for (const mode of MODES) modes[mode] = await soak(desk, win, mode);
  process.stdout.write(`${JSON.stringify({ minutes: MINUTES, modes }, null, 2)}\n`);
} finally {
  await desk.stop();
}
