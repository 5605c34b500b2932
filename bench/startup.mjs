// Cold start of the built server (simulated desktop): spawn → `initialize` answered, then
// `tools/list` and the first `list_windows` (its capture worker starts after `initialize`).
// Raw JSON-RPC over stdio, so the figures are the server's, not a client library's (the SDK
// client compiles every tool's output schema on each listTools). Also: a `manager lease status`
// process from start to exit, which loads only the lease modules.
import { spawn, spawnSync } from "node:child_process";
import { performance } from "node:perf_hooks";
import { CLI, LOOSE, percentiles, policy, ruffle, scratch } from "./lib/mcp.mjs";

const RUNS = 10;
const s = scratch(
  { session: 1, foreground: 1001, windows: [ruffle()], consent: { answer: "approve" } },
  policy(),
);
const clean = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !k.startsWith("UIINSPECT_") && !k.startsWith("DESKTOP_AUTOMATION_"),
  ),
);
const env = {
  ...clean,
  ...LOOSE,
  UIINSPECT_LOG_LEVEL: "error",
  UIINSPECT_PLATFORM: "fake",
  UIINSPECT_FAKE_DESKTOP: s.scenarioPath,
  DESKTOP_AUTOMATION_POLICY_FILE: s.policyPath,
};

function rpcServer() {
  const child = spawn(process.execPath, [CLI, "serve"], { env, stdio: ["pipe", "pipe", "ignore"] });
  let buf = "";
  const waiters = new Map();
  child.stdout.on("data", (d) => {
    buf += d;
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      const msg = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      waiters.get(msg.id)?.(msg);
    }
  });
  let id = 0;
  const send = (m) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...m })}\n`);
  const request = (method, params = {}) =>
    new Promise((resolve) => {
      const n = ++id;
      waiters.set(n, resolve);
      send({ id: n, method, params });
    });
  return { child, send, request };
}

const init = [];
const list = [];
const first = [];
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  const srv = rpcServer();
  await srv.request("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "bench", version: "1" },
  });
  const t1 = performance.now();
  srv.send({ method: "notifications/initialized" });
  await srv.request("tools/list");
  const t2 = performance.now();
  const r = await srv.request("tools/call", { name: "list_windows", arguments: {} });
  const t3 = performance.now();
  if (r.result?.isError || !r.result) throw new Error(`list_windows failed: ${JSON.stringify(r)}`);
  init.push(t1 - t0);
  list.push(t2 - t1);
  first.push(t3 - t2);
  srv.child.stdin.end();
  await new Promise((resolve) => srv.child.on("exit", resolve));
}

const manager = [];
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  // No DISPLAY/XDG session on purpose: it answers "unavailable" without starting a broker.
  spawnSync(process.execPath, [CLI, "manager", "lease", "status"], {
    env: { PATH: process.env.PATH },
    stdio: "ignore",
  });
  manager.push(performance.now() - t0);
}

console.log(
  JSON.stringify(
    {
      spawn_to_initialize: percentiles(init),
      tools_list: percentiles(list),
      first_list_windows: percentiles(first),
      manager_status_process: percentiles(manager),
    },
    null,
    2,
  ),
);
