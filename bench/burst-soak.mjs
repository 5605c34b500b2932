// Memory under bursts on the simulated desktop: one built server over stdio (thread mode),
// granted 3 windows, runs 8 lanes of mixed tools (inspect_tree, screenshot_window,
// find_elements, list_windows, health_check) plus a burst of 64 calls in flight every
// BURST_EVERY_S seconds (default 5), and rewrites the scenario every 10 s, for SOAK_MINUTES
// (default 10). The resident set of the server and every process below it is sampled every
// SOAK_SAMPLE_S seconds (default 5), with the server's open file descriptors and threads.
//
//   npm run build && node bench/burst-soak.mjs
//   SOAK_MINUTES=3 BENCH_BASELINE=/other/dist/cli.js node bench/burst-soak.mjs   # this build, then the other
//
// Prints one JSON object: per build the samples (MiB), the value at minute 1, the peak, the
// end, the slope after minute 1 (MiB/min, least squares), calls and failures, load averages.
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { CLI, call, LOOSE, RUFFLE, scratch, startServer } from "./lib/mcp.mjs";
import { fdsAndThreads, memory, round2, slope, smapsBreakdown } from "./lib/stats.mjs";

const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const SAMPLE_S = Number(process.env.SOAK_SAMPLE_S ?? 5);
const BURST_EVERY_S = Number(process.env.BURST_EVERY_S ?? 5);
const BURST = 64;
const LANES = 8;
/** SOAK_SMAPS=1: where the server's resident memory was at the peak sample (lib/stats.mjs). */
const SMAPS = process.env.SOAK_SMAPS === "1";
/** One client may open 3 consent dialogs a minute: 3 windows are granted at once. */
const WINDOWS = 3;

const tree = (n) => ({
  role: "window",
  name: `Soak ${n}`,
  children: Array.from({ length: 40 }, (_, i) => ({
    role: "button",
    name: `Button ${i}`,
    automation_id: `b${i}`,
    rect: [20 + (i % 8) * 70, 60 + Math.floor(i / 8) * 40, 80 + (i % 8) * 70, 90 + Math.floor(i / 8) * 40],
    patterns: ["invoke"],
  })),
});
const scenario = (gen) => ({
  session: 1,
  foreground: 1001,
  consent: { answer: "approve", delay_ms: 0 },
  windows: Array.from({ length: WINDOWS }, (_, i) => ({
    hwnd: 1001 + i,
    title: `Ruffle - soak${i}.swf`,
    class: "RuffleWindow",
    pid: 4001 + i,
    process_start: "2026-11-30T08:00:00Z",
    process_path: RUFFLE,
    rect: [(i % 2) * 960, Math.floor(i / 2) * 540, (i % 2) * 960 + 900, Math.floor(i / 2) * 540 + 520],
    visible: true,
    iconic: false,
    z: i,
    fill: gen % 2 === 0 ? "#3366cc" : "#cc6633",
    paint: [{ rect: [20, 60, 300, 200], fill: "#202020" }],
    tree: tree(i),
  })),
});
const policy = {
  schema_version: 1,
  policy_id: "bench-burst-soak",
  application: { executable_path: RUFFLE, title_patterns: ["Ruffle - *"] },
  allowed_actions: ["observe", "inspect"],
  safe_regions: [{ name: "r800x480", rect: [0, 0, 800, 480] }],
  limits: { max_actions_per_minute: 10_000_000, max_screenshot_pixels_per_minute: 2_000_000_000_000 },
};

async function soak(cli) {
  const s = scratch(scenario(0), policy);
  const server = await startServer(
    {
      ...LOOSE,
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: s.scenarioPath,
      DESKTOP_AUTOMATION_POLICY_FILE: s.policyPath,
      UIINSPECT_WORKER_ISOLATION: "thread",
    },
    cli,
  );
  const c = server.client;
  for (let i = 0; i < WINDOWS; i++)
    await call(c, "request_access", { hwnd: 1001 + i, capabilities: ["observe", "inspect"] });
  const mix = [
    (h) => call(c, "inspect_tree", { hwnd: h }),
    (h) => call(c, "screenshot_window", { hwnd: h, region_name: "r800x480" }),
    (h) => call(c, "find_elements", { hwnd: h, role: "button" }),
    () => call(c, "list_windows", {}),
    (h) => call(c, "screenshot_window", { hwnd: h, region_name: "r800x480" }),
    () => call(c, "health_check", {}),
  ];
  const r = {
    samples: [],
    calls: 0,
    failures: 0,
    failure_reasons: {},
    loadavg_at_start: loadavg().map(round2),
  };
  const t0 = performance.now();
  const end = t0 + MINUTES * 60_000;
  const one = async (k) => {
    try {
      await mix[k % mix.length](1001 + (k % WINDOWS));
      r.calls += 1;
    } catch (e) {
      r.failures += 1;
      const why = /"code":"([a-z_]+)"/.exec(String(e))?.[1] ?? String(e).slice(0, 80);
      r.failure_reasons[why] = (r.failure_reasons[why] ?? 0) + 1;
    }
  };
  const lanes = Array.from({ length: LANES }, async (_, lane) => {
    for (let k = lane; performance.now() < end; k += LANES) await one(k);
  });
  const bursts = (async () => {
    for (let b = 0; performance.now() < end; b++) {
      await Promise.all(Array.from({ length: BURST }, (_, k) => one(b * BURST + k)));
      await new Promise((res) => setTimeout(res, BURST_EVERY_S * 1000));
    }
  })();
  const rewrites = (async () => {
    for (let g = 1; performance.now() < end; g++) {
      await new Promise((res) => setTimeout(res, 10_000));
      s.write(scenario(g));
    }
  })();
  let peak = 0;
  const sample = () => {
    const m = memory(server.pid);
    r.samples.push({ min: round2((performance.now() - t0) / 60_000), ...m, ...fdsAndThreads(server.pid) });
    if (SMAPS && m.total > peak) r.server_smaps_mib_at_peak = smapsBreakdown(server.pid);
    peak = Math.max(peak, m.total);
  };
  const sampler = (async () => {
    for (;;) {
      sample();
      if (performance.now() >= end) return;
      await new Promise((res) =>
        setTimeout(res, Math.min(SAMPLE_S * 1000, Math.max(0, end - performance.now()))),
      );
    }
  })();
  await Promise.all([...lanes, bursts, rewrites, sampler]);
  sample();
  if (SMAPS) r.server_smaps_mib_at_end = smapsBreakdown(server.pid);
  await c.close();
  const totals = r.samples.map((x) => x.total);
  const after1 = r.samples.filter((x) => x.min >= 1);
  return {
    ...r,
    calls_per_s: round2(r.calls / ((performance.now() - t0) / 1000)),
    total_mib: {
      start: totals[0],
      at_1min: after1[0]?.total ?? null,
      peak: Math.max(...totals),
      peak_after_1min: after1.length > 0 ? Math.max(...after1.map((x) => x.total)) : null,
      end: totals.at(-1),
      slope_after_1min_per_min: slope(after1.map((x) => [x.min, x.total])),
    },
    loadavg_at_end: loadavg().map(round2),
  };
}

// BENCH_CLI: this build from elsewhere (a frozen copy, so a rebuild meanwhile cannot touch it).
const ours = process.env.BENCH_CLI ?? CLI;
const builds = [ours, ...(process.env.BENCH_BASELINE ?? "").split(",").filter(Boolean)];
const out = {
  bench: "burst-soak",
  minutes: MINUTES,
  lanes: LANES,
  burst: BURST,
  burst_every_s: BURST_EVERY_S,
  runs: [],
};
for (const cli of builds) out.runs.push({ build: cli === ours ? "this" : cli, ...(await soak(cli)) });
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
