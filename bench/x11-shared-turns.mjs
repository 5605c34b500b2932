// Two identities on one application (gtk3-widget-factory on a private Xvfb desktop), one remote
// server (Streamable HTTP, OAuth) per build: how long Bob's inspect_tree takes alone, and while
// Alice keeps BENCH_BACKLOG walks of the same app in flight (re-sent as each ends). The app
// answers its accessibility calls one at a time, so Bob's walk can only be as fast as the share
// of the app the server gives him. Also Alice's walks/s with and without Bob, which turns must
// not cost. Builds in turn (BENCH_BASELINE: other dist/cli.js, comma-separated), BENCH_ROUNDS
// rounds each. BENCH_TOOL=screenshot_window times shots instead of walks (the one capture worker
// serves every identity), and BENCH_MEMORY_BYTES sets the server's screenshot memory budget
// (DESKTOP_AUTOMATION_SCREENSHOT_MEMORY_BUDGET_BYTES), e.g. to fewer shots than are let in flight.
//
//   npm run build && node bench/x11-shared-turns.mjs
//   BENCH_BASELINE=/tmp/base/dist/cli.js BENCH_ROUNDS=2 BENCH_WALKS=30 node bench/x11-shared-turns.mjs
//   BENCH_TOOL=screenshot_window BENCH_MEMORY_BYTES=8388608 BENCH_BASELINE=/tmp/base/dist/cli.js node bench/x11-shared-turns.mjs
//
// Prints one JSON object: per build and round, Bob's p50/p99 alone and under the backlog (ms),
// their ratio, Alice's walks/s alone and with Bob, and the 1-minute load average around each.
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { CLI, call, percentiles } from "./lib/mcp.mjs";
import { connectIdentity, remoteSetup, startHttpServer } from "./lib/remote.mjs";
import { round2 } from "./lib/stats.mjs";
import { approvedAtDialog, policyFor, startDesk } from "./lib/x11desk.mjs";

const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 24);
const WALKS = Number(process.env.BENCH_WALKS ?? 30);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const ALICE_ALONE_S = Number(process.env.BENCH_ALICE_S ?? 5);
const TOOL = process.env.BENCH_TOOL ?? "inspect_tree";
const MEMORY = process.env.BENCH_MEMORY_BYTES;
const builds = [CLI, ...(process.env.BENCH_BASELINE ?? "").split(",").filter(Boolean)];
const la = () => Math.round(loadavg()[0] * 100) / 100;
const say = (m) => process.stderr.write(`[turns] ${m}\n`);

const desk = await startDesk();
const setup = await remoteSetup("bench-turns");
const out = { tool: TOOL, memory_budget_bytes: MEMORY ?? null, backlog: BACKLOG, walks: WALKS, runs: [] };
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const policy = join(setup.dir, "x11-policy.json");
  writeFileSync(
    policy,
    JSON.stringify(
      policyFor(win, {
        policy_id: "bench-turns",
        // 800×600 of the window, by name (a policy file allows shots of named regions only).
        safe_regions: [{ name: "window", rect: [0, 0, 800, 600] }],
        limits: {
          max_actions_per_minute: 10_000_000,
          max_screenshot_pixels_per_minute: 1e12,
          max_png_bytes: 64 * 1024 * 1024,
        },
      }),
    ),
  );
  for (let round = 0; round < ROUNDS; round++) {
    for (const cli of builds) out.runs.push({ build: cli, round, ...(await runOnce(cli, win, policy)) });
  }
} finally {
  await desk.stop();
  setup.remove();
}
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);

async function runOnce(cli, win, policy) {
  const srv = await startHttpServer(setup, {
    cli,
    maxSessions: 8,
    env: {
      UIINSPECT_PLATFORM: "x11",
      UIINSPECT_FAKE_DESKTOP: "",
      DESKTOP_AUTOMATION_POLICY_FILE: policy,
      UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT: "1",
      UIINSPECT_TREE_DEADLINE_MS: "60000",
      UIINSPECT_WORKER_DEADLINE_MS: "120000",
      ...(MEMORY ? { DESKTOP_AUTOMATION_SCREENSHOT_MEMORY_BUDGET_BYTES: MEMORY } : {}),
    },
  });
  const alice = await connectIdentity(setup, srv.url, "alice");
  const bob = await connectIdentity(setup, srv.url, "bob");
  try {
    say(`${cli}: granting`);
    for (const who of [alice, bob]) {
      const grant = await approvedAtDialog(call(who.client, "request_access", { hwnd: win.hwnd }));
      if (grant.decision !== "approved") throw new Error(`not approved: ${JSON.stringify(grant)}`);
    }
    const args =
      TOOL === "screenshot_window" ? { hwnd: win.hwnd, region_name: "window" } : { hwnd: win.hwnd };
    const walk = (who) => call(who.client, TOOL, args);
    const bobWalks = async () => {
      const t = [];
      for (let i = 0; i < WALKS + 3; i++) {
        const s = performance.now();
        await walk(bob);
        if (i >= 3) t.push(performance.now() - s);
      }
      return percentiles(t);
    };
    // Alice's backlog: BACKLOG walks in flight, each re-sent as it ends, until stopped.
    const backlog = () => {
      let stop = false;
      let done = 0;
      const lanes = Array.from({ length: BACKLOG }, async () => {
        while (!stop) {
          await walk(alice);
          done += 1;
        }
      });
      const started = performance.now();
      return {
        rate: () => done / ((performance.now() - started) / 1000),
        end: async () => {
          stop = true;
          await Promise.all(lanes);
        },
      };
    };
    say("granted; Bob alone");
    const load0 = la();
    const alone = await bobWalks();
    const a = backlog();
    await new Promise((r) => setTimeout(r, ALICE_ALONE_S * 1000));
    const aliceAlone = a.rate();
    await a.end();
    say("Bob under the backlog");
    const b = backlog();
    await new Promise((r) => setTimeout(r, 500));
    const under = await bobWalks();
    const aliceWithBob = b.rate();
    await b.end();
    return {
      load: [load0, la()],
      bob_alone: { p50: round2(alone.p50_ms), p99: round2(alone.p99_ms) },
      bob_under_backlog: { p50: round2(under.p50_ms), p99: round2(under.p99_ms) },
      bob_p50_ratio: round2(under.p50_ms / alone.p50_ms),
      alice_walks_per_s_alone: round2(aliceAlone),
      alice_walks_per_s_with_bob: round2(aliceWithBob),
    };
  } finally {
    await alice.client.close().catch(() => undefined);
    await bob.client.close().catch(() => undefined);
    await srv.stop();
  }
}
