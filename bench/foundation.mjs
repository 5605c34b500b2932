// Foundation figures through the real stdio path (built CLI + SDK client):
//  - supervisor overhead per list_windows round trip (p50/p99)
//  - worker restart time after a crash (crash answer → next successful answer)
// Prints one JSON object. Run after `npm run build`.
import { performance } from "node:perf_hooks";
import { call, LOOSE, percentiles, policy, ruffle, scratch, startServer } from "./lib/mcp.mjs";

const N = Number(process.env.BENCH_ITER ?? 500);

const s = scratch(
  { session: 1, foreground: 1001, windows: [ruffle()], consent: { answer: "approve" } },
  policy(),
);
const env = {
  UIINSPECT_PLATFORM: "fake",
  UIINSPECT_FAKE_DESKTOP: s.scenarioPath,
  DESKTOP_AUTOMATION_POLICY_FILE: s.policyPath,
  ...LOOSE,
};

async function rtt() {
  const { client } = await startServer(env);
  for (let i = 0; i < 50; i++) await call(client, "list_windows");
  const list = [];
  const health = [];
  for (let i = 0; i < N; i++) {
    let t = performance.now();
    await call(client, "list_windows");
    list.push(performance.now() - t);
    t = performance.now();
    await client.callTool({ name: "get_access_state", arguments: {} });
    health.push(performance.now() - t);
  }
  await client.close();
  return { list_windows: percentiles(list), no_worker_call: percentiles(health) };
}

async function restart(isolation) {
  const { client } = await startServer({ ...env, UIINSPECT_WORKER_ISOLATION: isolation });
  await call(client, "list_windows");
  const samples = [];
  for (let i = 0; i < 8; i++) {
    s.write({ session: 1, foreground: 1001, windows: [ruffle({ faults: { capture: "exit" } })] });
    const r = await client.callTool({ name: "list_windows", arguments: {} });
    if (!r.isError) throw new Error("expected a crash");
    s.write({ session: 1, foreground: 1001, windows: [ruffle()] });
    const t = performance.now();
    await call(client, "list_windows");
    samples.push(performance.now() - t);
  }
  await client.close();
  return percentiles(samples);
}

const result = {
  bench: "foundation",
  iterations: N,
  round_trip: await rtt(),
  restart_after_crash: { thread: await restart("thread"), process: await restart("process") },
  note: "restart includes the backoff (100 ms doubling per consecutive crash, reset by a success) and loading the platform",
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
