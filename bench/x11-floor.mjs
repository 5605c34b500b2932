// Our X11 paths against their physical floor and the baseline a user would pick instead,
// interleaved round by round on one private Xvfb desktop (so machine load hits all alike):
//
//   tree:  inspect_tree over MCP (max_depth 32, max_nodes 5000) of gtk3-widget-factory, with
//          detail full (patterns read) and with the default outline (mcp_tree_outline: no patterns,
//          so no action names read);
//          the walk alone in this process (dist/ X11Accessibility + walk, what the uia worker runs);
//          pyatspi walking the same facts (bench/lib/pyatspi_walk.py: role name, name, states,
//          interfaces, extents, action names of Action nodes, children; needs python3-pyatspi);
//          the floor: the app's Cache.GetItems plus GetExtents of every cached Component node,
//          all pipelined over the peer-to-peer link.
//   shot:  screenshot_window 800×600 over MCP; the floor: XShmGetImage + BGRX→RGB + PNG
//          level 1 in this process (dist/ X11Capture + sharp), i.e.
//          nothing but the read, the one conversion and the encode; and the same with the
//          server's own encoder (dist/ png.js, node:zlib, the level the server uses), which is
//          what the server's own physical work costs. After the rounds, PNG encode time and size
//          by level for one captured frame, ours against sharp, interleaved.
//
//   npm run build && node bench/x11-floor.mjs        (BENCH_ROUNDS, default 20)
//   transport: the same SDK over stdio answering with the results our server sent in the warm-up
//          (bench/lib/replay-server.mjs): what the MCP transport alone costs for those bytes.
//          Every MCP call pays it and the in-process floors above do not, so each floor is
//          also given with it added round by round (…_plus_transport).
//
//   BENCH_BASELINE=<another build>/dist/cli.js: that build's server too, granted on the same
//   window, its inspect_tree and screenshot_window in every round beside ours (…_baseline keys),
//   so before and after share one run and one floor.
//
// Prints one JSON object: p50s, the ratios ours/baseline and ours/floor, nodes/s, the D-Bus
// calls of one walk by member, and the load average at start and end (ratios of one
// interleaved run are what to compare). The two shots of a round swap places every round (the
// first one follows the tree walks).
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { call, LOOSE, percentiles, rawCall, startReplayServer } from "./lib/mcp.mjs";
import { floorShot, openFloorWalk, REPO, sharpPngBytes, startDesk } from "./lib/x11desk.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const REGION = [0, 0, 800, 600];
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);
const loadStart = la();

const desk = await startDesk();
let py = null;
/** The transport floor's server; its scratch folder holds a recorded frame until the end. */
let replay = null;
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const server = await desk.grantedServer(win, { safe_regions: [{ name: "r800x600", rect: REGION }] }, LOOSE);
  const { client } = server;
  const BASELINE = process.env.BENCH_BASELINE ?? "";
  const base = BASELINE
    ? (
        await desk.grantedServer(
          win,
          { safe_regions: [{ name: "r800x600", rect: REGION }] },
          LOOSE,
          resolve(BASELINE),
        )
      ).client
    : null;

  const { X11Accessibility } = await import(join(REPO, "dist/platforms/x11/atspi.js"));
  const { walk, Budget } = await import(join(REPO, "dist/workers/uia/walk.js"));
  const { createX11Platform } = await import(join(REPO, "dist/platforms/x11/index.js"));
  const cap = await createX11Platform({ workerKind: "capture" });

  // D-Bus calls of one walk, by member (peer link and bus), counted on the warm-up's next walk.
  const { AtspiBus } = await import(join(REPO, "dist/platforms/x11/atspiBus.js"));
  const perMember = {};
  /** The same for the outline's walk (no patterns, no bounds: what inspect_tree asks by default). */
  const perMemberOutline = {};
  let counting = null;
  const busCallOrig = AtspiBus.prototype.call;
  AtspiBus.prototype.call = function (destination, path, iface, member, ...rest) {
    if (counting) {
      const k = `${iface.replace("org.a11y.atspi.", "")}.${member}`;
      counting[k] = (counting[k] ?? 0) + 1;
    }
    return busCallOrig.call(this, destination, path, iface, member, ...rest);
  };

  // The walk alone, as the uia worker runs it.
  const acc = new X11Accessibility();
  const session = await acc.openSession(win);
  const walkOnce = async (shown = {}) => {
    const budget = new Budget(Date.now() + 60_000, new AbortController().signal);
    try {
      const r = await walk(session, await session.root(), budget, {
        maxDepth: 32,
        maxNodes: 5000,
        concurrency: 32,
        ...shown,
      });
      return r.visits.length;
    } finally {
      budget.release();
    }
  };

  // The floor's own peer link to the app.
  const floorLink = await openFloorWalk(win);
  const floorWalk = floorLink.walk;

  // pyatspi, one walk per line written to it.
  py = spawn("/usr/bin/python3", [join(REPO, "bench/lib/pyatspi_walk.py"), String(win.instance.pid)], {
    env: process.env,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: py.stdout })[Symbol.asyncIterator]();
  const ready = JSON.parse((await lines.next()).value);
  if (!ready.ready) throw new Error("pyatspi found no frame");
  const pyWalk = async () => {
    py.stdin.write("walk\n");
    const r = JSON.parse((await lines.next()).value);
    return r;
  };

  const shotRect = [win.rect[0], win.rect[1], win.rect[0] + 800, win.rect[1] + 600];
  const shot = () => floorShot(cap.capture, shotRect);

  const { encodePng } = await import(join(REPO, "dist/workers/capture/png.js"));
  const SERVER_PNG_LEVEL = 2; // src/supervisor/tools/capture.ts
  const ownFloorShot = async () => {
    const raw = await cap.capture.captureScreen(shotRect);
    return encodePng(raw, SERVER_PNG_LEVEL).byteLength;
  };

  const t = {
    ...(base ? { mcp_tree_baseline: [], mcp_tree_outline_baseline: [], mcp_shot_baseline: [] } : {}),
    mcp_tree: [],
    mcp_tree_outline: [],
    walk: [],
    pyatspi: [],
    floor_walk: [],
    transport_tree: [],
    transport_tree_outline: [],
    mcp_shot: [],
    transport_shot: [],
    floor_shot: [],
    own_encoder_floor_shot: [],
  };
  const counts = {};
  const time = async (key, fn) => {
    const a = performance.now();
    const v = await fn();
    t[key].push(performance.now() - a);
    return v;
  };
  // Warm-up: one of each (the first walks build GTK's lazy parts).
  await call(client, "inspect_tree", { detail: "full", hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 });
  await walkOnce();
  await pyWalk();
  await floorWalk();
  await call(client, "screenshot_window", { hwnd: win.hwnd, region_name: "r800x600" });
  if (base) {
    await call(base, "inspect_tree", { detail: "full", hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 });
    await call(base, "screenshot_window", { hwnd: win.hwnd, region_name: "r800x600" });
  }
  await shot();
  // The transport floor answers with what our server answered (the frame's pixels stay in a
  // scratch folder removed at the end).
  const FULL = { detail: "full", hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 };
  const OUTLINE = { hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 };
  const SHOT = { hwnd: win.hwnd, region_name: "r800x600" };
  const recorded = {
    "inspect_tree:full": await rawCall(client, "inspect_tree", FULL),
    inspect_tree: await rawCall(client, "inspect_tree", OUTLINE),
    screenshot_window: await rawCall(client, "screenshot_window", SHOT),
  };
  const transportBytes = Object.fromEntries(
    Object.entries(recorded).map(([k, v]) => [k, Buffer.byteLength(JSON.stringify(v))]),
  );
  replay = await startReplayServer(recorded);
  for (const [name, args] of [
    ["inspect_tree", FULL],
    ["inspect_tree", OUTLINE],
    ["screenshot_window", SHOT],
  ])
    await rawCall(replay.client, name, args);
  counting = perMember;
  const countedNodes = await walkOnce();
  counting = null;
  await walkOnce({ patterns: false, bounds: false });
  counting = perMemberOutline;
  await walkOnce({ patterns: false, bounds: false });
  counting = null;
  await walkOnce();
  const calls = Object.values(perMember).reduce((a, b) => a + b, 0);
  const callsOutline = Object.values(perMemberOutline).reduce((a, b) => a + b, 0);
  for (let i = 0; i < ROUNDS; i += 1) {
    const tree = await time("mcp_tree", () =>
      call(client, "inspect_tree", { detail: "full", hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 }),
    );
    counts.mcp_tree = tree.node_count;
    if (base)
      await time("mcp_tree_baseline", () =>
        call(base, "inspect_tree", { detail: "full", hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 }),
      );
    // The default detail (the outline, no patterns field): what an agent calls most.
    const outline = () => ({ hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 });
    const ours2 = () => time("mcp_tree_outline", () => call(client, "inspect_tree", outline()));
    const theirs2 = () =>
      base ? time("mcp_tree_outline_baseline", () => call(base, "inspect_tree", outline())) : null;
    if (i % 2 === 0) {
      await ours2();
      await theirs2();
    } else {
      await theirs2();
      await ours2();
    }
    counts.walk = await time("walk", walkOnce);
    const p = await time("pyatspi", pyWalk);
    counts.pyatspi = p.nodes;
    t.pyatspi[t.pyatspi.length - 1] = p.ms; // its own clock: no pipe hop counted against it
    counts.floor_walk_cached_items = await time("floor_walk", floorWalk);
    await time("transport_tree", () => rawCall(replay.client, "inspect_tree", FULL));
    await time("transport_tree_outline", () => rawCall(replay.client, "inspect_tree", OUTLINE));
    // The pair's order alternates: whichever shot comes first meets the aftermath of the walks
    // (the app and the bus still busy, collectors running), so neither side always gets it.
    const ours = () =>
      time("mcp_shot", () => call(client, "screenshot_window", { hwnd: win.hwnd, region_name: "r800x600" }));
    const floor = async () => {
      counts.floor_png_bytes = await time("floor_shot", shot);
      counts.own_encoder_floor_png_bytes = await time("own_encoder_floor_shot", ownFloorShot);
      await time("transport_shot", () => rawCall(replay.client, "screenshot_window", SHOT));
    };
    const theirs = () =>
      base
        ? time("mcp_shot_baseline", () =>
            call(base, "screenshot_window", { hwnd: win.hwnd, region_name: "r800x600" }),
          )
        : null;
    if (i % 2 === 0) {
      await ours();
      await floor();
      await theirs();
    } else {
      await theirs();
      await floor();
      await ours();
    }
  }
  // Encode alone, by level, on one captured frame: ours and sharp interleaved, 25 rounds.
  const frame = await cap.capture.captureScreen(shotRect);
  const encoders = {};
  for (const level of [1, 2, 3, 4, 6]) encoders[`ours_${level}`] = async () => encodePng(frame, level);
  for (const level of [1, 2]) encoders[`sharp_${level}`] = () => sharpPngBytes(frame, level);
  const encodeTimes = Object.fromEntries(Object.keys(encoders).map((k) => [k, []]));
  const encodeBytes = {};
  for (let i = 0; i < 25; i += 1) {
    for (const [k, fn] of Object.entries(encoders)) {
      const a = performance.now();
      const out = await fn();
      encodeBytes[k] = typeof out === "number" ? out : out.byteLength;
      encodeTimes[k].push(performance.now() - a);
    }
  }
  const encode = Object.fromEntries(
    Object.entries(encodeTimes).map(([k, v]) => [
      k,
      { p50_ms: percentiles(v).p50_ms, bytes: encodeBytes[k] },
    ]),
  );

  // Each floor plus the transport of the same round.
  const plus = (a, b) => t[a].map((v, i) => v + t[b][i]);
  t.floor_walk_plus_transport = plus("floor_walk", "transport_tree");
  t.floor_walk_plus_transport_outline = plus("floor_walk", "transport_tree_outline");
  t.floor_shot_plus_transport = plus("floor_shot", "transport_shot");
  const p = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, percentiles(v)]));
  const ratio = (a, b) => Math.round((p[a].p50_ms / p[b].p50_ms) * 100) / 100;
  floorLink.close();
  await session.dispose();
  acc.dispose();
  await cap.desktop.dispose();
  process.stdout.write(
    `${JSON.stringify(
      {
        rounds: ROUNDS,
        loadavg_start: loadStart,
        loadavg_end: la(),
        nodes: counts,
        transport_bytes: transportBytes,
        walk_calls: {
          total: calls,
          per_node: Math.round((calls / countedNodes) * 100) / 100,
          by_member: perMember,
        },
        walk_calls_outline: { total: callsOutline, by_member: perMemberOutline },
        p50_ms: Object.fromEntries(Object.entries(p).map(([k, v]) => [k, v.p50_ms])),
        ratios: {
          inspect_tree_mcp_vs_pyatspi: ratio("mcp_tree", "pyatspi"),
          walk_vs_pyatspi: ratio("walk", "pyatspi"),
          walk_vs_getitems_floor: ratio("walk", "floor_walk"),
          screenshot_mcp_vs_floor: ratio("mcp_shot", "floor_shot"),
          screenshot_mcp_vs_own_encoder_floor: ratio("mcp_shot", "own_encoder_floor_shot"),
          inspect_tree_mcp_vs_getitems_floor: ratio("mcp_tree", "floor_walk"),
          inspect_tree_outline_mcp_vs_getitems_floor: ratio("mcp_tree_outline", "floor_walk"),
          inspect_tree_mcp_vs_floor_plus_transport: ratio("mcp_tree", "floor_walk_plus_transport"),
          inspect_tree_outline_mcp_vs_floor_plus_transport: ratio(
            "mcp_tree_outline",
            "floor_walk_plus_transport_outline",
          ),
          screenshot_mcp_vs_floor_plus_transport: ratio("mcp_shot", "floor_shot_plus_transport"),
          ...(base
            ? {
                baseline_inspect_tree_mcp_vs_getitems_floor: ratio("mcp_tree_baseline", "floor_walk"),
                baseline_screenshot_mcp_vs_floor: ratio("mcp_shot_baseline", "floor_shot"),
                baseline_inspect_tree_mcp_vs_floor_plus_transport: ratio(
                  "mcp_tree_baseline",
                  "floor_walk_plus_transport",
                ),
                baseline_inspect_tree_outline_mcp_vs_floor_plus_transport: ratio(
                  "mcp_tree_outline_baseline",
                  "floor_walk_plus_transport_outline",
                ),
                baseline_screenshot_mcp_vs_floor_plus_transport: ratio(
                  "mcp_shot_baseline",
                  "floor_shot_plus_transport",
                ),
                inspect_tree_ours_vs_baseline: ratio("mcp_tree", "mcp_tree_baseline"),
                baseline_inspect_tree_outline_mcp_vs_getitems_floor: ratio(
                  "mcp_tree_outline_baseline",
                  "floor_walk",
                ),
                inspect_tree_outline_ours_vs_baseline: ratio("mcp_tree_outline", "mcp_tree_outline_baseline"),
                screenshot_ours_vs_baseline: ratio("mcp_shot", "mcp_shot_baseline"),
              }
            : {}),
        },
        encode_800x600_frame: encode,
        nodes_per_s: {
          inspect_tree_mcp: Math.round(counts.mcp_tree / (p.mcp_tree.p50_ms / 1000)),
          walk: Math.round(counts.walk / (p.walk.p50_ms / 1000)),
          pyatspi: Math.round(counts.pyatspi / (p.pyatspi.p50_ms / 1000)),
        },
        latency: p,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  py?.kill("SIGKILL");
  if (replay) {
    await replay.close();
    rmSync(replay.dir, { recursive: true, force: true });
  }
  await desk.stop();
}
