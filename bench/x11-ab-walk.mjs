// The AT-SPI walk alone (the uia worker's code, in process) of two builds side by side on one
// private Xvfb desktop with gtk3-widget-factory, rounds rotated so load hits all alike:
// BENCH_BASELINE_REPO's dist/ and this repo's dist/, each with patterns read and without
// (the outline's walk: no action names).
//   npm run build && BENCH_BASELINE_REPO=/tmp/base node bench/x11-ab-walk.mjs   (BENCH_ROUNDS, default 40)
// Prints p50 and min per walk, nodes and the load average at start and end.

import { loadavg } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { REPO, startDesk } from "./lib/x11desk.mjs";

const BASE = process.env.BENCH_BASELINE_REPO;
if (!BASE) throw new Error("BENCH_BASELINE_REPO: the other build's repository (with dist/)");
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);
const l0 = la();
const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const mk = async (repo, patterns) => {
    const { X11Accessibility } = await import(join(repo, "dist/platforms/x11/atspi.js"));
    const { walk, Budget } = await import(join(repo, "dist/workers/uia/walk.js"));
    const acc = new X11Accessibility();
    const s = await acc.openSession(win);
    return async () => {
      const b = new Budget(Date.now() + 60000, new AbortController().signal);
      try {
        return (await walk(s, await s.root(), b, { maxDepth: 32, maxNodes: 5000, concurrency: 32, patterns }))
          .visits.length;
      } finally {
        b.release();
      }
    };
  };
  const runs = {
    before: await mk(BASE, true),
    before_outline: await mk(BASE, false),
    after_full: await mk(REPO, true),
    after_outline: await mk(REPO, false),
  };
  const t = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
  const nodes = {};
  for (const f of Object.values(runs)) {
    await f();
    await f();
  }
  const keys = Object.keys(runs);
  for (let i = 0; i < Number(process.env.BENCH_ROUNDS ?? 40); i++) {
    for (let j = 0; j < keys.length; j++) {
      const k = keys[(i + j) % keys.length];
      const a = performance.now();
      nodes[k] = await runs[k]();
      t[k].push(performance.now() - a);
    }
  }
  const q = (v, p) => {
    const s = [...v].sort((a, b) => a - b);
    return Math.round(s[Math.floor(p * (s.length - 1))] * 10) / 10;
  };
  console.log(
    JSON.stringify({
      load: [l0, la()],
      nodes,
      p50: Object.fromEntries(keys.map((k) => [k, q(t[k], 0.5)])),
      min: Object.fromEntries(keys.map((k) => [k, q(t[k], 0)])),
    }),
  );
} finally {
  await desk.stop();
}
