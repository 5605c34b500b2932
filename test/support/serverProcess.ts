import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { CLI } from "./mcp.js";

/** An MCP transport over a child we spawned ourselves, so a test can signal it or close its pipes. */
class ChildTransport implements Transport {
  onclose?: () => void;
  onerror?: (e: Error) => void;
  onmessage?: (m: JSONRPCMessage) => void;
  private readonly buf = new ReadBuffer();

  constructor(private readonly child: ChildProcess) {}

  async start(): Promise<void> {
    this.child.stdout?.on("data", (chunk: Buffer) => {
      this.buf.append(chunk);
      for (let m = this.buf.readMessage(); m !== null; m = this.buf.readMessage()) this.onmessage?.(m);
    });
    this.child.stdout?.on("error", () => undefined);
    this.child.stdin?.on("error", () => undefined);
    this.child.once("exit", () => this.onclose?.());
  }

  async send(m: JSONRPCMessage): Promise<void> {
    if (this.child.stdin?.writable) this.child.stdin.write(serializeMessage(m));
  }

  async close(): Promise<void> {
    this.child.stdin?.end();
  }
}

export interface ToolResult {
  isError: boolean;
  code: string | undefined;
  structured: Record<string, unknown>;
}

/**
 * The built CLI (`node dist/cli.js serve`) as a process of our own: the tests end it every way a
 * host or the system can (signals, SIGKILL, closing its stdin or its stdout).
 */
export class ServerProcess {
  readonly stderr: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly child: ChildProcess,
    readonly client: Client,
  ) {
    this.exited = new Promise((r) => {
      if (child.exitCode !== null || child.signalCode !== null)
        r({ code: child.exitCode, signal: child.signalCode });
      else child.once("exit", (code, signal) => r({ code, signal }));
    });
  }

  static async start(env: Record<string, string>): Promise<ServerProcess> {
    const base: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (v !== undefined && !k.startsWith("DESKTOP_AUTOMATION_") && !k.startsWith("UIINSPECT_")) base[k] = v;
    }
    const child = spawn(process.execPath, [CLI, "serve"], {
      env: { ...base, UIINSPECT_LOG_LEVEL: "warn", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const client = new Client({ name: "uiinspect-fault-battery", version: "1.0.0" });
    const s = new ServerProcess(child, client);
    child.stderr?.on("data", (d: Buffer) => s.stderr.push(d.toString("utf8")));
    await client.connect(new ChildTransport(child));
    return s;
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  /** Starts a tool call; the promise settles with the result, or rejects when the server went away. */
  call(name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
    return this.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 }).then((r) => {
      const structured = (r.structuredContent ?? {}) as Record<string, unknown>;
      const err = structured.error as { code?: string } | undefined;
      return { isError: r.isError === true, code: r.isError ? err?.code : undefined, structured };
    });
  }

  async ok(name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const r = await this.call(name, args);
    if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.structured)}`);
    return r.structured;
  }

  /** Child processes of the server whose command line names `entry` (e.g. "workers/input/main.js"). */
  childrenRunning(entry: string): number[] {
    return childProcesses(this.pid, entry);
  }

  /** Ends the server however it is still running (test clean-up). */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.stdin?.end();
      const t = setTimeout(() => this.child.kill("SIGKILL"), 3000);
      await this.exited;
      clearTimeout(t);
    }
  }
}

/** The ways a test ends a server mid gesture. */
export type ServerFault = "SIGTERM" | "SIGINT" | "SIGHUP" | "stdin_eof" | "stdout_closed" | "SIGKILL";

/**
 * Applies a server-level fault. Closing stdout is noticed at the server's next write (EPIPE):
 * a ping provokes one, as any answer or notification would.
 */
export function endServer(s: ServerProcess, fault: ServerFault): void {
  switch (fault) {
    case "stdin_eof":
      s.child.stdin?.end();
      return;
    case "stdout_closed":
      s.child.stdout?.destroy();
      void s.client.ping().catch(() => undefined);
      return;
    default:
      s.child.kill(fault);
  }
}

/** Polls until `fn` returns true or `ms` pass; returns whether it did. */
export async function pollUntil(fn: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (await fn()) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Child processes of `parent` whose command line names `entry`, from /proc. */
export function childProcesses(parent: number | undefined, entry: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "latin1");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== parent) continue;
      if (readFileSync(`/proc/${name}/cmdline`, "latin1").includes(entry)) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
