// Remote mode under one attacking identity: 31 honest OAuth identities loop inspect_tree and
// screenshot_window on one `serve --http 127.0.0.1:0` supervisor, first alone ("baseline"),
// then while a 32nd identity attacks ("attacked"): 256 POSTs whose bodies trickle in one byte
// every 2 s (re-opened whenever the server cuts one off), and as many 30-second waits as it can
// keep in flight (wait_for_window on a title that never appears, re-sent as each ends or is
// refused). Same server, same sessions, phases back to back; the figure is the honest calls'
// p99 ratio attacked / baseline.
//
//   npm run build && node bench/remote-attack.mjs             # 40 s per phase
//   BENCH_SECONDS=20 node bench/remote-attack.mjs
//   BENCH_ATTACK=slow node bench/remote-attack.mjs        # slow bodies only (or =waits)
//
// Prints one JSON object: per phase the honest calls' latency, their refusals (429) and
// failures, what the attacker got (admitted waits, refused waits, slow bodies cut off or
// refused), and the 1-minute load average before and after each phase.
import { fork } from "node:child_process";
import { request as httpRequest } from "node:http";
import { connect as netConnect } from "node:net";
import { loadavg } from "node:os";
import { call } from "./lib/mcp.mjs";
import { connectIdentity, hwndOf, nextCall, remoteSetup, startHttpServer } from "./lib/remote.mjs";
import { stats } from "./lib/stats.mjs";

const HONEST = Number(process.env.BENCH_HONEST ?? 31);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 40);
// BENCH_ATTACK=slow or =waits runs one half of the attack alone (to see which costs what).
const MODE = process.env.BENCH_ATTACK ?? "both";
const SLOW_BODIES = MODE === "waits" ? 0 : 256;
const WAITS = MODE === "slow" ? 0 : 48;

// The attacker runs in a process of its own (started below with --attacker), so its sockets
// and reconnections never delay the honest clients' own event loop, which measures them.
if (process.argv[2] === "--attacker") {
  const [portArg, attackerToken, sid] = process.argv.slice(3);
  const a = attack({ token: attackerToken }, sid, Number(portArg));
  process.on("message", (m) => {
    if (m !== "stop") return;
    a.stop();
    process.send(a.got, () => process.exit(0));
  });
  // Nothing below is the attacker's: hold the module here until the parent says stop.
  await new Promise(() => undefined);
}

const setup = await remoteSetup("bench-remote-attack");
const srv = await startHttpServer(setup, { maxSessions: HONEST + 8 });
const { port } = srv;
const connect = (sub) => connectIdentity(setup, srv.url, sub);

/** The honest identities' loop for `seconds`: latencies, and how many calls were refused or failed. */
async function honestLoad(clients, seconds) {
  const lat = [];
  perTool.inspect_tree = [];
  perTool.screenshot_window = [];
  let refused = 0;
  let failed = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    clients.map(async (c, i) => {
      const hwnd = hwndOf(i);
      for (let k = 0; performance.now() < end; k++) {
        const { name, args } = nextCall(k, hwnd);
        const s = performance.now();
        try {
          await call(c.client, name, args);
          lat.push(performance.now() - s);
          perTool[name].push(performance.now() - s);
        } catch (e) {
          if (/429|rate_limited/.test(String(e))) refused++;
          else failed++;
        }
      }
    }),
  );
  return {
    ...stats(lat),
    refused,
    failed,
    inspect_tree: stats(perTool.inspect_tree),
    screenshot_window: stats(perTool.screenshot_window),
  };
}

/** The attacker: slow bodies and long waits, kept up until stop() (counts what it got). */
function attack(attacker, sid, port) {
  const got = { waits_answered: 0, waits_refused: 0, slow_cut_408: 0, slow_refused_429: 0, slow_other: 0 };
  let stopping = false;
  const sockets = new Set();
  const slowBody = () => {
    if (stopping) return;
    const sock = netConnect(port, "127.0.0.1");
    sockets.add(sock);
    let answer = "";
    let timer = null;
    sock.on("data", (d) => {
      answer += d.toString("latin1");
    });
    sock.on("error", () => undefined);
    sock.once("connect", () => {
      sock.write(
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${attacker.token}\r\n` +
          "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{",
      );
      timer = setInterval(() => sock.destroyed || sock.write(" "), 2000);
    });
    sock.once("close", () => {
      clearInterval(timer);
      sockets.delete(sock);
      const status = /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1];
      if (status === "408") got.slow_cut_408++;
      else if (status === "429") got.slow_refused_429++;
      else if (!stopping) got.slow_other++;
      // Over the connection cap the answer is immediate: come back a little later, as a
      // determined attacker would, without spinning.
      setTimeout(slowBody, status === "429" ? 250 : 0);
    });
  };
  let nextId = 1;
  const wait = () => {
    if (stopping) return;
    // Each request its own JSON-RPC id: the transport routes an answer by its id.
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: nextId++,
      method: "tools/call",
      params: { name: "wait_for_window", arguments: { title_contains: "never there", timeout_ms: 30_000 } },
    });
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        path: "/mcp",
        method: "POST",
        agent: false,
        headers: {
          authorization: `Bearer ${attacker.token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": sid,
          "mcp-protocol-version": "2025-06-18",
          "content-length": Buffer.byteLength(body),
        },
      },
      (res) => {
        const refused = res.statusCode === 429;
        if (refused) got.waits_refused++;
        res.resume();
        res.once("end", () => {
          if (!refused) got.waits_answered++;
          setTimeout(wait, refused ? 1000 : 0);
        });
      },
    );
    req.on("error", () => setTimeout(wait, 1000));
    req.end(body);
  };
  for (let i = 0; i < WAITS; i++) wait();
  for (let i = 0; i < SLOW_BODIES; i++) slowBody();
  return {
    got,
    stop: () => {
      stopping = true;
      for (const s of sockets) s.destroy();
    },
  };
}

/** Each honest tool's own figures, to see which shared part an attack reaches. */
const perTool = { inspect_tree: [], screenshot_window: [] };

const honest = [];
let attacker = null;
try {
  for (let i = 0; i < HONEST; i++) honest.push(await connect(`agent-${i}`));
  await Promise.all(
    honest.map((c, i) =>
      call(c.client, "request_access", { hwnd: hwndOf(i), capabilities: ["observe", "inspect"] }),
    ),
  );
  // Warm-up: every automation session started, JIT warm, before either phase is timed.
  await honestLoad(honest, 5);
  const load = () => Math.round(loadavg()[0] * 100) / 100;

  const baseLoad = load();
  const baseline = await honestLoad(honest, SECONDS);
  // The supervisor's event-loop delay over the last 30-60 s (health_check): a stall of the
  // main thread shows here, a queue in a worker does not.
  baseline.supervisor_event_loop = (await call(honest[0].client, "health_check", {})).event_loop;
  const baseLoadAfter = load();

  attacker = await connect("attacker");
  const child = fork(
    import.meta.filename,
    ["--attacker", String(port), attacker.token, attacker.transport.sessionId],
    {
      env: { ...process.env },
    },
  );
  const a = {
    got: null,
    stop: () =>
      new Promise((resolve) => {
        child.once("message", (got) => {
          a.got = got;
          resolve();
        });
        child.send("stop");
      }),
  };
  // Let the attack take hold (every slow body open, the waits in flight) before timing.
  await new Promise((r) => setTimeout(r, 3000));
  const attackLoad = load();
  const attacked = await honestLoad(honest, SECONDS);
  attacked.supervisor_event_loop = (await call(honest[0].client, "health_check", {})).event_loop;
  const attackLoadAfter = load();
  await a.stop();

  const out = {
    bench: "remote-attack",
    honest_identities: HONEST,
    attack: MODE,
    attacker: `1 identity: ${SLOW_BODIES} slow bodies (1 byte / 2 s, re-opened) + ${WAITS} waits of 30 s kept up`,
    phase_seconds: SECONDS,
    baseline: { ...baseline, loadavg_1m: { before: baseLoad, after: baseLoadAfter } },
    attacked: {
      ...attacked,
      loadavg_1m: { before: attackLoad, after: attackLoadAfter },
      attacker_got: a.got,
    },
    p99_ratio_attacked_over_baseline: Math.round((attacked.p99_ms / baseline.p99_ms) * 100) / 100,
    p50_ratio_attacked_over_baseline: Math.round((attacked.p50_ms / baseline.p50_ms) * 100) / 100,
    node: process.version,
    cpus: (await import("node:os")).cpus().length,
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  await Promise.all(
    [...honest, ...(attacker ? [attacker] : [])].map((c) => c.client.close().catch(() => undefined)),
  );
  await srv.stop();
  setup.remove();
}
