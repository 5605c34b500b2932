// Authorization-chain overhead through the full MCP path: the SDK Client talks over stdio to the
// built server (dist/) on the simulated desktop, with 1, 10 and 100 live grants for one client.
//   npm run build && node bench/authz.mjs [--n 400] [--grants 1,10,100] [--windows 100]
//
// What is compared (both make exactly one desktop.list worker round trip, both are audited):
//   baseline  get_window_state(hwnd)          policy → discovery budget → list → pick target
//   guarded   wait_for_title_change(hwnd, timeout_ms 0)
//             policy → list → pick target → instance-change scan over the client's grants →
//             grant lookup + capability → inspection budgets (client + per target) → returns at once
//   preview   preview_action(hwnd, "click")  the chain up to the target plus grant/decision/token lookups
// added = guarded − baseline, as the median and p99 of per-iteration paired differences (the calls
// are interleaved so machine load hits both alike), plus each call's own p50/p99.
// Throughput: request_access on an already approved instance (source "cached": no dialog, one
// permit-free decision lookup, two desktop.list round trips for the before/after identity check),
// sequential and with 16 calls in flight.
//
// The measured window (1001) gets its grant from the simulated dialog like any client; the other
// live grants are put into the server's GrantStore right after the MCP handshake (the dialog limit
// of 3 per minute per client would otherwise take 33 minutes for 100 grants). They are ordinary
// grants for other live instances of the same client, which is what the chain walks.
import { mkdtempSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const DIST = join(ROOT, "dist");
const RUFFLE = "C:\\Program Files\\ruffle\\bin\\ruffle.exe";

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
}

if (process.argv[2] === "server") {
  // Child: `serve`, plus seeding BENCH_EXTRA_GRANTS grants for other live windows once the client
  // identity is known (after initialize).
  const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
  const { buildSupervisor } = await import(`${DIST}/supervisor/bootstrap.js`);
  const { createMcpServer } = await import(`${DIST}/supervisor/mcp/server.js`);
  const extra = Number(process.env.BENCH_EXTRA_GRANTS ?? "0");
  const sup = buildSupervisor();
  const seed = async () => {
    const { windows } = await sup.workers.capture.call("desktop.list", {}, { deadlineMs: 15_000 });
    const others = windows.filter((w) => w.hwnd !== "1001" && w.instance).slice(0, extra);
    for (const w of others)
      sup.grants.put({
        client: sup.client().hash,
        instance: w.instance,
        hwnd: w.hwnd,
        capabilities: ["observe", "inspect", "click"],
      });
  };
  const server = createMcpServer(sup, (info) => {
    sup.setClient(info);
    seed().catch((e) => process.stderr.write(`seed failed: ${e?.name}\n`));
  });
  const shutdown = async () => {
    await sup.close().catch(() => undefined);
    await server.close().catch(() => undefined);
    process.exit(0);
  };
  server.onclose = () => void shutdown();
  process.stdin.on("end", () => void shutdown());
  await server.connect(new StdioServerTransport());
  for (const w of Object.values(sup.workers)) w.warm();
} else {
  await main();
}

function scenario(dir, windows) {
  const list = [];
  for (let n = 1; n <= windows; n++) {
    const l = ((n - 1) % 10) * 150;
    const t = Math.floor((n - 1) / 10) * 90;
    list.push({
      hwnd: 1000 + n,
      title: `Ruffle - game${n}.swf`,
      class: "RuffleWindow",
      pid: 4000 + n,
      process_start: "2026-11-30T08:00:00Z",
      process_path: RUFFLE,
      rect: [l, t, l + 400, t + 300],
      visible: true,
      iconic: false,
      z: n - 1,
      fill: "#3366cc",
    });
  }
  const path = join(dir, "desktop.json");
  writeFileSync(
    path,
    JSON.stringify({
      session: 1,
      foreground: 1001,
      windows: list,
      consent: { answer: "approve", delay_ms: 0 },
    }),
  );
  const policy = join(dir, "policy.json");
  writeFileSync(
    policy,
    JSON.stringify({
      schema_version: 1,
      policy_id: "bench",
      application: { executable_path: RUFFLE, title_patterns: ["Ruffle - *"] },
      allowed_actions: ["observe", "inspect", "hover", "click"],
      safe_regions: [{ name: "stage", rect: [10, 50, 330, 290] }],
    }),
  );
  return { path, policy };
}

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
function round(x) {
  return Math.round(x * 1000) / 1000;
}
function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { p50_ms: round(pct(s, 50)), p99_ms: round(pct(s, 99)) };
}

async function startServer(desk, extraGrants) {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const env = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith("DESKTOP_AUTOMATION_") && !k.startsWith("UIINSPECT_")) env[k] = v;
  Object.assign(env, {
    UIINSPECT_PLATFORM: "fake",
    UIINSPECT_FAKE_DESKTOP: desk.path,
    DESKTOP_AUTOMATION_POLICY_FILE: desk.policy,
    UIINSPECT_GRANT_TTL_MS: "3600000",
    UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "100000",
    UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: "100000",
    UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE: "100000",
    DESKTOP_AUTOMATION_MAX_ACTIONS_PER_MINUTE: "100000",
    UIINSPECT_LOG_LEVEL: "warn",
    BENCH_EXTRA_GRANTS: String(extraGrants),
  });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [fileURLToPath(import.meta.url), "server"],
    env,
    stderr: "inherit",
  });
  const client = new Client({ name: "authz-bench", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent)}`);
  return r.structuredContent;
}

async function timed(client, name, args) {
  const s = process.hrtime.bigint();
  await call(client, name, args);
  return Number(process.hrtime.bigint() - s) / 1e6;
}

async function measure(desk, grants, n) {
  const client = await startServer(desk, grants - 1);
  const target = { hwnd: 1001 };
  const access = await call(client, "request_access", { ...target, capabilities: ["observe", "click"] });
  if (access.source !== "dialog") throw new Error("expected the first decision from the dialog");
  for (let i = 0; i < 200; i++) {
    const live = (await call(client, "get_access_state", {})).grants.length;
    if (live === grants) break;
    if (i === 199) throw new Error(`expected ${grants} live grants, have ${live}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const calls = {
    baseline: ["get_window_state", target],
    guarded: ["wait_for_title_change", { ...target, timeout_ms: 0 }],
    preview: ["preview_action", { ...target, action_class: "click" }],
  };
  for (let i = 0; i < 100; i++)
    for (const [name, args] of Object.values(calls)) await call(client, name, args);
  const lat = { baseline: [], guarded: [], preview: [] };
  const diff = [];
  for (let i = 0; i < n; i++) {
    const b = await timed(client, ...calls.baseline);
    const g = await timed(client, ...calls.guarded);
    const p = await timed(client, ...calls.preview);
    lat.baseline.push(b);
    lat.guarded.push(g);
    lat.preview.push(p);
    diff.push(g - b);
  }
  // Cached-decision request_access throughput.
  const ra = ["request_access", { ...target, capabilities: ["observe"] }];
  const first = await call(client, ...ra);
  if (first.source !== "cached") throw new Error("expected a cached decision");
  for (let i = 0; i < 100; i++) await call(client, ...ra);
  let t0 = performance.now();
  for (let i = 0; i < n; i++) await call(client, ...ra);
  const seqPerS = n / ((performance.now() - t0) / 1000);
  t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < n) await call(client, ...ra);
    }),
  );
  const concPerS = n / ((performance.now() - t0) / 1000);
  const live = (await call(client, "get_access_state", {})).grants.length;
  await client.close();
  return {
    live_grants: live,
    baseline_get_window_state: stats(lat.baseline),
    guarded_wait_for_title_change: stats(lat.guarded),
    preview_action: stats(lat.preview),
    added_chain_ms: stats(diff),
    cached_request_access_per_s: { sequential: Math.round(seqPerS), concurrent_16: Math.round(concPerS) },
  };
}

async function main() {
  const n = Number(arg("--n", "400"));
  const windows = Number(arg("--windows", "100"));
  const levels = arg("--grants", "1,10,100").split(",").map(Number);
  if (levels.some((g) => !(g >= 1 && g <= windows))) throw new Error("--grants must be within 1..--windows");
  const dir = mkdtempSync(join(tmpdir(), "uiinspect-authz-bench-"));
  const desk = scenario(dir, windows);
  const results = {};
  for (const g of levels) results[`grants_${g}`] = await measure(desk, g, n);
  const out = {
    bench: "authz",
    node: process.version,
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? null,
    calls_per_series: n,
    windows_on_desktop: windows,
    method:
      "stdio MCP (SDK Client → built server, simulated desktop); added_chain_ms = paired (wait_for_title_change timeout_ms 0) − (get_window_state), both one desktop.list round trip",
    results,
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}
