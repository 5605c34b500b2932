// Where one inspect_tree over MCP spends its wall time, step by step through the supervisor and
// the uia worker, on one private Xvfb desktop with gtk3-widget-factory (260 nodes).
//
// A copy of dist/ (in a temporary folder, with node_modules and package.json linked) gets a
// timestamp at each step below, written to a file only this bench names; the build itself is
// untouched and has no such hooks. Every thread stamps performance.timeOrigin + performance.now(),
// so the steps of the supervisor and of the worker share one clock:
//
//   client_send → call_start (the SDK's parse) → parsed (the arguments) → resolve_start →
//   listing_ask (the walk sent ahead, where the build does, then the listing asked) →
//   resolved (the target from the capture worker's listing) → authorized (grant, budgets) →
//   uia_send (the handler's request, or its read of the walk sent ahead) → w_start (the
//   message to the uia worker; sent ahead, it comes before resolved) → w_checked (its target
//   check; on an open session it runs beside the walk) → w_walked (session, root and walk;
//   beside the check: what is left of the walk once the check passed) → w_built (nodes) →
//   w_popups (popup trees, pack) → uia_back (the reply to the supervisor) → call_end (outline,
//   result) → client_back. Each step's time is from the mark logged just before it.
//
//   npm run build && node bench/x11-tree-timeline.mjs   (BENCH_ROUNDS, default 40;
//   BENCH_DETAIL=full for detail "full", else the default outline; BENCH_DIST_REPO=<checkout>
//   times that checkout's dist/ instead, e.g. a baseline build)
// Prints, per step, the p50 and min of its own duration and the p50 of its time since
// client_send (ms), the uia worker's garbage collections per call during the timed rounds (by
// kind: count and ms, from a PerformanceObserver in the copy's uia worker; a collection is CPU
// on the walk's thread), and the load average at start and end. A marker that no longer matches the
// built code stops the bench (the steps must be moved along with the code).
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { patchDist, scratchDist } from "./lib/distCopy.mjs";
import { call } from "./lib/mcp.mjs";
import { REPO, startDesk } from "./lib/x11desk.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 40);
/** The checkout whose dist/ is timed (BENCH_DIST_REPO, e.g. a baseline worktree; default this one). */
const FROM = resolve(process.env.BENCH_DIST_REPO ?? REPO);
const la = () => loadavg().map((v) => Math.round(v * 100) / 100);
const l0 = la();

/** file (under dist/) → [code to find, code to put before it (a stamp)]. */
const MARKS = {
  "supervisor/mcp/server.js": [
    ["const correlationId = newCorrelationId();", "__tl('call_start');"],
    ["const run = await runChain(sup, {", "__tl('parsed');"],
    ["if (def && def.audited !== false) {", "__tl('call_end');"],
  ],
  "supervisor/access/chain.js": [
    ["state.target = await resolveTarget(", "__tl('resolve_start');"],
    // Where the walk goes ahead of the listing (a build with observeAhead), else the listing.
    [
      ["state.ahead = def.observeAhead?.(", "const { windows: all, id } = await liveListing(sup, signal);"],
      "__tl('listing_ask');",
    ],
    ["await authorize(sup, def, args, client.hash, state);", "__tl('resolved');"],
    ["const admitted = {", "__tl('authorized');"],
  ],
  "supervisor/tools/a11y.js": [
    // The handler's request, or its read of the walk sent ahead (a build with observeAhead).
    [
      [
        'const { answer: r, ahead } = await ctx.sessions.observe(s, "a11y.inspect",',
        'const r = await ctx.sessions.call(s, "a11y.inspect", {',
      ],
      "__tl('uia_send');",
    ],
    ["const root = ctx.sessions.externalize(s, r.root);", "__tl('uia_back');"],
  ],
  "workers/uia/handlers.js": [
    // Alternatives, first found: the check beside the walk on an open session (w_checked when
    // the check passed, the walk still running; w_walked when it is done), or the check first.
    [
      [
        "const branch = budget.branch();",
        "const window = await checked(core, platform, args.session_key, args.target, budget);",
      ],
      "__tl('w_start');",
    ],
    [
      ["if (live.closed) {", "const live = await obtained(core, platform, args, window, budget);"],
      "__tl('w_checked');",
    ],
    [
      [
        "throwIfClosed(live);\n    const shown",
        "throwIfClosed(live);\n    const patterns",
        "throwIfClosed(live);\n    const out = buildTree",
      ],
      "__tl('w_walked');",
    ],
    ["const extra = await popupTrees(", "__tl('w_built');"],
    ["return {\n        // As columns", "__tl('w_popups');"],
  ],
};

/** The copy's uia worker writes "<ms> <kind> <duration>" per garbage collection to `gcLog`. */
function gcObserved(dir, gcLog) {
  const path = join(dir, "dist/workers/uia/main.js");
  const observe = `import { PerformanceObserver as __gcObserver } from "node:perf_hooks";\nimport { appendFileSync as __gcAppend } from "node:fs";\nnew __gcObserver((list) => { for (const e of list.getEntries()) __gcAppend(${JSON.stringify(gcLog)}, \`\${(performance.timeOrigin + e.startTime).toFixed(3)} \${e.detail?.kind ?? 0} \${e.duration.toFixed(3)}\\n\`); }).observe({ entryTypes: ["gc"] });\n`;
  writeFileSync(path, observe + readFileSync(path, "utf8"));
}

/** perf_hooks' NODE_PERFORMANCE_GC_* kinds. */
const GC_KINDS = {
  1: "scavenge",
  2: "minor_mark_compact",
  4: "mark_compact",
  8: "incremental_marking",
  16: "weak_callbacks",
};

function gcPerCall(gcLog, rounds) {
  const by = {};
  for (const line of readFileSync(gcLog, "utf8").split("\n")) {
    const [, kind, ms] = line.split(" ");
    if (ms === undefined) continue;
    const k = GC_KINDS[kind] ?? `kind_${kind}`;
    by[k] ??= { count: 0, ms: 0 };
    by[k].count += 1;
    by[k].ms += Number(ms);
  }
  const r = (v) => Math.round((v / rounds) * 100) / 100;
  return Object.fromEntries(Object.entries(by).map(([k, v]) => [k, { count: r(v.count), ms: r(v.ms) }]));
}

function stampedDist(log, gcLog) {
  const dir = scratchDist(FROM, "uix-tree-timeline-", join(REPO, "node_modules"));
  const stamp = `import { appendFileSync as __tlAppend } from "node:fs";\nconst __tl = (step) => __tlAppend(${JSON.stringify(log)}, \`\${(performance.timeOrigin + performance.now()).toFixed(3)} \${step}\\n\`);\n`;
  const edits = Object.entries(MARKS).flatMap(([file, marks]) =>
    marks.map(([alternatives, put]) => [file, alternatives, (found) => `${put} ${found}`]),
  );
  patchDist(dir, "x11-tree-timeline", stamp, edits);
  gcObserved(dir, gcLog);
  return dir;
}

const logDir = mkdtempSync(join(tmpdir(), "uix-tree-timeline-log-"));
const log = join(logDir, "steps.log");
const gcLog = join(logDir, "gc.log");
const copy = stampedDist(log, gcLog);
const now = () => (performance.timeOrigin + performance.now()).toFixed(3);
const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const { client } = await desk.grantedServer(win, {}, {}, join(copy, "dist/cli.js"));
  const args = { hwnd: win.hwnd, max_depth: 32, max_nodes: 5000 };
  if (process.env.BENCH_DETAIL === "full") args.detail = "full";
  for (let i = 0; i < 5; i++) await call(client, "inspect_tree", args);
  writeFileSync(log, "");
  writeFileSync(gcLog, "");
  for (let r = 0; r < ROUNDS; r++) {
    appendFileSync(log, `${now()} client_send\n`);
    await call(client, "inspect_tree", args);
    appendFileSync(log, `${now()} client_back\n`);
  }
  // The worker's observer reports after the collection's task: one turn for the last one.
  await new Promise((r) => setTimeout(r, 50));
  const gc = gcPerCall(gcLog, ROUNDS);
  const rounds = [];
  for (const line of readFileSync(log, "utf8").split("\n")) {
    const [t, step] = line.split(" ");
    if (step === undefined) continue;
    if (step === "client_send") rounds.push([]);
    rounds.at(-1)?.push({ step, t: Number(t) });
  }
  const q = (v, p) => {
    const s = [...v].sort((a, b) => a - b);
    return Math.round(s[Math.floor(p * (s.length - 1))] * 100) / 100;
  };
  const steps = {};
  for (const r of rounds) {
    for (let i = 1; i < r.length; i++) {
      steps[r[i].step] ??= { own: [], since: [] };
      const s = steps[r[i].step];
      s.own.push(r[i].t - r[i - 1].t);
      s.since.push(r[i].t - r[0].t);
    }
  }
  console.log(
    JSON.stringify(
      {
        rounds: ROUNDS,
        detail: args.detail ?? "outline",
        load: [l0, la()],
        uia_worker_gc_per_call: gc,
        steps: Object.fromEntries(
          Object.entries(steps).map(([k, v]) => [
            k,
            { p50: q(v.own, 0.5), min: q(v.own, 0), at_p50: q(v.since, 0.5) },
          ]),
        ),
      },
      null,
      1,
    ),
  );
} finally {
  await desk.stop();
  rmSync(copy, { recursive: true, force: true });
  rmSync(logDir, { recursive: true, force: true });
}
