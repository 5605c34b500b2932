// Where one screenshot_window's time goes outside the capture worker's handler: a timeline of
// one 800×600 shot of gtk3-widget-factory (by hwnd and named region, the one-message path)
// across the bench's MCP client, the server's main thread and its capture worker thread.
//
// The server is a copy of the built dist/ (BENCH_DIST, default this repo's) in a scratch folder,
// with a mark inserted at each point below by text: the product code has no trace points. A
// mark is the label and performance.timeOrigin + performance.now() (epoch ms, microseconds,
// comparable across threads and processes), kept in memory and appended to one file at the end
// of each shot's part in that thread, so a mark costs a push, not a system call. An anchor that
// is no longer in the built file stops the bench with its label: fix the anchor, not the figure.
//
//   npm run build && source .ci/x11-session.sh start
//   BENCH_ROUNDS=150 node bench/x11-shot-trace.mjs
//
// Prints one JSON object: for the shots whose marks came in the most common order, p50 and min
// of each step between two marks, of the handler (W_run → W_done) and of the whole shot.
import { appendFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { patchDist, scratchDist } from "./lib/distCopy.mjs";
import { call, LOOSE, percentiles } from "./lib/mcp.mjs";
import { REPO, startDesk } from "./lib/x11desk.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 150);
const DIST = resolve(process.env.BENCH_DIST ?? join(REPO, "dist"));
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);

/**
 * [file under dist/, anchor text, mark, where]: the mark goes right before the anchor, or with
 * "after" right after it. Marks with `true` end a thread's part of a shot: the thread's buffer
 * (one per thread, shared by its modules) is written then; `__T(null, true)` only writes it.
 */
const MARKS = [
  ["cli/serve.js", "    const queue = new StdoutQueue(", 'process.stdin.on("data", () => __T("S_stdin"));'],
  ["supervisor/mcp/server.js", "    const correlationId = newCorrelationId();", '__T("S_callTool");'],
  [
    "supervisor/access/chain.js",
    "        const { windows, held } = await hop;",
    '__T("S_hop_back");',
    "after",
  ],
  [
    "supervisor/access/chain.js",
    "            await authorize(sup, def, args, client.hash, state);",
    '__T("S_authorized");',
    "after",
  ],
  ["supervisor/mcp/server.js", "        const r = run.result;", '__T("S_chain_done");'],
  ["supervisor/mcp/server.js", "            sup.audit.record({", '__T("S_audit");'],
  ["supervisor/mcp/server.js", "            }, sup.client().hash);", '__T("S_audited");', "after"],
  ["supervisor/hosting/workerHost.js", "send: (msg) => port1.postMessage(msg),", ""],
  [
    "supervisor/hosting/workerHost.js",
    "        const parsed = WorkerToSupervisorSchema.safeParse(raw);",
    '__T("S_worker_msg");',
  ],
  [
    "supervisor/hosting/workerHost.js",
    "            settle(OPS[p.op].result.safeParse(msg.result));",
    '__T("S_result_parsed");',
    "after",
  ],
  [
    "supervisor/tools/capture.js",
    "    const size = [rectWidth(region), rectHeight(region)];",
    '__T("S_frame_result");',
  ],
  ["supervisor/mcp/stdoutSinks.js", "            let settled = false;", '__T("S_stdout_write", true);'],
  ["workers/runtime.js", "        const parsed = SupervisorToWorkerSchema.safeParse(raw);", '__T("W_msg");'],
  [
    "workers/runtime.js",
    "                const result = await runRequest(served, msg, controller.signal, deadline);",
    '__T("W_run");',
  ],
  [
    "workers/runtime.js",
    "                const result = await runRequest(served, msg, controller.signal, deadline);",
    '__T("W_done");',
    "after",
  ],
  ["workers/runtime.js", "            channel.send(m, transfer);", '__T("W_post");'],
  ["workers/runtime.js", "            channel.send(m, transfer);", "__T(null, true);", "after"],
];

/** The traced copy of DIST in a scratch folder; returns its cli.js and the trace file. */
function tracedCopy() {
  const dir = scratchDist(join(DIST, ".."), "uiinspect-shot-trace-");
  const file = join(dir, "trace.log");
  // The injected code, as text: a per-thread buffer of marks shared by the thread's modules.
  const head = [
    'import { appendFileSync as __append } from "node:fs";',
    "const __marks = (globalThis.__shotTraceMarks ??= []);",
    "const __T = (label, flush = false) => {",
    '  if (label) __marks.push(label + " " + (performance.timeOrigin + performance.now()).toFixed(3) + "\\n");',
    `  if (flush || __marks.length > 256) __append(${JSON.stringify(file)}, __marks.splice(0).join(""));`,
    "};",
    "",
  ].join("\n");
  const edits = MARKS.map(([f, anchor, mark, where]) => [
    f,
    anchor,
    // The hop to the worker: the post is wrapped, so the mark is taken as the message goes.
    mark === ""
      ? () => 'send: (msg) => { __T("S_post"); port1.postMessage(msg); },'
      : () => (where === "after" ? `${anchor}\n${mark}` : `${mark}\n${anchor}`),
  ]);
  patchDist(dir, "x11-shot-trace", head, edits);
  writeFileSync(file, "");
  return { dir, cli: join(dir, "dist", "cli.js"), file };
}

/** Each shot's marks, C_send to C_recv, in time order. */
function shotsOf(file) {
  const marks = readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => {
      const [label, t] = l.split(" ");
      return { label, t: Number(t) };
    })
    .sort((a, b) => a.t - b.t);
  const shots = [];
  let cur = null;
  for (const m of marks) {
    if (m.label === "C_send") cur = [m];
    else if (cur) {
      cur.push(m);
      if (m.label === "C_recv") {
        shots.push(cur);
        cur = null;
      }
    }
  }
  return shots;
}

/** p50 and min of each step, over the shots whose marks came in the most common order. */
function steps(shots) {
  const orders = new Map();
  for (const s of shots) {
    const key = s.map((m) => m.label).join(" ");
    orders.set(key, [...(orders.get(key) ?? []), s]);
  }
  const [order, same] = [...orders.entries()].sort((a, b) => b[1].length - a[1].length)[0];
  const stat = (f) => {
    const v = same.map(f);
    return { p50_ms: percentiles(v).p50_ms, min_ms: Math.round(Math.min(...v) * 1000) / 1000 };
  };
  const labels = order.split(" ");
  const at = (s, label) => s.find((m) => m.label === label).t;
  const counts = {};
  for (const s of shots) for (const m of s) counts[m.label] = (counts[m.label] ?? 0) + 1;
  return {
    shots: shots.length,
    marks_per_label: counts,
    shots_in_that_order: same.length,
    order: labels,
    steps: Object.fromEntries(
      labels.slice(1).map((l, i) => [`${labels[i]} → ${l}`, stat((s) => s[i + 1].t - s[i].t)]),
    ),
    handler: stat((s) => at(s, "W_done") - at(s, "W_run")),
    outside_handler: stat((s) => at(s, "C_recv") - at(s, "C_send") - (at(s, "W_done") - at(s, "W_run"))),
    whole: stat((s) => at(s, "C_recv") - at(s, "C_send")),
  };
}

const loadStart = la();
const traced = tracedCopy();
const mark = (label) =>
  appendFileSync(traced.file, `${label} ${(performance.timeOrigin + performance.now()).toFixed(3)}\n`);
const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const policy = { safe_regions: [{ name: "r800x600", rect: [0, 0, 800, 600] }] };
  const { client } = await desk.grantedServer(win, policy, LOOSE, traced.cli);
  const shot = () => call(client, "screenshot_window", { hwnd: win.hwnd, region_name: "r800x600" });
  for (let i = 0; i < 10; i++) await shot();
  for (let i = 0; i < ROUNDS; i++) {
    mark("C_send");
    await shot();
    mark("C_recv");
    // A pause, so that no shot's marks overlap the next one's (the tiles "later" job included).
    await new Promise((r) => setTimeout(r, 5));
  }
  const out = {
    rounds: ROUNDS,
    dist: DIST,
    loadavg_start: loadStart,
    loadavg_end: la(),
    ...steps(shotsOf(traced.file)),
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  await desk.stop();
  rmSync(traced.dir, { recursive: true, force: true });
}
