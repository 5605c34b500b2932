// X11 end to end on a private Xvfb desktop (.ci/x11-session.sh): the SDK client → stdio → the
// built CLI (`node dist/cli.js serve`, UIINSPECT_PLATFORM unset → x11) → authorization chain →
// workers (XShm capture + verify + PNG; AT-SPI walk) → back. The target is gtk3-widget-factory;
// consent is given by clicking Allow in the real zenity dialog.
//
//   npx tsc -p tsconfig.json && node bench/x11.mjs
//   BENCH_SHOTS=200 BENCH_TREES=20 node bench/x11.mjs
//
// Prints one JSON object on stdout:
//   screenshot: 800×600 region (a policy safe region) of the window, sequential calls: shots/s,
//               p50/p99 latency, PNG bytes;
//   inspect:    inspect_tree(max_depth 32, max_nodes 5000) of the window: nodes per tree,
//               nodes/s, p50/p99 latency, whether truncated.
import { cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { call, LOOSE, percentiles } from "./lib/mcp.mjs";
import { startDesk, waitFor } from "./lib/x11desk.mjs";

const SHOTS = Number(process.env.BENCH_SHOTS ?? 100);
const TREES = Number(process.env.BENCH_TREES ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const REGION = [0, 0, 800, 600];

function log(msg) {
  process.stderr.write(`bench/x11: ${msg}\n`);
}

const desk = await startDesk();
try {
  const p = desk.platform;
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const { client } = await desk.grantedServer(
    win,
    { safe_regions: [{ name: "r800x600", rect: REGION }] },
    LOOSE,
  );
  await p.desktop.activateWindow(win.hwnd);
  await waitFor("target in front", async () => (await p.desktop.getWindow(win.hwnd))?.foreground);

  // Screenshots of the 800×600 region.
  const shot = async () => {
    const r = await client.callTool(
      { name: "screenshot_window", arguments: { hwnd: win.hwnd, region_name: "r800x600" } },
      undefined,
      { timeout: 120_000 },
    );
    if (r.isError) throw new Error(`screenshot_window: ${JSON.stringify(r.structuredContent)}`);
    const img = r.content.find((c) => c.type === "image");
    const size = r._meta?.image_size;
    return { bytes: Buffer.from(img.data, "base64").length, size };
  };
  for (let i = 0; i < WARMUP; i++) await shot();
  const shotMs = [];
  const pngBytes = [];
  let imageSize = null;
  const t0 = performance.now();
  for (let i = 0; i < SHOTS; i++) {
    const a = performance.now();
    const r = await shot();
    shotMs.push(performance.now() - a);
    pngBytes.push(r.bytes);
    imageSize = r.size;
  }
  const shotWall = performance.now() - t0;
  log(`${SHOTS} screenshots in ${Math.round(shotWall)} ms`);

  // inspect_tree of the whole window.
  const tree = () =>
    call(client, "inspect_tree", { detail: "full", hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 });
  for (let i = 0; i < Math.min(WARMUP, 1); i++) await tree();
  const treeMs = [];
  let nodes = 0;
  let nodesPerTree = 0;
  let truncated = false;
  const t1 = performance.now();
  for (let i = 0; i < TREES; i++) {
    const a = performance.now();
    const r = await tree();
    treeMs.push(performance.now() - a);
    nodes += r.node_count;
    nodesPerTree = r.node_count;
    truncated ||= r.truncated;
  }
  const treeWall = performance.now() - t1;
  log(`${TREES} trees in ${Math.round(treeWall)} ms`);

  const sortedBytes = [...pngBytes].sort((a, b) => a - b);
  process.stdout.write(
    `${JSON.stringify(
      {
        platform: "x11 (Xvfb 1280×800×24 + openbox, private session)",
        target: "gtk3-widget-factory",
        cpus: cpus().length,
        loadavg_1m_at_end: Math.round(loadavg()[0] * 100) / 100,
        screenshot: {
          region: REGION,
          image_size: imageSize,
          shots: SHOTS,
          shots_per_s: Math.round((SHOTS / (shotWall / 1000)) * 10) / 10,
          latency: percentiles(shotMs),
          png_bytes_p50: sortedBytes[Math.floor(sortedBytes.length / 2)],
        },
        inspect: {
          trees: TREES,
          max_nodes: 5000,
          nodes_per_tree: nodesPerTree,
          truncated,
          nodes_per_s: Math.round(nodes / (treeWall / 1000)),
          latency: percentiles(treeMs),
        },
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await desk.stop();
}
