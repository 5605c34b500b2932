// inspect_tree over MCP stdio of gtk3-widget-factory (260 nodes) by several builds side by side,
// rotated round by round on one private Xvfb desktop, so load hits every build alike. Only
// the tree: no floor, no pyatspi, no screenshot (bench/x11-floor.mjs has those), which makes it
// quick enough to compare many variants of a change.
//
//   npm run build && BENCH_CLIS=/tmp/base/dist/cli.js,dist/cli.js node bench/x11-tree-ab.mjs
//   BENCH_ROUNDS (default 30). Each round calls each build with detail "full" and with the
//   default outline. Prints p50 and min per build and ratios to the first build.
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { call, LOOSE, percentiles } from "./lib/mcp.mjs";
import { startDesk } from "./lib/x11desk.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);
const CLIS = (process.env.BENCH_CLIS ?? "dist/cli.js").split(",").map((p) => resolve(p));
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);
const loadStart = la();

const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const clients = [];
  for (const cli of CLIS) clients.push((await desk.grantedServer(win, {}, LOOSE, cli)).client);
  const full = { hwnd: win.hwnd, max_depth: 32, max_nodes: 5000, detail: "full" };
  const outline = { hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 };
  const times = clients.map(() => ({ full: [], outline: [] }));
  const nodes = [];
  for (const c of clients) {
    for (let i = 0; i < 3; i++) await call(c, "inspect_tree", full);
    nodes.push((await call(c, "inspect_tree", outline)).node_count);
  }
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < clients.length; k++) {
      const i = (k + r) % clients.length;
      for (const [kind, args] of r % 2
        ? [
            ["full", full],
            ["outline", outline],
          ]
        : [
            ["outline", outline],
            ["full", full],
          ]) {
        const t0 = performance.now();
        await call(clients[i], "inspect_tree", args);
        times[i][kind].push(performance.now() - t0);
      }
    }
  }
  const out = CLIS.map((cli, i) => ({
    cli,
    nodes: nodes[i],
    full: percentiles(times[i].full),
    outline: percentiles(times[i].outline),
  }));
  const ratio = (i, kind, key) => Math.round((out[i][kind][key] / out[0][kind][key]) * 1000) / 1000;
  for (let i = 1; i < out.length; i++)
    out[i].vs_first = {
      full_p50: ratio(i, "full", "p50_ms"),
      full_min: ratio(i, "full", "min_ms"),
      outline_p50: ratio(i, "outline", "p50_ms"),
      outline_min: ratio(i, "outline", "min_ms"),
    };
  console.log(
    JSON.stringify({ rounds: ROUNDS, loadavg_start: loadStart, loadavg_end: la(), builds: out }, null, 2),
  );
} finally {
  await desk.stop();
}
