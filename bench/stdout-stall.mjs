// The supervisor's event loop while its MCP client reads stdout slowly: this build against
// another (BENCH_BASELINE=…/dist/cli.js), interleaved run by run, on the simulated desktop.
//
//   npm run build && BENCH_BASELINE=/tmp/base/dist/cli.js node bench/stdout-stall.mjs
//   (BENCH_RUNS per build and stdout kind, default 3; BENCH_CALLS per run, default 40)
//
// Each run starts the server with stdout a pipe (what a Node client's spawn gives: a socket
// pair) or a terminal (test/e2e/fixtures/pty-stdout.py, python3), writes BENCH_CALLS list_windows
// calls (200 windows with long titles, ~158 KB each) one every 10 ms, and reads stdout at
// 1 MiB/s in 64 KiB steps. Once every answer is in, health_check's `event_loop` gives the
// supervisor's loop delay over the run (monitorEventLoopDelay, 10 ms resolution; the max may
// include start-up). Prints one JSON object with p99/max per build and kind, and the load.
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { stallDesktop } from "../test/e2e/fixtures/stall-desktop.mjs";
import { CLI, cleanEnv, LOOSE, RUFFLE, scratch } from "./lib/mcp.mjs";

const BASELINE = process.env.BENCH_BASELINE;
if (!BASELINE) throw new Error("BENCH_BASELINE: the other build's dist/cli.js");
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CALLS = Number(process.env.BENCH_CALLS ?? 40);
const PTY = resolve(import.meta.dirname, "../test/e2e/fixtures/pty-stdout.py");
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);
const loadStart = la();

const s = scratch(stallDesktop(RUFFLE), {
  schema_version: 1,
  policy_id: "stall",
  application: { executable_path: RUFFLE, title_patterns: ["Ruffle - *"] },
  allowed_actions: ["observe"],
});
const env = {
  ...cleanEnv(),
  ...LOOSE,
  UIINSPECT_PLATFORM: "fake",
  UIINSPECT_FAKE_DESKTOP: s.scenarioPath,
  DESKTOP_AUTOMATION_POLICY_FILE: s.policyPath,
  UIINSPECT_LOG_LEVEL: "warn",
};
const frame = (id, method, params) => `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`;
const INITIALIZED = `${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`;
const HELLO = `${frame(0, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "b", version: "1" } })}${INITIALIZED}`;

/** Reads `out` at about `bytesPerSec`, 64 KiB at a time; calls onMessage for each JSON line. */
function slowReader(out, bytesPerSec, onMessage) {
  const step = 64 * 1024;
  let budget = step;
  let buf = "";
  out.on("data", (b) => {
    buf += b.toString("utf8");
    for (let nl = buf.indexOf("\n"); nl !== -1; nl = buf.indexOf("\n")) {
      onMessage(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
    }
    budget -= b.length;
    if (budget <= 0) out.pause();
  });
  const tick = setInterval(
    () => {
      budget = step;
      out.resume();
    },
    Math.round((step / bytesPerSec) * 1000),
  );
  return () => clearInterval(tick);
}

async function run(cli, kind) {
  const argv =
    kind === "pty" ? ["python3", [PTY, process.execPath, cli, "serve"]] : [process.execPath, [cli, "serve"]];
  const child = spawn(argv[0], argv[1], {
    env: { ...env, PTY_STDOUT_READ_NOW: "1" },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const started = performance.now();
  let loop = null;
  let answered = 0;
  const done = new Promise((r) => {
    const stop = slowReader(child.stdout, 1024 * 1024, (m) => {
      if (m.id === 99999) {
        loop = m.result.structuredContent.event_loop;
        stop();
        r();
      } else if (typeof m.id === "number" && m.id > 0 && ++answered === CALLS)
        child.stdin.write(frame(99999, "tools/call", { name: "health_check", arguments: {} }));
    });
  });
  child.stdin.write(HELLO);

  for (let i = 1; i <= CALLS; i++) {
    child.stdin.write(frame(i, "tools/call", { name: "list_windows", arguments: {} }));
    await new Promise((r) => setTimeout(r, 10));
  }
  await done;
  const wall = performance.now() - started;
  child.stdin.end();
  await new Promise((r) => child.once("exit", r));
  process.stderr.write(`${cli} ${kind}: ${JSON.stringify(loop)} ${Math.round(wall)} ms\n`);
  return { p99_ms: loop.p99_ms, max_ms: loop.max_ms, wall_ms: Math.round(wall) };
}

const builds = { ours: CLI, baseline: resolve(BASELINE) };
const results = {};
for (let i = 0; i < RUNS; i++)
  for (const kind of ["pipe", "pty"])
    for (const [name, cli] of Object.entries(builds)) {
      const key = `${name}_${kind}`;
      results[key] ??= [];
      results[key].push(await run(cli, kind));
    }
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const summary = Object.fromEntries(
  Object.entries(results).map(([k, rs]) => [
    k,
    {
      loop_p99_ms: median(rs.map((r) => r.p99_ms)),
      loop_max_ms: median(rs.map((r) => r.max_ms)),
      wall_ms: median(rs.map((r) => r.wall_ms)),
      runs: rs,
    },
  ]),
);
console.log(
  JSON.stringify({ calls: CALLS, runs: RUNS, load_start: loadStart, load_end: la(), ...summary }, null, 1),
);
