// Accessibility through the full MCP path: SDK client → stdio → built CLI → authorization chain
// → uia worker (fake provider over a scenario file) → refs externalized → structured + text
// result back. Simulated desktop.
//
//   npm run build && node bench/mcp-a11y.mjs
//   BENCH_RUNS=10 BENCH_CONCURRENT=32 BENCH_ROUNDS=5 node bench/mcp-a11y.mjs
//
// Prints one JSON object on stdout:
//   - nodes/s of inspect_tree for a 1,000-node and a 5,000-node tree (fan-out 10), median of runs;
//   - the supervisor's event-loop delay (health_check) before and after rounds of 32 concurrent
//     inspect_tree calls on 6 windows, measured on a server started just for that load.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const CLI = resolve(import.meta.dirname, "../dist/cli.js");
const RUNS = Number(process.env.BENCH_RUNS ?? 8);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const EXE = "C:\\Apps\\tree\\tree.exe";
const FANOUT = 10;

/** A tree of exactly `count` nodes, breadth-first numbering, FANOUT children per node. */
function tree(count, prefix) {
  const nodes = Array.from({ length: count }, (_, i) => ({
    role: i === 0 ? "window" : i % 7 === 0 ? "list_item" : "button",
    name: `${prefix} item ${i}`,
    automation_id: `${prefix}-${i}`,
    rect: [10 + (i % 50), 10 + (i % 40), 60 + (i % 50), 30 + (i % 40)],
    patterns: i === 0 ? [] : ["invoke"],
    children: [],
  }));
  for (let i = 1; i < count; i++) nodes[Math.floor((i - 1) / FANOUT)].children.push(nodes[i]);
  return nodes[0];
}

function window(i, nodes) {
  return {
    hwnd: 6001 + i,
    title: `Tree ${i}`,
    class: "TreeWindow",
    pid: 7001 + (i % 3),
    process_start: "2026-11-30T08:00:00Z",
    process_path: EXE,
    rect: [(i % 3) * 640, Math.floor(i / 3) * 500, (i % 3) * 640 + 600, Math.floor(i / 3) * 500 + 480],
    visible: true,
    iconic: false,
    z: i,
    fill: "#336699",
    tree: tree(nodes, `W${i}`),
  };
}

const baseEnv = {};
for (const [k, v] of Object.entries(process.env))
  if (v !== undefined && !k.startsWith("DESKTOP_AUTOMATION_") && !k.startsWith("UIINSPECT_")) baseEnv[k] = v;

async function server(dir, windows) {
  const desktop = join(dir, `desktop-${windows.length}.json`);
  writeFileSync(
    desktop,
    JSON.stringify({ session: 1, foreground: 6001, windows, consent: { answer: "approve", delay_ms: 0 } }),
  );
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, "serve"],
    env: {
      ...baseEnv,
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: desktop,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "Tree *",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: EXE,
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "inspect",
      UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: "100000",
      UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "100000",
      UIINSPECT_TREE_DEADLINE_MS: "60000",
      UIINSPECT_LOG_LEVEL: "warn",
    },
    stderr: "ignore",
  });
  const client = new Client({ name: "bench-a11y", version: "1.0.0" });
  await client.connect(transport);
  const call = async (name, args) => {
    const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 300_000 });
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent)}`);
    return r;
  };
  for (const w of windows.slice(0, 3)) await call("request_access", { hwnd: w.hwnd });
  return { client, call };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const round = (v) => Math.round(v * 100) / 100;

const dir = mkdtempSync(join(tmpdir(), "uiinspect-bench-a11y-"));
const out = { bench: "mcp-a11y", runs: RUNS, trees: [], concurrent: null };
try {
  // Throughput: one server with a 1,000-node and a 5,000-node window.
  const s1 = await server(dir, [window(0, 1000), window(1, 5000)]);
  try {
    for (const [hwnd, size] of [
      [6001, 1000],
      [6002, 5000],
    ]) {
      const once = async () => {
        const t0 = performance.now();
        const r = await s1.call("inspect_tree", { detail: "full", hwnd, max_depth: 32, max_nodes: 5000 });
        const ms = performance.now() - t0;
        const bytes = JSON.stringify(r).length;
        return { ms, nodes: r.structuredContent.node_count, truncated: r.structuredContent.truncated, bytes };
      };
      for (let i = 0; i < WARMUP; i++) await once();
      const runs = [];
      for (let i = 0; i < RUNS; i++) runs.push(await once());
      const ms = median(runs.map((r) => r.ms));
      out.trees.push({
        tree_nodes: size,
        node_count: runs[0].nodes,
        truncated: runs.some((r) => r.truncated),
        median_ms: round(ms),
        min_ms: round(Math.min(...runs.map((r) => r.ms))),
        max_ms: round(Math.max(...runs.map((r) => r.ms))),
        nodes_per_s: Math.round((runs[0].nodes * 1000) / ms),
        result_bytes: runs[0].bytes,
      });
    }
  } finally {
    await s1.client.close();
  }

  // Event-loop delay under concurrent load: a fresh server so its histogram holds little else.
  const windows = Array.from({ length: 6 }, (_, i) => window(i, 200));
  const s2 = await server(dir, windows);
  try {
    const before = (await s2.call("health_check", {})).structuredContent.event_loop;
    const latencies = [];
    const t0 = performance.now();
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      await Promise.all(
        Array.from({ length: CONCURRENT }, async (_, k) => {
          const t = performance.now();
          const r = await s2.call("inspect_tree", {
            detail: "full",
            hwnd: windows[k % windows.length].hwnd,
            max_nodes: 500,
          });
          latencies.push(performance.now() - t);
          if (r.structuredContent.node_count !== 200) throw new Error("unexpected node count");
        }),
      );
    }
    const wall = performance.now() - t0;
    const after = (await s2.call("health_check", {})).structuredContent.event_loop;
    const s = [...latencies].sort((a, b) => a - b);
    out.concurrent = {
      in_flight: CONCURRENT,
      rounds: ROUNDS,
      windows: windows.length,
      tree_nodes: 200,
      calls_per_s: round((latencies.length * 1000) / wall),
      call_p50_ms: round(s[Math.floor(s.length * 0.5)]),
      call_p99_ms: round(s[Math.min(s.length - 1, Math.floor(s.length * 0.99))]),
      server_event_loop_before: before,
      server_event_loop_after: after,
    };
  } finally {
    await s2.client.close();
  }
  out.node = process.version;
  out.cpus = (await import("node:os")).cpus().length;
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
