// The uia worker's whole a11y.inspect (or a11y.find) handler of two builds, in this process,
// rounds in a balanced order, on one private Xvfb desktop with gtk3-widget-factory (260 nodes),
// one X11 platform for both (each build its own session store, so its own open session); the
// target check alone and the GetItems floor beside them.
//
//   npm run build && BENCH_BASELINE_REPO=<checkout with a built dist/> node bench/x11-inspect-ab.mjs
//   (BENCH_ROUNDS, default 40; BENCH_DETAIL=full for patterns; BENCH_OP=find for a11y.find with
//   BENCH_FIND_NAME, default a name nothing has so the whole tree is searched, or BENCH_FIND_ROLE
//   and BENCH_FIND_MAX for a find that stops after more than BENCH_FIND_MAX matches)
// Prints p50 and min per step (ms), the ratios of p50s, and the load average at start and end.
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { openFloorWalk, REPO, startDesk } from "./lib/x11desk.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 40);
const BASE = process.env.BENCH_BASELINE_REPO;
if (!BASE) throw new Error("BENCH_BASELINE_REPO: a checkout with a built dist/");
const patterns = process.env.BENCH_DETAIL === "full";
const op = process.env.BENCH_OP === "find" ? "a11y.find" : "a11y.inspect";
const role = process.env.BENCH_FIND_ROLE ?? null;
const query =
  op === "a11y.find"
    ? {
        name_contains: role === null ? (process.env.BENCH_FIND_NAME ?? "no element is named this") : null,
        role,
        automation_id: null,
        state: null,
        max_results: Number(process.env.BENCH_FIND_MAX ?? 50),
      }
    : { max_depth: 32, max_nodes: 5000, root_ref: null, patterns };
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);
const l0 = la();
const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const { createX11Platform } = await import(join(REPO, "dist/platforms/x11/index.js"));
  const { verifyTarget } = await import(join(REPO, "dist/workers/verify.js"));
  const platform = await createX11Platform({ workerKind: "uia" });
  const target = { hwnd: win.hwnd, instance: win.instance };
  const init = { kind: "uia", platform: "x11", fake_desktop: null, log_level: "error" };
  const handlerOf = async (repo) => {
    const { createUiaRuntime } = await import(join(resolve(repo), "dist/workers/uia/handlers.js"));
    const rt = createUiaRuntime();
    return () =>
      rt.handlers[op](
        { session_key: "k", target, deadline_ms: 60000, ...query },
        { signal: new AbortController().signal, deadline: Date.now() + 60000, init, platform },
      );
  };
  // The floor of x11-floor.mjs: one Cache.GetItems plus every GetExtents in flight.
  const floorLink = await openFloorWalk(win);
  const steps = {
    this: await handlerOf(REPO),
    base: await handlerOf(BASE),
    check: () => verifyTarget(platform.desktop, target),
    floor: floorLink.walk,
  };
  for (const f of Object.values(steps)) for (let i = 0; i < 3; i++) await f();
  const sample = await steps.this();
  const t = Object.fromEntries(Object.keys(steps).map((k) => [k, []]));
  const keys = Object.keys(steps);
  // The four steps in a balanced order (a Williams square): within rounds each step comes
  // right after each other step equally often. A plain rotation put the baseline right after
  // this build in three rounds of four, so it waited behind the calls this build's find left in
  // flight in the app when it stopped early (an A/A run gave 0.85-0.90 with it).
  const ORDERS = [
    [0, 1, 3, 2],
    [1, 2, 0, 3],
    [2, 3, 1, 0],
    [3, 0, 2, 1],
  ];
  for (let i = 0; i < ROUNDS; i++) {
    for (const j of ORDERS[i % ORDERS.length]) {
      const k = keys[j];
      const a = performance.now();
      await steps[k]();
      t[k].push(performance.now() - a);
    }
  }
  const q = (v, p) => {
    const s = [...v].sort((a, b) => a - b);
    return Math.round(s[Math.floor(p * (s.length - 1))] * 100) / 100;
  };
  console.log(
    JSON.stringify({
      rounds: ROUNDS,
      op,
      ...(op === "a11y.find"
        ? { query, matches: sample.elements.length, truncated: sample.truncated }
        : { detail: patterns ? "full" : "outline" }),
      load: [l0, la()],
      p50: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, q(v, 0.5)])),
      min: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, q(v, 0)])),
      this_over_base: Math.round((q(t.this, 0.5) / q(t.base, 0.5)) * 1000) / 1000,
      this_over_floor: Math.round((q(t.this, 0.5) / q(t.floor, 0.5)) * 1000) / 1000,
      base_over_floor: Math.round((q(t.base, 0.5) / q(t.floor, 0.5)) * 1000) / 1000,
    }),
  );
  floorLink.close();
  await platform.dispose();
} finally {
  await desk.stop();
}
