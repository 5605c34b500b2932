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
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { call, LOOSE, percentiles, startServer } from "./lib/mcp.mjs";
import { startX11Session, stopX11Session, waitFor } from "./lib/x11.mjs";

const REPO = resolve(import.meta.dirname, "..");
const SHOTS = Number(process.env.BENCH_SHOTS ?? 100);
const TREES = Number(process.env.BENCH_TREES ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const REGION = [0, 0, 800, 600];

function log(msg) {
  process.stderr.write(`bench/x11: ${msg}\n`);
}

const sessionEnv = startX11Session();
const apps = [];
let server = null;
let platform = null;
const dir = mkdtempSync(join(tmpdir(), "uix-bench-x11-"));

try {
  // The X11 platform of dist/, in this process, only to find windows and the consent button.
  const { createX11Platform } = await import(join(REPO, "dist/platforms/x11/index.js"));
  platform = await createX11Platform({ workerKind: "other" });
  const p = platform;
  apps.push(spawn("gtk3-widget-factory", [], { env: process.env, stdio: "ignore" }));
  const win = await waitFor("gtk3-widget-factory", async () =>
    (await p.desktop.listWindows()).find((w) => w.title === "gtk3-widget-factory" && w.visible),
  );
  const policyPath = join(dir, "policy.json");
  writeFileSync(
    policyPath,
    JSON.stringify({
      schema_version: 1,
      policy_id: "bench-x11",
      application: { executable_path: win.instance.exe_path, title_patterns: ["gtk3-widget-factory"] },
      allowed_actions: ["observe", "inspect"],
      safe_regions: [{ name: "r800x600", rect: REGION }],
      limits: { max_screenshot_pixels_per_minute: 1e12, max_png_bytes: 64 * 1024 * 1024 },
    }),
  );
  server = await startServer({
    ...LOOSE,
    DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
    UIINSPECT_TREE_DEADLINE_MS: "60000",
    UIINSPECT_WORKER_DEADLINE_MS: "120000",
  });
  const { client } = server;

  // Consent: the real dialog, Allow clicked at its AT-SPI centre.
  const pending = call(client, "request_access", { hwnd: win.hwnd });
  const dialog = await waitFor("consent dialog", async () =>
    (await p.desktop.listWindows()).find((w) => w.title === "uiinspect-mcp: access request" && w.visible),
  );
  const s = await p.accessibility.openSession(dialog);
  let allow = null;
  const queue = [await s.root()];
  while (queue.length > 0 && !allow) {
    const n = queue.shift();
    const f = await s.facts(n);
    if (f.role === "button" && f.name === "Allow" && f.rect) allow = f.rect;
    queue.push(...(await s.children(n)));
  }
  await s.dispose();
  if (!allow) throw new Error("no Allow button");
  execFileSync("xdotool", [
    "mousemove",
    "--sync",
    String((allow[0] + allow[2]) >> 1),
    String((allow[1] + allow[3]) >> 1),
    "click",
    "1",
  ]);
  const grant = await pending;
  if (grant.decision !== "approved") throw new Error("not approved");
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
  const tree = () => call(client, "inspect_tree", { hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 });
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
  try {
    await server?.client.close();
  } catch {
    // already closed
  }
  for (const a of apps) if (a.exitCode === null && a.signalCode === null) a.kill("SIGKILL");
  try {
    await platform?.desktop.dispose();
  } catch {
    // gone
  }
  stopX11Session(sessionEnv);
  rmSync(dir, { recursive: true, force: true });
}
