// The supervisor's check of a big accessibility tree from a uia worker: the recursive zod
// schema in one piece against the node-by-node check in slices (src/supervisor/hosting/
// treeResults.ts), on a 4,681-node tree, alternating, BENCH_ROUNDS rounds (default 20). The
// figure that matters is the longest stretch the event loop did not turn (a setImmediate chain
// runs beside each check): that is how long every other session's call waited.
//
//   npm run build && node bench/tree-check.mjs
import { loadavg } from "node:os";
import { OPS } from "../dist/shared/protocol.js";
import { parseTreeResult } from "../dist/supervisor/hosting/treeResults.js";
import { round2 } from "./lib/stats.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const node = (i, kids) => ({
  ref: `e${i}`,
  role: "button",
  name: `Button ${i}`,
  automation_id: `b${i}`,
  class_name: null,
  rect: [1, 2, 3, 4],
  enabled: true,
  offscreen: false,
  focused: false,
  states: [],
  patterns: ["invoke"],
  children: kids,
});
let made = 0;
const mk = (d) =>
  d === 0
    ? node(made++, [])
    : node(
        made++,
        Array.from({ length: 8 }, () => mk(d - 1)),
      );
const raw = { root: mk(4), popups: [], node_count: 0, truncated: false };
raw.node_count = made;

async function stalls(check) {
  let last = performance.now();
  let worst = 0;
  let stop = false;
  const tick = () => {
    const t = performance.now();
    worst = Math.max(worst, t - last);
    last = t;
    if (!stop) setImmediate(tick);
  };
  setImmediate(tick);
  const t0 = performance.now();
  await check();
  const total = performance.now() - t0;
  stop = true;
  await new Promise((r) => setImmediate(r));
  return { total, worst };
}

const runs = { recursive: [], sliced: [] };
const loadStart = loadavg().map(round2);
for (let k = 0; k < ROUNDS; k++) {
  runs.recursive.push(await stalls(async () => OPS["a11y.inspect"].result.parse(raw)));
  runs.sliced.push(await stalls(() => parseTreeResult("a11y.inspect", raw)));
}
const p50 = (a) => round2([...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]);
const out = { bench: "tree-check", nodes: made, rounds: ROUNDS };
for (const [k, v] of Object.entries(runs))
  out[k] = {
    total_p50_ms: p50(v.map((x) => x.total)),
    longest_stall_p50_ms: p50(v.map((x) => x.worst)),
    longest_stall_min_ms: round2(Math.min(...v.map((x) => x.worst))),
  };
out.stall_ratio_p50 = round2(out.sliced.longest_stall_p50_ms / out.recursive.longest_stall_p50_ms);
out.loadavg = { start: loadStart, end: loadavg().map(round2) };
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
