import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface, type Interface } from "node:readline";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { scratchDir } from "../support/scratch.js";

const HERE = fileURLToPath(new URL(".", import.meta.url));

export const ROOT = resolve(HERE, "../..");
export const OUT = join(ROOT, "out", "lease-test");
export const FIXTURES = join(HERE, "fixtures");
export const DIALOG_TITLE = "uiinspect-mcp: unattended access lease";

/** Compiles src/lease (and what it imports) into out/lease-test, independent of others' dist. */
export function buildLease(): void {
  spawnSync(
    process.execPath,
    [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "test/lease/tsconfig.build.json"],
    {
      cwd: ROOT,
      stdio: "ignore",
    },
  );
  if (!existsSync(join(OUT, "lease", "brokerMain.js"))) throw new Error("lease build failed");
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

export interface Xvfb {
  display: string;
  stop(): void;
}

/**
 * A private Xvfb on a display it picks itself (-displayfd): a fixed number could already belong
 * to another run, whose server the test would then silently share. Fails if Xvfb exits or does
 * not report a display within 20 s.
 */
export function startXvfb(): Promise<Xvfb> {
  const child = spawn(
    "Xvfb",
    ["-displayfd", "3", "-screen", "0", "1024x768x24", "-nolisten", "tcp", "-noreset"],
    { stdio: ["ignore", "ignore", "ignore", "pipe"] },
  );
  const fd3 = child.stdio[3] as Readable;
  return new Promise<Xvfb>((res, rej) => {
    let text = "";
    const fail = (why: string) => {
      clearTimeout(timer);
      fd3.destroy();
      child.kill("SIGKILL");
      rej(new Error(`Xvfb ${why}`));
    };
    const timer = setTimeout(() => fail("reported no display within 20 s"), 20_000);
    child.once("error", (e) => fail(`could not start (${e.message})`));
    child.once("exit", (code, signal) => fail(`exited (${signal ?? code}) before reporting a display`));
    fd3.on("data", (c: Buffer) => {
      text += c.toString();
      const m = /^(\d+)\n/.exec(text);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners("exit");
      child.removeAllListeners("error");
      fd3.destroy();
      res({ display: `:${m[1]}`, stop: () => child.kill("SIGTERM") });
    });
  });
}

export interface Sandbox {
  root: string;
  env: Record<string, string>;
  auditPath: string;
}

/** A fresh runtime dir (0700) and state home for one scope. */
export function sandbox(display: string): Sandbox {
  const root = scratchDir("lease");
  const run = join(root, "run");
  mkdirSync(run, { mode: 0o700 });
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: root,
    DISPLAY: display,
    XDG_RUNTIME_DIR: run,
    XDG_STATE_HOME: join(root, "state"),
    LEASE_OUT: OUT,
    UIINSPECT_CONSENT_TIMEOUT_MS: "20000",
    // Xvfb has only XTEST devices: without this the dialog (rightly) ignores xdotool's input.
    UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT: "1",
  };
  return { root, env, auditPath: join(root, "state", "uiinspect-mcp", "audit", "unattended-approval.jsonl") };
}

function xdotool(display: string, args: string[], timeoutMs = 10_000): Promise<string> {
  return new Promise((res, rej) => {
    execFile(
      "xdotool",
      args,
      { env: { ...process.env, DISPLAY: display }, timeout: timeoutMs },
      (err, stdout) => (err ? rej(err) : res(stdout)),
    );
  });
}

/** The visible dialogs' window ids; null when xdotool could not tell (e.g. it timed out). */
async function dialogIds(display: string, title: string): Promise<string[] | null> {
  try {
    return (await xdotool(display, ["search", "--onlyvisible", "--name", title])).split("\n").filter(Boolean);
  } catch (e) {
    // xdotool search exits 1 when no window matches.
    return (e as { code?: unknown }).code === 1 ? [] : null;
  }
}

/**
 * Answers our own dialog (lease by default; `title` picks another) the way a person would, with
 * xdotool: Enter (Deny is focused by default) to deny; a click on Allow (the bottom-right button,
 * centre 55 px from the right and 24 px from the bottom) to approve. The dialog ignores XTest
 * input unless UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT=1 was in its starter's environment, and any
 * input in its first second (the security delay): hence the repetition below.
 *
 * An input event sent while the dialog is still settling can be lost, so the answer is repeated
 * about every second until that dialog (the window id found first) is gone, at most `timeoutMs`.
 * It returns only once the window is gone: no repeated event can reach a later dialog. The click
 * is placed relative to that window (xdotool stops the chain if it no longer exists).
 */
export async function answerDialog(
  display: string,
  answer: "approve" | "deny",
  timeoutMs = 20_000,
  title = DIALOG_TITLE,
): Promise<void> {
  // The dialog may take many seconds to appear on a loaded machine: wait as long as the caller does.
  const ids = await xdotool(
    display,
    ["search", "--sync", "--onlyvisible", "--name", title],
    Math.max(15_000, timeoutMs),
  );
  const wid = ids.trim().split("\n").at(-1)!;
  const open = async () => (await dialogIds(display, title))?.includes(wid) ?? true;
  const deadline = Date.now() + timeoutMs;
  await sleep(300);
  for (let tries = 1; ; tries++) {
    try {
      if (answer === "deny") {
        await xdotool(display, ["windowfocus", "--sync", wid]);
        await sleep(200);
        await xdotool(display, ["key", "Return"]);
      } else {
        const geo = await xdotool(display, ["getwindowgeometry", "--shell", wid]);
        const v = (k: string) => {
          const m = new RegExp(`^${k}=(-?\\d+)$`, "m").exec(geo);
          if (!m) throw new Error("no window geometry");
          return Number(m[1]);
        };
        await xdotool(display, [
          "mousemove",
          "--window",
          wid,
          String(v("WIDTH") - 55),
          String(v("HEIGHT") - 24),
          // A person's gesture: the pointer rests on Allow for the security delay, then clicks.
          "sleep",
          "1.3",
          "click",
          "1",
        ]);
      }
    } catch {
      // The window went away (or xdotool was slow): whether it is still open decides below.
    }
    const next = Date.now() + 1000;
    while (Date.now() < next) {
      if (!(await open())) return;
      await sleep(100);
    }
    if (Date.now() > deadline) throw new Error(`the lease dialog was still open after ${tries} answers`);
  }
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function run(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<RunResult> {
  return new Promise((res) => {
    const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const t = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code) => {
      clearTimeout(t);
      res({ code, stdout, stderr });
    });
  });
}

export function manager(args: string[], env: Record<string, string>): Promise<RunResult> {
  return run([join(FIXTURES, "manager.mjs"), ...args], env);
}

/** One long-lived client process (a stand-in for an MCP server). */
/**
 * What another uid runs (the fixtures, the compiled lease code and the one package it imports),
 * copied into a world-readable temporary folder: the checkout may sit in a folder only its owner
 * can enter (mktemp -d, a Debian home directory), where that uid could not read it.
 */
export function copyForOtherUid(): { dir: string; fixtures: string; out: string } {
  const dir = scratchDir("lease-other");
  chmodSync(dir, 0o755);
  const out = join(dir, "out");
  const fixtures = join(dir, "fixtures");
  cpSync(OUT, out, { recursive: true });
  cpSync(FIXTURES, fixtures, { recursive: true });
  cpSync(join(ROOT, "node_modules", "zod"), join(dir, "node_modules", "zod"), { recursive: true });
  return { dir, fixtures, out };
}

export class ClientProc {
  readonly child: ChildProcess;
  private readonly rl: Interface;
  private readonly lines: string[] = [];
  private waiters: ((l: string) => void)[] = [];

  constructor(env: Record<string, string>, prefix: string[] = [], fixtures = FIXTURES) {
    const cmd = prefix.length > 0 ? prefix[0]! : process.execPath;
    const args = [...prefix.slice(1), ...(prefix.length > 0 ? [process.execPath] : [])];
    this.child = spawn(cmd, [...args, join(fixtures, "leaseClient.mjs"), "serve"], {
      env,
      stdio: ["pipe", "pipe", "inherit"],
    });
    this.rl = createInterface({ input: this.child.stdout! });
    this.rl.on("line", (l) => {
      const w = this.waiters.shift();
      if (w) w(l);
      else this.lines.push(l);
    });
  }

  next(timeoutMs = 15_000): Promise<Record<string, unknown>> {
    const ready = this.lines.shift();
    if (ready !== undefined) return Promise.resolve(JSON.parse(ready));
    return new Promise((res, rej) => {
      const t = setTimeout(() => rej(new Error("client did not answer")), timeoutMs);
      this.waiters.push((l) => {
        clearTimeout(t);
        res(JSON.parse(l));
      });
    });
  }

  async ask(req: unknown): Promise<Record<string, unknown>> {
    this.child.stdin!.write(`${JSON.stringify(req)}\n`);
    return this.next();
  }

  stop(): void {
    this.child.stdin!.end();
    this.child.kill("SIGTERM");
  }
}

/** The process instance of `pid` computed independently of the broker's code. */
export function instanceOf(pid: number, session: string) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[19]);
  const btime = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))![1]);
  const hz = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;
  return {
    pid,
    start_time: new Date(btime * 1000 + Math.round((ticks * 1000) / hz)).toISOString(),
    exe_path: readlinkSync(`/proc/${pid}/exe`),
    session,
  };
}

export function auditEvents(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The broker socket in a sandbox's runtime dir. */
export function socketPath(sb: Sandbox): string {
  const dir = sb.env.XDG_RUNTIME_DIR!;
  const name = readdirSync(dir).find((f) => f.endsWith(".sock"));
  if (!name) throw new Error("no broker socket");
  return join(dir, name);
}
