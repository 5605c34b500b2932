// Screenshots of an 800×600 region through the full MCP path: the SDK client → stdio → the
// built CLI (`node dist/cli.js serve`) → authorization chain → capture worker (verify, capture,
// verify, masks, PNG with sharp) → base64 ImageContent back. Simulated desktop.
//
//   npm run build && node bench/mcp-capture.mjs
//   BENCH_SHOTS=100 BENCH_CONCURRENCY=4 node bench/mcp-capture.mjs
//
// Prints one JSON object on stdout: sequential throughput and p50/p99 latency, the same with
// BENCH_CONCURRENCY calls in flight, PNG sizes, and the server's event-loop delay.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const CLI = resolve(import.meta.dirname, "../dist/cli.js");
const SHOTS = Number(process.env.BENCH_SHOTS ?? 100);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const EXE = "C:\\Program Files\\ruffle\\bin\\ruffle.exe";

/** A UI-like window: flat fill plus a few hundred painted rects (panels, buttons, "text" runs). */
function paint() {
  const out = [];
  let seed = 0x1234567;
  const rnd = (n) => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  out.push({ rect: [0, 0, 824, 40], fill: "#1a1a1a" });
  out.push({ rect: [12, 40, 212, 640], fill: "#f0f0f0" });
  for (let line = 0; line < 36; line++) {
    let x = 20;
    const y = 50 + line * 16;
    while (x < 200) {
      const w = 4 + rnd(20);
      out.push({ rect: [x, y, Math.min(205, x + w), y + 9], fill: "#202020" });
      x += w + 3 + rnd(6);
    }
  }
  for (let i = 0; i < 120; i++) {
    const x = 230 + rnd(560);
    const y = 60 + rnd(540);
    const hex = (v) => v.toString(16).padStart(2, "0");
    out.push({
      rect: [x, y, Math.min(812, x + 10 + rnd(60)), Math.min(640, y + 8 + rnd(30))],
      fill: `#${hex(rnd(256))}${hex(rnd(256))}${hex(rnd(256))}`,
    });
  }
  return out;
}

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  const r = (v) => Math.round(v * 100) / 100;
  return {
    p50_ms: r(q(0.5)),
    p99_ms: r(q(0.99)),
    min_ms: r(s[0]),
    max_ms: r(s[s.length - 1]),
    mean_ms: r(s.reduce((a, b) => a + b, 0) / s.length),
  };
}

const dir = mkdtempSync(join(tmpdir(), "uiinspect-bench-capture-"));
const desktop = join(dir, "desktop.json");
writeFileSync(
  desktop,
  JSON.stringify({
    session: 1,
    foreground: 1001,
    windows: [
      {
        hwnd: 1001,
        title: "Ruffle - bench.swf",
        class: "RuffleWindow",
        pid: 4242,
        process_start: "2026-11-30T08:00:00Z",
        process_path: EXE,
        rect: [100, 100, 924, 752],
        visible: true,
        iconic: false,
        z: 0,
        fill: "#3366cc",
        paint: paint(),
      },
    ],
    consent: { answer: "approve", delay_ms: 0 },
  }),
);
const policy = join(dir, "policy.json");
writeFileSync(
  policy,
  JSON.stringify({
    schema_version: 1,
    policy_id: "bench",
    application: { executable_path: EXE, title_patterns: ["Ruffle - *"] },
    allowed_actions: ["observe"],
    safe_regions: [{ name: "frame", rect: [12, 40, 812, 640] }],
    screenshot_masks: [{ rect: [600, 40, 812, 80] }],
    limits: { max_screenshot_pixels_per_minute: 2_000_000_000 },
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
    DESKTOP_AUTOMATION_POLICY_FILE: policy,
    UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: "100000",
    UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "100000",
    UIINSPECT_LOG_LEVEL: "warn",
  },
  stderr: "ignore",
});
const client = new Client({ name: "bench-capture", version: "1.0.0" });
await client.connect(transport);

async function call(name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent)}`);
  return r;
}

try {
  await call("request_access", { hwnd: 1001, capabilities: ["observe"] });
  const shot = async () => {
    const t0 = performance.now();
    const r = await call("screenshot_window", { hwnd: 1001, region_name: "frame" });
    const ms = performance.now() - t0;
    const img = r.content.find((c) => c.type === "image");
    return { ms, pngBytes: Math.floor((img.data.length * 3) / 4), size: r._meta.image_size };
  };
  for (let i = 0; i < WARMUP; i++) await shot();

  const seq = [];
  let png = 0;
  let size = null;
  const t0 = performance.now();
  for (let i = 0; i < SHOTS; i++) {
    const s = await shot();
    seq.push(s.ms);
    png = s.pngBytes;
    size = s.size;
  }
  const seqWall = performance.now() - t0;

  const par = [];
  const t1 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < SHOTS) {
        next++;
        par.push((await shot()).ms);
      }
    }),
  );
  const parWall = performance.now() - t1;

  const health = await call("health_check", {});
  const round = (v) => Math.round(v * 100) / 100;
  const out = {
    bench: "mcp-capture",
    region: size,
    png_bytes: png,
    shots: SHOTS,
    sequential: { screenshots_per_s: round((SHOTS * 1000) / seqWall), ...stats(seq) },
    concurrent: {
      in_flight: CONCURRENCY,
      screenshots_per_s: round((par.length * 1000) / parWall),
      ...stats(par),
    },
    server_event_loop: health.structuredContent.event_loop,
    node: process.version,
    cpus: (await import("node:os")).cpus().length,
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  await client.close();
  rmSync(dir, { recursive: true, force: true });
}
