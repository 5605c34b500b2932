// Accessibility walk throughput through the uia worker's handler (no threads, no MCP):
// nodes per second for 1,000- and 5,000-node simulated trees, on
//   - "provider": an in-memory provider with no latency (the handler's own cost), and
//   - "fake": the simulated desktop (UIINSPECT_PLATFORM=fake) reading a scenario file.
// The full MCP path is measured by bench/x11-floor.mjs. Run after `npm run build`:
//   node bench/a11y.mjs            (uses ./dist; A11Y_BENCH_DIST=/other/dist to override)
// Prints one JSON line per case to stderr and a Markdown table to stdout.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const dist = resolve(process.env.A11Y_BENCH_DIST ?? new URL("../dist", import.meta.url).pathname);
const load = (p) => import(pathToFileURL(join(dist, p)).href);
const { createUiaRuntime } = await load("workers/uia/handlers.js");
const { createFakePlatform } = await load("platforms/fake/index.js");

const RUNS = Number(process.env.A11Y_BENCH_RUNS ?? 15);
const WARMUP = Number(process.env.A11Y_BENCH_WARMUP ?? 5);
const FANOUT = 10;
const INSTANCE = {
  pid: 777,
  start_time: "2026-11-30T08:00:00.000Z",
  exe_path: "C:\\app\\app.exe",
  session: "1",
};
const WINDOW = {
  hwnd: "1001",
  title: "Bench",
  window_class: "Bench",
  pid: INSTANCE.pid,
  instance: INSTANCE,
  rect: [100, 100, 1380, 900],
  visible: true,
  iconic: false,
  foreground: true,
  on_top: false,
  z: 0,
};

/** Node i's children are FANOUT*i+1 … FANOUT*i+FANOUT (breadth-first numbering). */
function childrenOf(i, count) {
  const out = [];
  for (let c = FANOUT * i + 1; c <= FANOUT * i + FANOUT && c < count; c += 1) out.push(c);
  return out;
}

function memoryPlatform(count) {
  const handles = Array.from({ length: count }, (_, i) => ({ i }));
  const session = {
    root: async () => handles[0],
    facts: async (h) => ({
      role: h.i % 7 === 0 ? "list_item" : "button",
      name: `Item ${h.i}`,
      automation_id: `id${h.i}`,
      class_name: "Cls",
      rect: [110 + (h.i % 50), 110, 150 + (h.i % 50), 130],
      enabled: true,
      offscreen: false,
      focused: false,
      is_password: h.i % 97 === 0,
      patterns: ["invoke"],
    }),
    children: async (h) => childrenOf(h.i, count).map((c) => handles[c]),
    act: async () => {},
    alive: async () => true,
    dispose: async () => {},
  };
  const desktop = {
    platform: "fake",
    listWindows: async () => [WINDOW],
    getWindow: async () => WINDOW,
    isInstanceAlive: async () => true,
    virtualScreen: async () => [0, 0, 1920, 1080],
    health: async () => ({}),
    restoreWindow: async () => {},
    activateWindow: async () => {},
    closeWindow: async () => {},
    dispose: async () => {},
  };
  return { desktop, accessibility: { openSession: async () => session }, capture: {}, input: {} };
}

function scenarioNode(i, count) {
  const n = {
    role: i % 7 === 0 ? "list_item" : "button",
    name: `Item ${i}`,
    automation_id: `id${i}`,
    rect: [10 + (i % 50), 10, 50 + (i % 50), 30],
    patterns: ["invoke"],
  };
  const kids = childrenOf(i, count);
  if (kids.length > 0) n.children = kids.map((c) => scenarioNode(c, count));
  return n;
}

function fakePlatform(count, dir) {
  const path = join(dir, `desktop-${count}.json`);
  const scenario = {
    session: 1,
    foreground: 1001,
    windows: [
      {
        hwnd: 1001,
        title: "Bench",
        class: "Bench",
        pid: INSTANCE.pid,
        process_start: INSTANCE.start_time,
        process_path: INSTANCE.exe_path,
        rect: WINDOW.rect,
        visible: true,
        iconic: false,
        z: 0,
        fill: "#336699",
        tree: scenarioNode(0, count),
      },
    ],
  };
  writeFileSync(path, JSON.stringify(scenario));
  return createFakePlatform({ scenarioPath: path, workerKind: "uia" });
}

function ctx(platform) {
  return {
    signal: new AbortController().signal,
    deadline: Date.now() + 60_000,
    init: { kind: "uia", platform: "fake", fake_desktop: null, log_level: "silent" },
    platform,
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function bench(label, count, platform) {
  const rt = createUiaRuntime({ env: () => ({}) });
  const inspect = rt.handlers["a11y.inspect"];
  const args = {
    session_key: "bench",
    target: { hwnd: "1001", instance: INSTANCE },
    max_depth: 32,
    max_nodes: 5000,
    deadline_ms: 60_000,
    root_ref: null,
  };
  const times = [];
  let nodes = 0;
  let first = 0;
  for (let r = 0; r < WARMUP + RUNS; r += 1) {
    const t0 = performance.now();
    const out = await inspect(args, ctx(platform));
    const ms = performance.now() - t0;
    if (out.node_count !== count || out.truncated) throw new Error(`unexpected result: ${out.node_count}`);
    nodes = out.node_count;
    if (r === 0) first = ms; // opens the session; the JIT is still cold
    if (r >= WARMUP) times.push(ms);
  }
  await rt.shutdown();
  const ms = median(times);
  const row = {
    label,
    nodes,
    runs: RUNS,
    first_ms: Number(first.toFixed(1)),
    median_ms: Number(ms.toFixed(1)),
    nodes_per_s: Math.round(nodes / (ms / 1000)),
  };
  process.stderr.write(`${JSON.stringify(row)}\n`);
  return row;
}

const dir = mkdtempSync(join(tmpdir(), "uiinspect-a11y-bench-"));
const rows = [];
try {
  for (const count of [1000, 5000])
    rows.push(await bench("provider (in memory)", count, memoryPlatform(count)));
  for (const count of [1000, 5000]) rows.push(await bench("fake desktop", count, fakePlatform(count, dir)));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const lines = [
  `a11y.inspect through the handler (node ${process.version}; median of ${RUNS} runs after ${WARMUP} warm-ups; first = the cold first call)`,
  "",
  "| provider | nodes | first ms | median ms | nodes/s (median) |",
  "|---|---:|---:|---:|---:|",
  ...rows.map((r) => `| ${r.label} | ${r.nodes} | ${r.first_ms} | ${r.median_ms} | ${r.nodes_per_s} |`),
];
process.stdout.write(`${lines.join("\n")}\n`);
