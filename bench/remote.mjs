// Remote mode under load: 32 concurrent authenticated sessions (32 OAuth identities, tokens
// signed at bench time with jose) on one `serve --http 127.0.0.1:0` supervisor, each looping
// inspect_tree and screenshot_window on the simulated desktop.
//
//   npm run build && node bench/remote.mjs                      # 65 s idle control + 120 s load
//   BENCH_SECONDS=20 BENCH_IDLE_S=20 node bench/remote.mjs      # short run (windows mix; see below)
//   BENCH_SESSIONS=8 node bench/remote.mjs
//
// The supervisor's event-loop figures come from health_check, a rolling window covering the
// last 30–60 s: the idle control is read after BENCH_IDLE_S of idle sessions, the loaded one at
// the end of the load. With the defaults both windows cover only their own phase; shorter runs
// mix phases (the output says which seconds each read covers). RSS is the server process
// (supervisor + every worker thread) from /proc. Prints one JSON object on stdout.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { CLI, call, cleanEnv, LOOSE, RUFFLE } from "./lib/mcp.mjs";

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 120);
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 65);
const WINDOWS = 4;
const ISSUER = "https://idp.bench.invalid";
const AUDIENCE = "https://uiinspect.bench.invalid/mcp";

const dir = mkdtempSync(join(tmpdir(), "uiinspect-bench-remote-"));
const { publicKey, privateKey } = await generateKeyPair("ES256");
const jwks = join(dir, "jwks.json");
writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k", alg: "ES256" }] }));
const token = (sub) =>
  new SignJWT({ scope: "uiinspect:observe uiinspect:inspect" })
    .setProtectedHeader({ alg: "ES256", kid: "k" })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(sub)
    .setJti(`${sub}-${Date.now()}`)
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(privateKey);

const tree = (n) => ({
  role: "window",
  name: `Bench ${n}`,
  children: Array.from({ length: 20 }, (_, i) => ({
    role: "button",
    name: `Button ${i}`,
    automation_id: `b${i}`,
    rect: [20 + (i % 5) * 100, 60 + Math.floor(i / 5) * 40, 110 + (i % 5) * 100, 90 + Math.floor(i / 5) * 40],
    patterns: ["invoke"],
  })),
});
const windows = Array.from({ length: WINDOWS }, (_, i) => ({
  hwnd: 1001 + i,
  title: `Ruffle - bench${i}.swf`,
  class: "RuffleWindow",
  pid: 4001 + i,
  process_start: "2026-11-30T08:00:00Z",
  process_path: RUFFLE,
  rect: [(i % 2) * 660, Math.floor(i / 2) * 500, (i % 2) * 660 + 640, Math.floor(i / 2) * 500 + 480],
  visible: true,
  iconic: false,
  z: i,
  fill: "#3366cc",
  paint: [{ rect: [20, 60, 300, 200], fill: "#202020" }],
  tree: tree(i),
}));
const desktop = join(dir, "desktop.json");
writeFileSync(
  desktop,
  JSON.stringify({ session: 1, foreground: 1001, windows, consent: { answer: "approve", delay_ms: 0 } }),
);
const policy = join(dir, "policy.json");
writeFileSync(
  policy,
  JSON.stringify({
    schema_version: 1,
    policy_id: "bench-remote",
    application: { executable_path: RUFFLE, title_patterns: ["Ruffle - *"] },
    allowed_actions: ["observe", "inspect"],
    safe_regions: [{ name: "frame", rect: [10, 40, 410, 340] }],
    limits: { max_actions_per_minute: 10_000_000, max_screenshot_pixels_per_minute: 2_000_000_000_000 },
  }),
);

const env = cleanEnv();
const server = spawn(
  process.execPath,
  [CLI, "serve", "--http", "127.0.0.1:0", "--oauth-issuer", ISSUER, "--oauth-audience", AUDIENCE].concat([
    "--oauth-jwks",
    jwks,
    "--max-sessions",
    String(SESSIONS + 8),
  ]),
  {
    env: {
      ...env,
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: desktop,
      DESKTOP_AUTOMATION_POLICY_FILE: policy,
      ...LOOSE,
      UIINSPECT_LOG_LEVEL: "error",
    },
    stdio: ["ignore", "ignore", "pipe"],
  },
);
const startedAt = performance.now();
let err = "";
const url = await new Promise((resolve, reject) => {
  server.stderr.on("data", (d) => {
    err += d;
    const m = /listening on (\S+)/.exec(err);
    if (m) resolve(m[1]);
  });
  server.once("exit", (c) => reject(new Error(`server exited ${c}: ${err}`)));
});

const rssMb = () => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, "utf8"));
  return m ? Math.round(Number(m[1]) / 1024) : null;
};
const sinceStart = () => Math.round((performance.now() - startedAt) / 1000);

async function connect(i) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${await token(`agent-${i}`)}` } },
  });
  const client = new Client({ name: `bench-${i}`, version: "1" });
  await client.connect(transport);
  return client;
}
function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
  const r = (v) => Math.round(v * 10) / 10;
  return { calls: s.length, p50_ms: r(q(0.5)), p99_ms: r(q(0.99)), max_ms: r(s.at(-1) ?? 0) };
}

const clients = [];
try {
  for (let i = 0; i < SESSIONS; i++) clients.push(await connect(i));
  await Promise.all(
    clients.map((c, i) =>
      call(c, "request_access", { hwnd: 1001 + (i % WINDOWS), capabilities: ["observe", "inspect"] }),
    ),
  );
  // Each session's automation session starts before the clock does.
  await Promise.all(
    clients.map((c, i) => call(c, "inspect_tree", { detail: "full", hwnd: 1001 + (i % WINDOWS) })),
  );
  const rssIdleStart = rssMb();
  await new Promise((r) => setTimeout(r, IDLE_S * 1000));
  const idle = (await call(clients[0], "health_check", {})).event_loop;
  const idleAt = sinceStart();
  const rssIdle = rssMb();

  const lat = { inspect_tree: [], screenshot_window: [] };
  let failures = 0;
  let rssPeak = 0;
  const rssTimer = setInterval(() => {
    rssPeak = Math.max(rssPeak, rssMb() ?? 0);
  }, 1000);
  const load1 = loadavg()[0];
  const end = performance.now() + SECONDS * 1000;
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (c, i) => {
      const hwnd = 1001 + (i % WINDOWS);
      for (let k = 0; performance.now() < end; k++) {
        const name = k % 2 === 0 ? "inspect_tree" : "screenshot_window";
        const args = name === "inspect_tree" ? { hwnd } : { hwnd, region_name: "frame" };
        const s = performance.now();
        try {
          await call(c, name, args);
          lat[name].push(performance.now() - s);
        } catch {
          failures++;
        }
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  clearInterval(rssTimer);
  const loaded = (await call(clients[0], "health_check", {})).event_loop;
  const all = [...lat.inspect_tree, ...lat.screenshot_window];
  const out = {
    bench: "remote",
    sessions: SESSIONS,
    identities: SESSIONS,
    windows: WINDOWS,
    transport: "Streamable HTTP on 127.0.0.1, OAuth Bearer (ES256 JWT) per request",
    load_seconds: Math.round(wall),
    calls_per_s: Math.round((all.length / wall) * 10) / 10,
    failures,
    all: stats(all),
    inspect_tree: stats(lat.inspect_tree),
    screenshot_window: stats(lat.screenshot_window),
    supervisor_event_loop: {
      idle_control: { ...idle, read_at_s: idleAt },
      loaded: { ...loaded, read_at_s: sinceStart() },
    },
    rss_mb: { idle_start: rssIdleStart, idle_end: rssIdle, load_peak: rssPeak, after_load: rssMb() },
    loadavg_1m: {
      before_load: Math.round(load1 * 100) / 100,
      after_load: Math.round(loadavg()[0] * 100) / 100,
    },
    node: process.version,
    cpus: (await import("node:os")).cpus().length,
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  server.kill("SIGTERM");
  await new Promise((r) => server.once("exit", r));
  rmSync(dir, { recursive: true, force: true });
}
