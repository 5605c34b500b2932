import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { closeSync, constants, createReadStream, openSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, filePolicy, RUFFLE } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import { pollUntil } from "../support/serverProcess.js";
import { stallDesktop } from "./fixtures/stall-desktop.mjs";

/**
 * A client that stops reading the server's stdout. The answers (list_windows over 200 windows
 * with long titles, about 158 KB each) are larger than any pipe or terminal buffer.
 *
 * - stdout a terminal: Node writes a TTY synchronously, so the old server stopped in its first
 *   large write and read no further request. Now every request is still read and carried out
 *   (each leaves an audit line) while nothing is read, and the answers come in order later.
 * - stdout a pipe with a small queue bound: past the bound the server stops reading requests,
 *   logs it, and takes them again once the client reads.
 */

const PTY_STDOUT = resolve(import.meta.dirname, "fixtures/pty-stdout.py");
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
});

function scenario() {
  const dir = scratchDir("stall");
  const desktop = join(dir, "desktop.json");
  writeFileSync(desktop, JSON.stringify(stallDesktop(RUFFLE)));
  const policy = join(dir, "policy.json");
  writeFileSync(policy, JSON.stringify(filePolicy({ allowed_actions: ["observe"] })));
  const audit = join(dir, "audit.jsonl");
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith("DESKTOP_AUTOMATION_") && !k.startsWith("UIINSPECT_")) env[k] = v;
  Object.assign(env, {
    UIINSPECT_PLATFORM: "fake",
    UIINSPECT_FAKE_DESKTOP: desktop,
    UIINSPECT_LOG_LEVEL: "debug",
    UIINSPECT_AUDIT_FILE: audit,
    UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "100000",
    DESKTOP_AUTOMATION_POLICY_FILE: policy,
  });
  const audited = () => {
    try {
      return readFileSync(audit, "utf8")
        .split("\n")
        .filter((l) => l.includes('"list_windows"')).length;
    } catch {
      return 0;
    }
  };
  return { dir, env, audited };
}

const frame = (id: number, method: string, params: Record<string, unknown>) =>
  `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`;
const call = (id: number) => frame(id, "tools/call", { name: "list_windows", arguments: {} });
const INITIALIZED = `${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`;
const hello = () =>
  frame(0, "initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "stall", version: "1" },
  }) + INITIALIZED;

/** The ids of the answers read from `out`, in the order they came. */
function answers(out: Readable): number[] {
  const ids: number[] = [];
  let buf = "";
  out.on("data", (b: Buffer) => {
    buf += b.toString("utf8");
    for (let nl = buf.indexOf("\n"); nl !== -1; nl = buf.indexOf("\n")) {
      const msg = JSON.parse(buf.slice(0, nl)) as { id?: number; result?: { isError?: boolean } };
      buf = buf.slice(nl + 1);
      if (typeof msg.id === "number" && msg.id > 0 && msg.result?.isError !== true) ids.push(msg.id);
    }
  });
  return ids;
}

const inOrder = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe("a client that stops reading stdout", () => {
  it("stdout a terminal: every request is read and carried out meanwhile, answered in order later", async () => {
    const s = scenario();
    const child = spawn("python3", [PTY_STDOUT, process.execPath, CLI, "serve"], {
      env: s.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    children.push(child);
    child.stderr?.resume();
    const ids = answers(child.stdout as Readable);
    const N = 12;
    child.stdin?.write(hello());
    for (let i = 1; i <= N; i++) child.stdin?.write(call(i));
    // Nothing reads the terminal: 12 answers of ~158 KB cannot fit in its buffer.
    expect(await pollUntil(() => s.audited() === N, 60_000)).toBe(true);
    expect(ids).toEqual([]);
    child.kill("SIGUSR1");
    expect(await pollUntil(() => ids.length === N, 60_000)).toBe(true);
    expect(ids).toEqual(inOrder(N));
    child.stdin?.end();
    await new Promise((r) => child.once("exit", r));
  }, 150_000);

  it("stdout a pipe: past the queue bound no request is read until the client reads again", async () => {
    const s = scenario();
    const fifo = join(s.dir, "out.fifo");
    execFileSync("mkfifo", [fifo]);
    // Read-write, so opening does not wait for a reader; the test's read end comes later.
    const wfd = openSync(fifo, constants.O_RDWR);
    const child = spawn(process.execPath, [CLI, "serve"], {
      env: { ...s.env, UIINSPECT_STDOUT_QUEUE_BYTES: String(256 * 1024) },
      stdio: ["pipe", wfd, "pipe"],
    });
    children.push(child);
    closeSync(wfd);
    let stderr = "";
    child.stderr?.on("data", (b: Buffer) => {
      stderr += b.toString("utf8");
    });
    const full = () =>
      /"full":true[^\n]*"msg":"stdout_backpressure"|"msg":"stdout_backpressure"[^\n]*"full":true/.test(
        stderr,
      );
    child.stdin?.write(hello());
    // One request at a time, each once the last one was carried out, until the queue is full.
    let sent = 0;
    while (!full() && sent < 40) {
      child.stdin?.write(call(++sent));
      await pollUntil(() => s.audited() === sent || full(), 30_000);
    }
    expect(full()).toBe(true);
    const atFull = s.audited();
    child.stdin?.write(call(++sent));
    child.stdin?.write(call(++sent));
    // Whatever the server's pace, requests written after the bound wait unread.
    await new Promise((r) => setTimeout(r, 1500));
    expect(s.audited()).toBe(atFull);
    const ids = answers(createReadStream(fifo));
    expect(await pollUntil(() => ids.length === sent, 60_000)).toBe(true);
    expect(ids).toEqual(inOrder(sent));
    expect(s.audited()).toBe(sent);
    expect(stderr).toMatch(/"full":false/);
    child.stdin?.end();
    await new Promise((r) => child.once("exit", r));
  }, 150_000);
});
