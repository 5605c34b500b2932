// Remote mode under load: 32 concurrent authenticated sessions (32 OAuth identities, tokens
// signed at bench time with jose) on one `serve --http 127.0.0.1:0` supervisor, each looping
// inspect_tree and screenshot_window on the simulated desktop.
//
//   npm run build && node bench/remote.mjs                      # 65 s idle control + 120 s load
//   BENCH_SECONDS=20 BENCH_IDLE_S=20 node bench/remote.mjs      # short run (windows mix; see below)
//   BENCH_SESSIONS=8 node bench/remote.mjs
//   BENCH_BASELINE=/path/to/other/dist/cli.js BENCH_ROUNDS=2 node bench/remote.mjs   # before/after in turn
//
// The supervisor's event-loop figures come from health_check, a rolling window covering the
// last 30–60 s: the idle control is read after BENCH_IDLE_S of idle sessions, the loaded one at
// the end of the load. With the defaults both windows cover only their own phase; shorter runs
// mix phases (the output says which seconds each read covers). RSS is the server process
// (supervisor + every worker thread) and every process below it, from /proc. After the idle
// phase BENCH_EXTRA_IDENTITIES more identities (default 32) are granted on the same instances
// and walk once: per_extra_identity_kb is what each added. Per-identity p99s show whether any
// identity is served worse than the others. Prints one JSON object on stdout.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
/** Identities added on the granted instances after the idle phase (idle through the load). */
const EXTRA = Number(process.env.BENCH_EXTRA_IDENTITIES ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
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

async function runOnce(cli) {
  const env = cleanEnv();
  const server = spawn(
    process.execPath,
    [cli, "serve", "--http", "127.0.0.1:0", "--oauth-issuer", ISSUER, "--oauth-audience", AUDIENCE].concat([
      "--oauth-jwks",
      jwks,
      "--max-sessions",
      String(SESSIONS + EXTRA + 8),
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

  // The server and every process below it (worker processes, the release guardian).
  const rssKb = (pid) => {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      return m ? Number(m[1]) : 0;
    } catch {
      return 0;
    }
  };
  const procTree = (pid) => {
    let kids = [];
    try {
      for (const t of readdirSync(`/proc/${pid}/task`))
        kids = kids.concat(
          readFileSync(`/proc/${pid}/task/${t}/children`, "utf8").split(" ").filter(Boolean).map(Number),
        );
    } catch {
      // gone
    }
    return [pid, ...kids.flatMap(procTree)];
  };
  const rssMb = () => Math.round(procTree(server.pid).reduce((n, p) => n + rssKb(p), 0) / 1024);
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
  const extras = [];
  try {
    for (let i = 0; i < SESSIONS; i++) clients.push(await connect(i));
    await Promise.all(
      clients.map((c, i) =>
        call(c, "request_access", { hwnd: 1001 + (i % WINDOWS), capabilities: ["observe", "inspect"] }),
      ),
    );
    // Each session's automation session starts before the clock does.
    await Promise.all(clients.map((c, i) => call(c, "inspect_tree", { hwnd: 1001 + (i % WINDOWS) })));
    const rssIdleStart = rssMb();
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const idle = (await call(clients[0], "health_check", {})).event_loop;
    const idleAt = sinceStart();
    const rssIdle = rssMb();
    const rssIdleServerOnly = Math.round(rssKb(server.pid) / 1024);
    // Further identities on the instances already granted: what one more costs when idle.
    for (let i = 0; i < EXTRA; i++) extras.push(await connect(SESSIONS + i));
    for (const [i, c] of extras.entries()) {
      await call(c, "request_access", { hwnd: 1001 + (i % WINDOWS), capabilities: ["observe", "inspect"] });
      await call(c, "inspect_tree", { hwnd: 1001 + (i % WINDOWS) });
    }
    await new Promise((r) => setTimeout(r, 3000));
    const rssExtra = rssMb();

    const lat = { inspect_tree: [], screenshot_window: [] };
    const perIdentity = clients.map(() => []);
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
            const ms = performance.now() - s;
            lat[name].push(ms);
            perIdentity[i].push(ms);
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
    const p99s = perIdentity.map((l) => stats(l).p99_ms).sort((a, b) => a - b);
    const medianP99 = p99s[Math.floor(p99s.length / 2)] ?? 0;
    const overall = stats(all);
    const out = {
      bench: "remote",
      sessions: SESSIONS,
      identities: SESSIONS,
      windows: WINDOWS,
      transport: "Streamable HTTP on 127.0.0.1, OAuth Bearer (ES256 JWT) per request",
      load_seconds: Math.round(wall),
      calls_per_s: Math.round((all.length / wall) * 10) / 10,
      failures,
      all: overall,
      p99_over_p50: Math.round((overall.p99_ms / Math.max(0.1, overall.p50_ms)) * 100) / 100,
      identity_p99_ms: { min: p99s[0], median: medianP99, max: p99s.at(-1) },
      worst_identity_p99_over_median: Math.round(((p99s.at(-1) ?? 0) / Math.max(0.1, medianP99)) * 100) / 100,
      inspect_tree: stats(lat.inspect_tree),
      screenshot_window: stats(lat.screenshot_window),
      supervisor_event_loop: {
        idle_control: { ...idle, read_at_s: idleAt },
        loaded: { ...loaded, read_at_s: sinceStart() },
      },
      rss_mb: {
        idle_start: rssIdleStart,
        idle_end: rssIdle,
        idle_end_server_process_only: rssIdleServerOnly,
        load_peak: rssPeak,
        after_load: rssMb(),
        with_extra_identities: rssExtra,
      },
      extra_identities: EXTRA,
      per_extra_identity_kb: EXTRA > 0 ? Math.round(((rssExtra - rssIdle) * 1024) / EXTRA) : null,
      loadavg_1m: {
        before_load: Math.round(load1 * 100) / 100,
        after_load: Math.round(loadavg()[0] * 100) / 100,
      },
      node: process.version,
      cpus: (await import("node:os")).cpus().length,
    };
    return out;
  } finally {
    await Promise.all([...clients, ...extras].map((c) => c.close().catch(() => undefined)));
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
}

// BENCH_BASELINE: other builds' dist/cli.js (comma-separated), run in turn with this one, each
// round in the same order, so before and after meet the same machine load.
// BENCH_CLI: this build from elsewhere (a frozen copy, so a rebuild meanwhile cannot touch it).
const ours = process.env.BENCH_CLI ?? CLI;
const builds = [ours, ...(process.env.BENCH_BASELINE ?? "").split(",").filter(Boolean)];
const runs = [];
try {
  for (let round = 0; round < ROUNDS; round++)
    for (const cli of builds)
      runs.push({ round, build: cli === ours ? "this" : cli, ...(await runOnce(cli)) });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(
  `${JSON.stringify(builds.length === 1 && ROUNDS === 1 ? runs[0] : { bench: "remote", runs }, null, 2)}\n`,
);
