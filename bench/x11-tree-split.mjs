// Where the time of one inspect_tree goes, step by step, in this process on one private Xvfb
// desktop with gtk3-widget-factory, each step beside the GetItems floor in the same rounds:
//
//   floor:    the app's Cache.GetItems plus GetExtents of every cached Component node, pipelined
//             over this process's own peer link (as bench/x11-floor.mjs);
//   verify:   the uia worker's target check (verifyTarget: the desktop read and the identity);
//   walk:     the AT-SPI walk as the uia worker runs it, outline (no patterns) and full;
//   handler:  the uia worker's whole a11y.inspect handler (check, session, walk, nodes);
//   reply:    what the reply costs between the worker and the tool: the structured clone
//             (`structuredClone`, as postMessage does), the supervisor's check of it
//             (treeResults.parseTreeResult), the outline text and JSON of the tool's answer.
//
//   npm run build && node bench/x11-tree-split.mjs     (BENCH_ROUNDS, default 30)
// Prints p50 and min per step (ms), and the load average at start and end.
import { loadavg } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { openFloorWalk, REPO, startDesk } from "./lib/x11desk.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);
const l0 = la();
const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const { createX11Platform } = await import(join(REPO, "dist/platforms/x11/index.js"));
  const { walk, Budget } = await import(join(REPO, "dist/workers/uia/walk.js"));
  const { createUiaRuntime } = await import(join(REPO, "dist/workers/uia/handlers.js"));
  const { verifyTarget } = await import(join(REPO, "dist/workers/verify.js"));
  const { formatTree } = await import(join(REPO, "dist/supervisor/tree/format.js"));
  const tree = await import(join(REPO, "dist/supervisor/hosting/treeResults.js"));
  const platform = await createX11Platform({ workerKind: "uia" });
  const target = { hwnd: win.hwnd, instance: win.instance };

  // The floor's own peer link to the app (as bench/x11-floor.mjs).
  const floorLink = await openFloorWalk(win);
  const floor = floorLink.walk;

  const session = await platform.accessibility.openSession(win);
  const walkOnce = async (patterns) => {
    const b = new Budget(Date.now() + 60000, new AbortController().signal);
    try {
      await walk(session, await session.root(), b, {
        maxDepth: 32,
        maxNodes: 5000,
        concurrency: 32,
        patterns,
      });
    } finally {
      b.release();
    }
  };
  const rt = createUiaRuntime();
  const init = { kind: "uia", platform: "x11", fake_desktop: null, log_level: "error" };
  const inspect = (patterns) =>
    rt.handlers["a11y.inspect"](
      {
        session_key: "k",
        target,
        max_depth: 32,
        max_nodes: 5000,
        deadline_ms: 60000,
        root_ref: null,
        patterns,
      },
      { signal: new AbortController().signal, deadline: Date.now() + 60000, init, platform },
    );
  const reply = async (result) => {
    const a = performance.now();
    const cloned = structuredClone(result);
    const b = performance.now();
    const checked = await tree.parseTreeResult("a11y.inspect", cloned);
    const c = performance.now();
    if (!checked.success) throw new Error("reply refused");
    const r = checked.data;
    const text = [r.root, ...r.popups].map((n) => formatTree(n, r, { collapse: true })).join("\n");
    const json = JSON.stringify({ content: [{ type: "text", text }], structuredContent: r });
    const d = performance.now();
    return { clone: b - a, check: c - b, text_json: d - c, chars: json.length };
  };

  const t = {};
  const add = (k, v) => {
    t[k] ??= [];
    t[k].push(v);
  };
  const time = async (k, f) => {
    const a = performance.now();
    const v = await f();
    add(k, performance.now() - a);
    return v;
  };
  const steps = {
    floor,
    verify: () => verifyTarget(platform.desktop, target),
    walk_outline: () => walkOnce(false),
    walk_full: () => walkOnce(true),
    handler_outline: () => inspect(false),
    handler_full: async () => {
      const r = await time("handler_full", () => inspect(true));
      for (const [k, v] of Object.entries(await reply(r))) if (k !== "chars") add(`reply_${k}`, v);
    },
  };
  for (const f of Object.values(steps)) {
    await f();
    await f();
  }
  const keys = Object.keys(steps);
  for (let i = 0; i < ROUNDS; i++) {
    for (let j = 0; j < keys.length; j++) {
      const k = keys[(i + j) % keys.length];
      if (k === "handler_full") await steps[k]();
      else await time(k, steps[k]);
    }
  }
  const q = (v, p) => {
    const s = [...v].sort((a, b) => a - b);
    return Math.round(s[Math.floor(p * (s.length - 1))] * 100) / 100;
  };
  console.log(
    JSON.stringify({
      load: [l0, la()],
      p50: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, q(v, 0.5)])),
      min: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, q(v, 0)])),
    }),
  );
  floorLink.close();
} finally {
  await desk.stop();
}
