// Remote mode under load: 32 concurrent authenticated sessions (32 OAuth identities, tokens
// signed at bench time with jose) on one `serve --http 127.0.0.1:0` supervisor, each looping
// inspect_tree and screenshot_window on the simulated desktop.
//
//   npm run build && node bench/remote.mjs                      # 65 s idle control + 120 s load
//   BENCH_SECONDS=20 BENCH_IDLE_S=20 node bench/remote.mjs      # short run (windows mix; see below)
//   BENCH_SESSIONS=8 node bench/remote.mjs
//   BENCH_BASELINE=/path/to/other/dist/cli.js BENCH_ROUNDS=2 node bench/remote.mjs   # before/after in turn
//   BENCH_VARIANTS='{"cap1":{"MALLOC_ARENA_MAX":"1"}}' node bench/remote.mjs  # + server env variants, in turn
//
// The supervisor's event-loop figures come from health_check, a rolling window covering the
// last 30–60 s: the idle control is read after BENCH_IDLE_S of idle sessions, the loaded one at
// the end of the load. With the defaults both windows cover only their own phase; shorter runs
// mix phases (the output says which seconds each read covers). RSS is the server process
// (supervisor + every worker thread) and every process below it, from /proc. After the idle
// phase BENCH_EXTRA_IDENTITIES more identities (default 32) are granted on the same instances
// and walk once: per_extra_identity_kb is what each added. Per-identity p99s show whether any
// identity is served worse than the others. BENCH_SMAPS=1 adds where the server's resident
// memory was at its peak sample (malloc heap, arena heaps, V8 pages, files). Prints one JSON
// object on stdout.
import { loadavg } from "node:os";
import { CLI, call } from "./lib/mcp.mjs";
import { connectIdentity, hwndOf, nextCall, remoteSetup, startHttpServer } from "./lib/remote.mjs";
import { cpuMs, memory, rssKb, smapsBreakdown, stats } from "./lib/stats.mjs";

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 120);
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 65);
/** Identities added on the granted instances after the idle phase (idle through the load). */
const EXTRA = Number(process.env.BENCH_EXTRA_IDENTITIES ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const SMAPS = process.env.BENCH_SMAPS === "1";

const setup = await remoteSetup("bench-remote");

async function runOnce(cli, env) {
  const srv = await startHttpServer(setup, { cli, maxSessions: SESSIONS + EXTRA + 8, env });
  const startedAt = performance.now();
  const rssMb = () => memory(srv.pid).total;
  const sinceStart = () => Math.round((performance.now() - startedAt) / 1000);

  const connect = async (i) => (await connectIdentity(setup, srv.url, `agent-${i}`)).client;

  const clients = [];
  const extras = [];
  try {
    for (let i = 0; i < SESSIONS; i++) clients.push(await connect(i));
    await Promise.all(
      clients.map((c, i) =>
        call(c, "request_access", { hwnd: hwndOf(i), capabilities: ["observe", "inspect"] }),
      ),
    );
    // Each session's automation session starts before the clock does.
    await Promise.all(clients.map((c, i) => call(c, "inspect_tree", { hwnd: hwndOf(i) })));
    const rssIdleStart = rssMb();
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const idle = (await call(clients[0], "health_check", {})).event_loop;
    const idleAt = sinceStart();
    const rssIdle = rssMb();
    const rssIdleServerOnly = Math.round(rssKb(srv.pid) / 1024);
    // Further identities on the instances already granted: what one more costs when idle.
    for (let i = 0; i < EXTRA; i++) extras.push(await connect(SESSIONS + i));
    for (const [i, c] of extras.entries()) {
      await call(c, "request_access", { hwnd: hwndOf(i), capabilities: ["observe", "inspect"] });
      await call(c, "inspect_tree", { hwnd: hwndOf(i) });
    }
    await new Promise((r) => setTimeout(r, 3000));
    const rssExtra = rssMb();

    const lat = { inspect_tree: [], screenshot_window: [] };
    const perIdentity = clients.map(() => []);
    let failures = 0;
    const failureReasons = {};
    let rssPeak = 0;
    let smapsAtPeak = null;
    const rssTimer = setInterval(() => {
      const now = rssMb();
      if (now <= rssPeak) return;
      rssPeak = now;
      if (SMAPS) smapsAtPeak = smapsBreakdown(srv.pid);
    }, 1000);
    const load1 = loadavg()[0];
    const cpu0 = cpuMs(srv.pid);
    const end = performance.now() + SECONDS * 1000;
    const t0 = performance.now();
    await Promise.all(
      clients.map(async (c, i) => {
        const hwnd = hwndOf(i);
        for (let k = 0; performance.now() < end; k++) {
          const { name, args } = nextCall(k, hwnd);
          const s = performance.now();
          try {
            await call(c, name, args);
            const ms = performance.now() - s;
            lat[name].push(ms);
            perIdentity[i].push(ms);
          } catch (e) {
            failures++;
            // The error code or the transport's words, never arguments (they carry nothing secret here).
            // A transport failure ("fetch failed") names its cause: a reset, a closed socket, a timeout.
            const cause = e?.cause ? ` (${e.cause.code ?? e.cause.name ?? "cause"})` : "";
            const why = /"code":"([a-z_]+)"/.exec(String(e))?.[1] ?? `${String(e).slice(0, 80)}${cause}`;
            failureReasons[why] = (failureReasons[why] ?? 0) + 1;
          }
        }
      }),
    );
    const wall = (performance.now() - t0) / 1000;
    const cpu1 = cpuMs(srv.pid);
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
      windows: 4,
      transport: "Streamable HTTP on 127.0.0.1, OAuth Bearer (ES256 JWT) per request",
      load_seconds: Math.round(wall),
      calls_per_s: Math.round((all.length / wall) * 10) / 10,
      failures,
      failure_reasons: failureReasons,
      all: overall,
      p99_over_p50: Math.round((overall.p99_ms / Math.max(0.1, overall.p50_ms)) * 100) / 100,
      identity_p99_ms: { min: p99s[0], median: medianP99, max: p99s.at(-1) },
      worst_identity_p99_over_median: Math.round(((p99s.at(-1) ?? 0) / Math.max(0.1, medianP99)) * 100) / 100,
      // CPU per call: the supervisor's main thread, the whole server, and with its children.
      cpu_ms_per_call: Object.fromEntries(
        Object.keys(cpu1).map((k) => [
          k,
          Math.round(((cpu1[k] - cpu0[k]) / Math.max(1, all.length)) * 100) / 100,
        ]),
      ),
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
      ...(SMAPS ? { server_smaps_mib_at_peak: smapsAtPeak } : {}),
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
    await srv.stop();
  }
}

// BENCH_BASELINE: other builds' dist/cli.js (comma-separated), run in turn with this one, each
// round in the same order, so before and after meet the same machine load.
// BENCH_CLI: this build from elsewhere (a frozen copy, so a rebuild meanwhile cannot touch it).
const ours = process.env.BENCH_CLI ?? CLI;
const builds = [ours, ...(process.env.BENCH_BASELINE ?? "").split(",").filter(Boolean)];
// BENCH_VARIANTS: a JSON object of named server environments, each run (with this build) after
// the plain one, so a setting's effect is measured side by side.
const variants = Object.entries(JSON.parse(process.env.BENCH_VARIANTS ?? "{}"));
const plan = [
  ...builds.map((cli) => ({ build: cli === ours ? "this" : cli, cli, env: {} })),
  ...variants.map(([name, env]) => ({ build: "this", variant: name, cli: ours, env })),
];
const runs = [];
try {
  for (let round = 0; round < ROUNDS; round++)
    for (const { cli, env, ...label } of plan) {
      runs.push({ round, ...label, ...(await runOnce(cli, env)) });
      // Each run as it ends (stderr), so a later run that fails to start loses nothing.
      process.stderr.write(`${JSON.stringify(runs.at(-1))}\n`);
    }
} finally {
  setup.remove();
}
process.stdout.write(
  `${JSON.stringify(plan.length === 1 && ROUNDS === 1 ? runs[0] : { bench: "remote", runs }, null, 2)}\n`,
);
