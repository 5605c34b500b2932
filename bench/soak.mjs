// Memory soak on a private Xvfb desktop: one built server per isolation mode (thread and
// process, side by side), each granted gtk3-widget-factory, runs a mixed loop for
// SOAK_MINUTES (default 10): screenshot_window 800×600, inspect_tree, find_elements,
// list_windows, health_check. The resident set of the server and its worker processes is
// sampled every SOAK_SAMPLE_S seconds (default 10).
//
//   npm run build && node bench/soak.mjs
//   SOAK_MINUTES=2 SOAK_MODES=thread node bench/soak.mjs    (a short exploratory run)
//
// Prints one JSON object: per mode the samples (MiB: the server's RSS, and RSS and PSS summed
// over the server and its worker processes), start / peak / end, and the slope after minute 3
// (MiB/min, least squares), with the load average.
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { call, LOOSE } from "./lib/mcp.mjs";
import { memoryMiB, startDesk } from "./lib/x11desk.mjs";

const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const SAMPLE_S = Number(process.env.SOAK_SAMPLE_S ?? 10);
const MODES = (process.env.SOAK_MODES ?? "thread,process").split(",");
const REGION = [0, 0, 800, 600];

function slope(points) {
  const n = points.length;
  if (n < 2) return null;
  const mx = points.reduce((a, p) => a + p[0], 0) / n;
  const my = points.reduce((a, p) => a + p[1], 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? null : Math.round((num / den) * 100) / 100;
}

const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const runs = [];
  for (const mode of MODES) {
    const server = await desk.grantedServer(
      win,
      { safe_regions: [{ name: "r800x600", rect: REGION }] },
      { ...LOOSE, UIINSPECT_WORKER_ISOLATION: mode },
    );
    runs.push({ mode, server, samples: [], ops: 0, errors: 0 });
  }
  const t0 = performance.now();
  const end = t0 + MINUTES * 60_000;
  const mix = [
    (c) => call(c, "screenshot_window", { hwnd: win.hwnd, region_name: "r800x600" }),
    (c) => call(c, "inspect_tree", { hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 }),
    (c) => call(c, "screenshot_window", { hwnd: win.hwnd, region_name: "r800x600" }),
    (c) => call(c, "find_elements", { hwnd: win.hwnd, role: "button" }),
    (c) => call(c, "list_windows", {}),
    (c) => call(c, "health_check", {}),
  ];
  const loops = runs.map(async (r) => {
    for (let i = 0; performance.now() < end; i += 1) {
      try {
        await mix[i % mix.length](r.server.client);
        r.ops += 1;
      } catch {
        r.errors += 1;
      }
    }
  });
  const sampler = (async () => {
    for (;;) {
      const t = (performance.now() - t0) / 60_000;
      for (const r of runs) r.samples.push({ min: Math.round(t * 100) / 100, ...memoryMiB(r.server.pid) });
      if (performance.now() >= end) return;
      await new Promise((res) =>
        setTimeout(res, Math.min(SAMPLE_S * 1000, Math.max(0, end - performance.now()))),
      );
    }
  })();
  await Promise.all([...loops, sampler]);
  const out = {
    minutes: MINUTES,
    loadavg_at_end: loadavg().map((v) => Math.round(v * 100) / 100),
    modes: Object.fromEntries(
      runs.map((r) => {
        const series = (k) => {
          const v = r.samples.map((s) => s[k]);
          return {
            start: v[0],
            peak: Math.max(...v),
            end: v[v.length - 1],
            slope_after_min3_per_min: slope(r.samples.filter((s) => s.min >= 3).map((s) => [s.min, s[k]])),
          };
        };
        return [
          r.mode,
          {
            ops: r.ops,
            errors: r.errors,
            server_rss_mib: series("rss"),
            tree_rss_mib: series("tree_rss"),
            tree_pss_mib: series("tree_pss"),
            samples: r.samples,
          },
        ];
      }),
    ),
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  await desk.stop();
}
