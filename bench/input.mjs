// Input benchmark on the simulated desktop, through the full MCP path: the built CLI
// (`dist/cli.js serve`) driven by the SDK Client over stdio, policy → grant → budgets → input
// worker → last-moment verification → fake effects (appended to effects_log).
//
//   npx tsc -p tsconfig.json && node bench/input.mjs
//   BENCH_ITER=100 node bench/input.mjs
//
// Measures (sequential calls, one client, like an agent):
//   - actions/s and latency for hover_window (dwell 0), send_key (hold 0), scroll_window and
//     click_window (the last two include the SPEC's 150 ms settle; click also the 50 ms press);
//   - the round trip of a call the worker refuses at its first verification (occluded point:
//     supervisor + worker hop + one verifyTarget, no effect), interleaved with a call refused in
//     the supervisor just before the input worker (no confirmation token); the per-pair
//     difference is the worker hop plus one verification;
//   - verifyTarget itself, timed in-process on the fake platform (what the worker runs before
//     each effect: a fresh enumeration of the desktop plus the identity/focus/bounds/occlusion
//     checks), with the file unchanged and with the file rewritten before every call.
// Prints one JSON object on stdout.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const DIST = resolve(process.env.UIINSPECT_DIST ?? join(ROOT, "dist"));
const ITER = Number(process.env.BENCH_ITER ?? 40);
const VERIFY_ITER = Number(process.env.BENCH_VERIFY_ITER ?? 2000);
const WARMUP = 5;
const RUFFLE = "C:\\Program Files\\ruffle\\bin\\ruffle.exe";

const dir = mkdtempSync(join(tmpdir(), "uiinspect-bench-input-"));
const desktopPath = join(dir, "desktop.json");
const ruffle = {
  hwnd: 1001,
  title: "Ruffle - game.swf",
  class: "RuffleWindow",
  pid: 4242,
  process_start: "2026-11-30T08:00:00Z",
  process_path: RUFFLE,
  rect: [100, 100, 924, 740],
  visible: true,
  iconic: false,
  z: 1,
  fill: "#3366cc",
};
// A second window covers the Ruffle window's top-left corner (for the refused-at-verification call).
const cover = {
  ...ruffle,
  hwnd: 2002,
  title: "Other",
  class: "Other",
  pid: 7777,
  process_path: "C:\\Other\\other.exe",
  rect: [0, 0, 200, 200],
  z: 0,
};
const scenario = {
  session: 1,
  foreground: 1001,
  windows: [ruffle, cover],
  consent: { answer: "approve", delay_ms: 0 },
  effects_log: join(dir, "effects.jsonl"),
};
writeFileSync(desktopPath, JSON.stringify(scenario));
const policyPath = join(dir, "policy.json");
writeFileSync(
  policyPath,
  JSON.stringify({
    schema_version: 1,
    policy_id: "bench",
    application: { executable_path: RUFFLE, title_patterns: ["Ruffle - *"] },
    allowed_actions: ["observe", "hover", "click", "key", "text", "drag", "close"],
    limits: { max_actions_per_minute: 100000, max_text_chars_per_minute: 1000000 },
  }),
);

const round = (v) => Math.round(v * 1000) / 1000;
function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return {
    n: s.length,
    p50_ms: round(q(0.5)),
    p90_ms: round(q(0.9)),
    mean_ms: round(mean),
    min_ms: round(s[0]),
  };
}

async function timeCalls(fn, iter = ITER) {
  for (let i = 0; i < WARMUP; i++) await fn();
  const lat = [];
  const t0 = performance.now();
  for (let i = 0; i < iter; i++) {
    const s = performance.now();
    await fn();
    lat.push(performance.now() - s);
  }
  const wall = performance.now() - t0;
  return { ...stats(lat), per_second: round((iter * 1000) / wall) };
}

const env = {};
for (const [k, v] of Object.entries(process.env))
  if (v !== undefined && !k.startsWith("DESKTOP_AUTOMATION_") && !k.startsWith("UIINSPECT_")) env[k] = v;

/** One server session (the built CLI over stdio) with its own client. */
async function session(name) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(DIST, "cli.js"), "serve"],
    env: {
      ...env,
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: desktopPath,
      DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
      UIINSPECT_LOG_LEVEL: "warn",
      UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE: "100000",
      UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "100000",
      UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: "100000",
    },
    stderr: "pipe",
  });
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(transport);
  const call = async (tool, args, expectCode) => {
    const r = await client.callTool({ name: tool, arguments: args });
    const code = r.isError ? r.structuredContent?.error?.code : undefined;
    if (code !== expectCode)
      throw new Error(`${tool}: expected ${expectCode ?? "success"}, got ${code ?? "success"}`);
    return r;
  };
  return { client, call };
}

/** Alternates two calls so that load drift on a shared machine hits both alike. */
async function timeInterleaved(fa, fb, iter = ITER) {
  for (let i = 0; i < WARMUP; i++) {
    await fa();
    await fb();
  }
  const la = [];
  const lb = [];
  const diff = [];
  for (let i = 0; i < iter; i++) {
    let s = performance.now();
    await fa();
    const a = performance.now() - s;
    s = performance.now();
    await fb();
    const b = performance.now() - s;
    la.push(a);
    lb.push(b);
    diff.push(a - b);
  }
  return { a: stats(la), b: stats(lb), a_minus_b: stats(diff) };
}

const out = { platform: "fake", iterations: ITER, node: process.version, mcp: {}, verification: {} };
const at = { hwnd: 1001, x: 400, y: 400 };
{
  const { client, call } = await session("bench-input");
  try {
    await call("request_access", { hwnd: 1001 });
    out.mcp.hover_window_dwell0 = await timeCalls(() => call("hover_window", { ...at, dwell_ms: 0 }));
    out.mcp.send_key_hold0 = await timeCalls(() => call("send_key", { hwnd: 1001, key: "a", hold_ms: 0 }));
    out.mcp.scroll_window = await timeCalls(() => call("scroll_window", { ...at, notches: 1 }));
    out.mcp.click_window = await timeCalls(() => call("click_window", at));
    // A: refused by the input worker at its first verifyTarget (covered point), no effect.
    // B: refused in the supervisor at the confirmation token (send_text without one): the same
    //    chain up to there (policy, live enumeration in the capture worker, target, grant), but
    //    no input worker. A − B ≈ the input-worker hop plus one verification.
    const ab = await timeInterleaved(
      () => call("hover_window", { hwnd: 1001, x: 10, y: 10, dwell_ms: 0 }, "occluded"),
      () => call("send_text", { hwnd: 1001, text: "x" }, "confirmation_required"),
    );
    out.mcp.refused_in_worker_occluded = ab.a;
    out.mcp.refused_in_supervisor_confirmation_required = ab.b;
    out.mcp.input_worker_hop_plus_one_verify = ab.a_minus_b;
  } finally {
    await client.close();
  }
}

// verifyTarget in-process on the fake platform: the worker-side cost per verification.
{
  const { createFakePlatform } = await import(pathToFileURL(join(DIST, "platforms/fake/index.js")).href);
  const { verifyTarget } = await import(pathToFileURL(join(DIST, "workers/verify.js")).href);
  const platform = createFakePlatform({ scenarioPath: desktopPath, workerKind: "input" });
  const w = (await platform.desktop.listWindows()).find((x) => x.hwnd === "1001");
  const expected = { hwnd: "1001", instance: w.instance };
  const opts = { requireForeground: true, points: [{ x: 400, y: 400 }] };
  const run = async (before) => {
    for (let i = 0; i < 50; i++) {
      before?.(i);
      await verifyTarget(platform.desktop, expected, opts);
    }
    const lat = [];
    for (let i = 0; i < VERIFY_ITER; i++) {
      before?.(i);
      const s = process.hrtime.bigint();
      await verifyTarget(platform.desktop, expected, opts);
      lat.push(Number(process.hrtime.bigint() - s) / 1e6);
    }
    return stats(lat);
  };
  out.verification.verify_target_file_unchanged = await run();
  // Rewritten before each call (a desktop that keeps changing): includes re-reading the JSON.
  out.verification.verify_target_file_rewritten = await run((i) =>
    writeFileSync(desktopPath, JSON.stringify({ ...scenario, background: i % 2 ? "#000001" : "#000002" })),
  );
  // verifyTarget calls per action (each a fresh enumeration); passive mode adds one getWindow.
  out.verification.per_action = {
    hover_window: 1,
    scroll_window: 2,
    click_window: 2,
    double_click_window: 3,
    send_key: 1,
    send_key_sequence: "1 per step",
    send_text: "1 per 32 code points",
    drag_window: "2 + 1 per leg",
  };
}

rmSync(dir, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
