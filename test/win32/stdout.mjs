// The server's stdout on Windows, under Wine: the built server (dist/cli.js serve, fake desktop)
// under the Windows node.exe with its stdout a Windows pipe that the runner stops reading, or a
// file. Node writes both synchronously on Windows (lib/net.js makes a pipe on fd 1 blocking; a
// file is a SyncWriteStream), so the frames go through the queue to fd 1 on the thread pool
// (src/supervisor/mcp/stdoutSinks.ts). Shown here:
// - a stalled reader: every request is still read and carried out (each leaves an audit line),
//   and every answer arrives complete and in order once the reader reads again;
// - a small UIINSPECT_STDOUT_QUEUE_BYTES: past it no request is read until the reader reads;
// - stdout a file: every answer complete and in order.
// The answers are list_windows over 200 windows with long titles, about 158 KB each, far more
// than a pipe's buffer.

import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { stallDesktop } from "../e2e/fixtures/stall-desktop.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
const APP = "C:\\Program Files\\ruffle\\bin\\ruffle.exe";
/** The stall test's desktop (test/e2e/fixtures/stall-desktop.mjs), every window of the app above. */
const DESKTOP = stallDesktop(APP);
const WINDOWS = DESKTOP.windows.length;

function scenario() {
  const dir = mkdtempSync(join(tmpdir(), "uiinspect-wine-stdout-"));
  const desktop = join(dir, "desktop.json");
  writeFileSync(desktop, JSON.stringify(DESKTOP));
  const policy = join(dir, "policy.json");
  writeFileSync(
    policy,
    JSON.stringify({
      schema_version: 1,
      policy_id: "wine-stdout",
      expires_at: "2099-01-01T00:00:00Z",
      application: { executable_path: APP, title_patterns: ["Ruffle - *"] },
      allowed_actions: ["observe"],
    }),
  );
  const audit = join(dir, "audit.jsonl");
  const env = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith("DESKTOP_AUTOMATION_") && !k.startsWith("UIINSPECT_")) env[k] = v;
  Object.assign(env, {
    UIINSPECT_PLATFORM: "fake",
    UIINSPECT_FAKE_DESKTOP: desktop,
    UIINSPECT_LOG_LEVEL: "debug",
    UIINSPECT_AUDIT_FILE: audit,
    UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "100000",
    DESKTOP_AUTOMATION_POLICY_FILE: policy,
  });
  /** The audit lines of list_windows calls, in the order written. */
  const audited = () => {
    try {
      return readFileSync(audit, "utf8")
        .split("\n")
        .filter((l) => l.includes('"list_windows"'))
        .map((l) => JSON.parse(l));
    } catch {
      return [];
    }
  };
  return { dir, env, audited };
}

/** `dist/cli.js serve` under the Windows node.exe; windowsHide false (see e2e.mjs). */
function startServer(dist, env, stdout) {
  const cli = fileURLToPath(new URL("cli.js", dist));
  const loader = pathToFileURL(join(root, "test", "win32", "loader.mjs")).href;
  const child = spawn(process.execPath, ["--import", loader, cli, "serve"], {
    cwd: root,
    env,
    stdio: ["pipe", stdout, "pipe"],
    windowsHide: false,
  });
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr += d.toString("utf8");
  });
  const exited = new Promise((r) => child.once("exit", r));
  return { child, stderr: () => stderr, exited };
}

const frame = (id, method, params) => `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`;
const call = (id) => frame(id, "tools/call", { name: "list_windows", arguments: {} });
const INITIALIZED = `${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`;
const hello = () =>
  frame(0, "initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "wine-stdout", version: "1" },
  }) + INITIALIZED;

/**
 * Parses newline-delimited frames: each must be whole JSON (a torn or interleaved frame throws),
 * and each answer to a call must carry all the windows. Returns the answers' ids in order.
 */
function frameParser() {
  const ids = [];
  const torn = [];
  let buf = "";
  const feed = (text) => {
    buf += text;
    for (let nl = buf.indexOf("\n"); nl !== -1; nl = buf.indexOf("\n")) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        torn.push(line.slice(0, 80));
        continue;
      }
      if (typeof msg.id !== "number" || msg.id <= 0) continue;
      const n = msg.result?.structuredContent?.windows?.length;
      if (n !== WINDOWS) torn.push(`id ${msg.id}: ${n} windows, ${JSON.stringify(msg).slice(0, 200)}`);
      ids.push(msg.id);
    }
  };
  return { ids, torn, feed, rest: () => buf };
}

const inOrder = (n) => Array.from({ length: n }, (_, i) => i + 1);
const backpressure = (stderr, full) =>
  stderr
    .split("\n")
    .filter((l) => l.includes('"stdout_backpressure"') && l.includes(`"full":${full}`))
    .map((l) => JSON.parse(l));

/** Ends stdin (the server's shutdown); true if the server exited by itself within 10 s. */
async function stop(s) {
  s.child.stdin.end();
  const gone = await Promise.race([
    s.exited.then(() => true),
    new Promise((r) => setTimeout(r, 10000, false)),
  ]);
  if (!gone) s.child.kill();
  return gone;
}

export function registerStdout({ dist, test, assert, eq, waitFor, sleep, h }) {
  test("stdout a Windows pipe nobody reads: every request is carried out meanwhile, every answer arrives whole and in order later", async () => {
    const sc = scenario();
    const s = startServer(dist, sc.env, "pipe");
    try {
      // The runner does not read the pipe: Node reads at most one buffer on its own, then stops.
      s.child.stdout.pause();
      const N = 12;
      s.child.stdin.write(hello());
      for (let i = 1; i <= N; i++) s.child.stdin.write(call(i));
      // 12 answers of ~158 KB cannot fit in the pipe: a server that wrote fd 1 synchronously
      // would stop in its first large write and carry out no further request.
      const served = await waitFor(() => sc.audited().length === N, 60000, 200);
      h.facts.stdout_pipe_audited_while_unread = sc.audited().length;
      assert(
        served,
        `every request carried out while nobody read (${sc.audited().length} of ${N})\n${s.stderr().slice(-1500)}`,
      );
      const p = frameParser();
      s.child.stdout.on("data", (d) => p.feed(d.toString("utf8")));
      s.child.stdout.resume();
      await waitFor(() => p.ids.length === N, 60000, 100);
      eq(p.torn, [], "no torn frame");
      eq(p.ids, inOrder(N), "answers in order");
    } finally {
      await stop(s);
    }
  }, 150000);

  test("stdout a Windows pipe, UIINSPECT_STDOUT_QUEUE_BYTES small: past it no request is read until the reader reads", async () => {
    const sc = scenario();
    const s = startServer(dist, { ...sc.env, UIINSPECT_STDOUT_QUEUE_BYTES: String(256 * 1024) }, "pipe");
    try {
      s.child.stdout.pause();
      s.child.stdin.write(hello());
      // One request at a time, each once the last one was carried out, until the queue is full.
      let sent = 0;
      const full = () => backpressure(s.stderr(), true).length > 0;
      while (!full() && sent < 40) {
        s.child.stdin.write(call(++sent));
        await waitFor(() => sc.audited().length === sent || full(), 30000, 50);
      }
      assert(full(), `stdout_backpressure full:true after ${sent} requests\n${s.stderr().slice(-1500)}`);
      const atFull = sc.audited().length;
      h.facts.stdout_bound_full_after = { sent, audited: atFull };
      s.child.stdin.write(call(++sent));
      s.child.stdin.write(call(++sent));
      // Whatever the server's pace, requests written after the bound wait unread.
      await sleep(1500);
      eq(sc.audited().length, atFull, "no request read past the bound");
      const p = frameParser();
      s.child.stdout.on("data", (d) => p.feed(d.toString("utf8")));
      s.child.stdout.resume();
      await waitFor(() => p.ids.length === sent, 60000, 100);
      eq(p.torn, [], "no torn frame");
      eq(p.ids, inOrder(sent), "answers in order");
      const audits = sc.audited();
      eq(audits.length, sent, "every request carried out once the reader read");
      // The requests past the bound were read only after the server took reading up again.
      const relieved = backpressure(s.stderr(), false);
      assert(relieved.length > 0, `stdout_backpressure full:false\n${s.stderr().slice(-1500)}`);
      const resumedAt = relieved[0].time;
      const early = audits.slice(atFull).filter((a) => Date.parse(a.time) < resumedAt);
      eq(early.length, 0, "requests past the bound carried out only after reading resumed");
    } finally {
      await stop(s);
    }
  }, 150000);

  test("stdout a file (written synchronously by Node everywhere): every answer whole and in order", async () => {
    const sc = scenario();
    const outPath = join(sc.dir, "stdout.jsonl");
    const fd = openSync(outPath, "w");
    const s = startServer(dist, sc.env, fd);
    closeSync(fd);
    const N = 12;
    s.child.stdin.write(hello());
    for (let i = 1; i <= N; i++) s.child.stdin.write(call(i));
    const t0 = performance.now();
    await waitFor(() => sc.audited().length === N, 60000, 200);
    h.facts.stdout_file_served_ms = Math.round(performance.now() - t0);
    // stdin's end shuts the server down once every queued answer is written.
    eq(await stop(s), true, "the server exits at stdin's end");
    const p = frameParser();
    p.feed(readFileSync(outPath, "utf8"));
    eq(p.rest(), "", "the file ends with a whole frame");
    eq(p.torn, [], "no torn frame");
    eq(p.ids, inOrder(N), "answers in order");
  }, 150000);
}
