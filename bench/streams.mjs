// Peak RSS of the server process with 16 concurrent screenshot streams under a 64 MiB
// screenshot memory budget, through the full MCP path (SDK client → stdio → built CLI →
// capture worker) on the simulated desktop. The server's peak RSS is VmHWM of
// /proc/<pid>/status of the spawned process (worker threads included: same process).
//
//   npm run build && node bench/streams.mjs
//   BENCH_STREAMS=16 BENCH_SHOTS_PER_STREAM=6 BENCH_BUDGET_MIB=64 node bench/streams.mjs
//
// Prints one JSON object on stdout. Linux only (reads /proc).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const CLI = resolve(import.meta.dirname, "../dist/cli.js");
const STREAMS = Number(process.env.BENCH_STREAMS ?? 16);
const SHOTS = Number(process.env.BENCH_SHOTS_PER_STREAM ?? 6);
const BUDGET = Number(process.env.BENCH_BUDGET_MIB ?? 64) * 1024 * 1024;
const EXE = "C:\\Apps\\stream\\stream.exe";
const W = 1000;
const H = 900;
const COLS = 4;

const windows = Array.from({ length: 8 }, (_, i) => ({
  hwnd: 4001 + i,
  title: `Stream ${i}`,
  class: "StreamWindow",
  pid: 5001 + (i % 3),
  process_start: "2026-11-30T08:00:00Z",
  process_path: EXE,
  rect: [(i % COLS) * W, Math.floor(i / COLS) * H, (i % COLS) * W + W, Math.floor(i / COLS) * H + H],
  visible: true,
  iconic: false,
  z: i,
  fill: `#${(0x10 + i * 0x1c).toString(16).padStart(2, "0")}66${(0x30 + i * 0x11).toString(16).padStart(2, "0")}`,
  paint: Array.from({ length: 40 }, (_, k) => ({
    rect: [
      20 + (k % 8) * 110,
      60 + Math.floor(k / 8) * 150,
      110 + (k % 8) * 110,
      180 + Math.floor(k / 8) * 150,
    ],
    fill: `#${((k * 37 + i * 11) % 256).toString(16).padStart(2, "0")}${((k * 91) % 256).toString(16).padStart(2, "0")}40`,
  })),
}));

function status(pid) {
  const text = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN);
  return { vm_hwm_kib: kb("VmHWM"), vm_rss_kib: kb("VmRSS") };
}

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  const r = (v) => Math.round(v * 100) / 100;
  return { p50_ms: r(q(0.5)), p99_ms: r(q(0.99)), max_ms: r(s[s.length - 1]) };
}

const dir = mkdtempSync(join(tmpdir(), "uiinspect-bench-streams-"));
const desktop = join(dir, "desktop.json");
writeFileSync(
  desktop,
  JSON.stringify({
    session: 1,
    foreground: 4001,
    virtual_screen: [0, 0, COLS * W, 2 * H],
    windows,
    consent: { answer: "approve", delay_ms: 0 },
  }),
);

const env = {};
for (const [k, v] of Object.entries(process.env))
  if (v !== undefined && !k.startsWith("DESKTOP_AUTOMATION_") && !k.startsWith("UIINSPECT_")) env[k] = v;
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [CLI, "serve"],
  env: {
    ...env,
    UIINSPECT_PLATFORM: "fake",
    UIINSPECT_FAKE_DESKTOP: desktop,
    DESKTOP_AUTOMATION_ALLOWED_TITLES: "Stream *",
    DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: EXE,
    DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe",
    DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "true",
    DESKTOP_AUTOMATION_SCREENSHOT_MEMORY_BUDGET_BYTES: String(BUDGET),
    DESKTOP_AUTOMATION_MAX_SCREENSHOT_PIXELS_PER_MINUTE: "2000000000",
    UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: "100000",
    UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "100000",
    UIINSPECT_LOG_LEVEL: "warn",
  },
  stderr: "ignore",
});
const client = new Client({ name: "bench-streams", version: "1.0.0" });
await client.connect(transport);
const pid = transport.pid;

async function call(name, args) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 300_000 });
}

try {
  for (const hwnd of [4001, 4002, 4003]) {
    const r = await call("request_access", { hwnd });
    if (r.isError) throw new Error(JSON.stringify(r.structuredContent));
  }
  // One screenshot first so every lazily loaded module (sharp, libvips) is counted in the baseline.
  await call("screenshot_window", { hwnd: 4001 });
  const idle = status(pid);

  const latencies = [];
  const codes = {};
  let ok = 0;
  let pngBytes = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: STREAMS }, async (_, s) => {
      const hwnd = windows[s % windows.length].hwnd;
      for (let k = 0; k < SHOTS; k++) {
        const t = performance.now();
        const r = await call("screenshot_window", { hwnd });
        latencies.push(performance.now() - t);
        if (r.isError) {
          const code = r.structuredContent?.error?.code ?? "unknown";
          codes[code] = (codes[code] ?? 0) + 1;
        } else {
          ok++;
          pngBytes = Math.floor((r.content[0].data.length * 3) / 4);
        }
      }
    }),
  );
  const wall = performance.now() - t0;
  const after = status(pid);
  const limits = (await call("get_rate_limit_state", {})).structuredContent.memory;
  const health = (await call("health_check", {})).structuredContent;
  const mib = (kib) => Math.round((kib / 1024) * 10) / 10;
  const out = {
    bench: "streams",
    streams: STREAMS,
    shots: STREAMS * SHOTS,
    ok,
    refused: codes,
    frame: [W - 24, H - 52],
    png_bytes: pngBytes,
    reservation_bytes_per_frame: (W - 24) * (H - 52) * 8,
    budget_bytes: BUDGET,
    budget_peak_bytes: limits.peak_bytes,
    budget_peak_within_limit: limits.peak_bytes <= limits.limit_bytes,
    server_pid_rss: {
      idle_vm_hwm_mib: mib(idle.vm_hwm_kib),
      idle_vm_rss_mib: mib(idle.vm_rss_kib),
      peak_vm_hwm_mib: mib(after.vm_hwm_kib),
      after_vm_rss_mib: mib(after.vm_rss_kib),
    },
    screenshots_per_s: Math.round(((STREAMS * SHOTS * 1000) / wall) * 100) / 100,
    latency: stats(latencies),
    server_event_loop: health.event_loop,
    node: process.version,
    cpus: (await import("node:os")).cpus().length,
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  await client.close();
  rmSync(dir, { recursive: true, force: true });
}
