// The AT-SPI walk's calls and waves on gtk3-widget-factory, two builds in one process on one
// private Xvfb desktop (BENCH_BASELINE_REPO's dist/ and this repo's dist/), each with action
// names (full) and without (outline), next to the GetItems floor:
//   - calls by member of one warm walk (the session has walked the same root with the same
//     limits before), how many left before GetItems answered, and waves: a call's wave is 1 +
//     the highest wave among the calls answered before it left (so 1 = with GetItems);
//   - per walk, ms from its start to GetItems' answer, to the last D-Bus answer and to its end
//     (p50 of BENCH_ROUNDS rounds, default 60, builds rotated; min of the end), and the floor
//     (GetItems plus every cached Component node's GetExtents in flight) in the same rounds.
//   npm run build && BENCH_BASELINE_REPO=/tmp/base node bench/x11-walk-waves.mjs
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { openFloorWalk, REPO, startDesk } from "./lib/x11desk.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60);
const BASE = process.env.BENCH_BASELINE_REPO ? resolve(process.env.BENCH_BASELINE_REPO) : null;
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);
const loadStart = la();
const med = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round((s[s.length >> 1] ?? 0) * 10) / 10;
};

async function build(repo, win) {
  const { X11Accessibility } = await import(join(repo, "dist/platforms/x11/atspi.js"));
  const { walk, Budget } = await import(join(repo, "dist/workers/uia/walk.js"));
  const { AtspiBus } = await import(join(repo, "dist/platforms/x11/atspiBus.js"));
  const st = { t0: 0, items: 0, last: 0, itemsDone: true, early: 0, done: 0, per: null, waves: null };
  const plain = AtspiBus.prototype.call;
  AtspiBus.prototype.call = function (d, p, i, m, ...rest) {
    const wave = st.done + 1;
    if (st.per) {
      const k = `${i.replace("org.a11y.atspi.", "")}.${m}`;
      st.per[k] = (st.per[k] ?? 0) + 1;
      st.waves[wave] = (st.waves[wave] ?? 0) + 1;
      if (m !== "GetItems" && !st.itemsDone) st.early += 1;
    }
    const pr = plain.call(this, d, p, i, m, ...rest);
    if (m === "GetItems") st.itemsDone = false;
    const at = () => {
      const t = performance.now() - st.t0;
      if (m === "GetItems") {
        st.items = t;
        st.itemsDone = true;
      }
      if (t > st.last) st.last = t;
      if (wave > st.done) st.done = wave;
    };
    pr.then(at, at);
    return pr;
  };
  const acc = new X11Accessibility();
  const s = await acc.openSession(win);
  const once = async (patterns) => {
    const b = new Budget(Date.now() + 60_000, new AbortController().signal);
    Object.assign(st, { t0: performance.now(), items: 0, last: 0, done: 0, early: 0 });
    try {
      await walk(s, await s.root(), b, { maxDepth: 32, maxNodes: 5000, concurrency: 32, patterns });
    } finally {
      b.release();
    }
    return { items: st.items, last: st.last, end: performance.now() - st.t0 };
  };
  const counted = {};
  for (const patterns of [true, false]) {
    await once(patterns);
    await once(patterns);
    st.per = {};
    st.waves = {};
    await once(patterns);
    const total = Object.values(st.per).reduce((a, b) => a + b, 0);
    counted[patterns ? "full" : "outline"] = {
      total,
      before_getitems_answer: st.early,
      waves: st.waves,
      by_member: st.per,
    };
    st.per = null;
  }
  return { once, counted, res: { true: [], false: [] }, close: () => acc.dispose() };
}

const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const builds = { ...(BASE ? { baseline: await build(BASE, win) } : {}), this: await build(REPO, win) };
  const floor = await openFloorWalk(win);
  await floor.walk();
  const floorTimes = [];
  const names = Object.keys(builds);
  for (let i = 0; i < ROUNDS; i += 1) {
    for (const n of i % 2 ? names : [...names].reverse())
      for (const p of [true, false]) builds[n].res[p].push(await builds[n].once(p));
    const a = performance.now();
    await floor.walk();
    floorTimes.push(performance.now() - a);
  }
  const out = {
    rounds: ROUNDS,
    loadavg_start: loadStart,
    loadavg_end: la(),
    floor: { p50: med(floorTimes), min: Math.round(Math.min(...floorTimes) * 10) / 10 },
  };
  for (const [n, b] of Object.entries(builds)) {
    out[n] = { calls: b.counted };
    for (const p of [true, false]) {
      const r = b.res[p];
      const end = med(r.map((x) => x.end));
      out[n][p ? "full" : "outline"] = {
        getitems_answered: med(r.map((x) => x.items)),
        last_answer: med(r.map((x) => x.last)),
        end,
        min_end: Math.round(Math.min(...r.map((x) => x.end)) * 10) / 10,
        end_vs_floor: Math.round((end / out.floor.p50) * 100) / 100,
      };
    }
    b.close();
  }
  floor.close();
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  await desk.stop();
}
