import { execFileSync, spawn } from "node:child_process";
import { existsSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { constants } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * `uiinspect-mcp sandbox start [--app PROGRAM] [--dir DIR]` / `sandbox stop [DIR]`: a private X11
 * desktop (Xvfb, openbox, a session bus, the AT-SPI bus) for a headless trial or a UI smoke test
 * in CI, started by the packaged sandbox/x11-session.sh. start prints `export` lines for a shell
 * (`eval "$(uiinspect-mcp sandbox start)"`); stop ends what start started, by the PIDs it wrote
 * into its state folder, and nothing else.
 */

const here = dirname(fileURLToPath(import.meta.url));
/** dist/cli/sandbox.js → the package root's sandbox/ (also from src/cli in tests). */
const SCRIPT = join(here, "..", "..", "sandbox", "x11-session.sh");

const APP_READY_TIMEOUT_MS = 20_000;

interface Io {
  out(s: string): void;
  err(s: string): void;
}

const stdio: Io = {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
};

function parseEnvLines(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) env[line.slice(0, i)] = line.slice(i + 1);
  }
  return env;
}

/** A value as one POSIX shell word. */
const shellWord = (v: string) => (/^[A-Za-z0-9_./:=,@%+-]+$/.test(v) ? v : `'${v.replaceAll("'", "'\\''")}'`);

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

const START_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * The first SIGINT, SIGTERM or SIGHUP that arrives while `start` runs. Caught so that start can
 * end what it has started (its caller timed out or was stopped) instead of dying with a desktop
 * left running; `onSignal` passes it on to the script while the script runs.
 */
class StartSignals {
  signal: NodeJS.Signals | null = null;
  private forward: ((s: NodeJS.Signals) => void) | null = null;
  private readonly handler = (s: NodeJS.Signals) => {
    if (this.signal === null) this.signal = s;
    this.forward?.(s);
  };

  constructor() {
    for (const s of START_SIGNALS) process.on(s, this.handler);
  }

  onSignal(fn: ((s: NodeJS.Signals) => void) | null): void {
    this.forward = fn;
  }

  /** The exit status of a command ended by the signal (128 + its number). */
  status(): number {
    return 128 + (this.signal ? constants.signals[this.signal] : 0);
  }

  dispose(): void {
    for (const s of START_SIGNALS) process.off(s, this.handler);
  }
}

/**
 * Runs `x11-session.sh start [DIR]` (its stderr on ours) and gives its stdout, or null when it
 * failed. A signal caught meanwhile goes to the script, which then stops what it had started.
 */
function runStartScript(args: string[], signals: StartSignals): Promise<string | null> {
  return new Promise((resolve) => {
    const child = spawn("bash", [SCRIPT, ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d: string) => {
      out += d;
    });
    const timer = setTimeout(() => child.kill("SIGTERM"), 120_000);
    signals.onSignal((s) => child.kill(s));
    child.once("error", () => undefined);
    child.once("close", (code) => {
      clearTimeout(timer);
      signals.onSignal(null);
      resolve(code === 0 ? out : null);
    });
  });
}

/** The top-level windows the window manager lists (_NET_CLIENT_LIST), by id. */
function clientWindows(env: NodeJS.ProcessEnv): string[] {
  try {
    const out = execFileSync("xprop", ["-root", "_NET_CLIENT_LIST"], {
      env,
      encoding: "utf8",
      timeout: 5000,
    });
    return out.match(/0x[0-9a-f]+/gi) ?? [];
  } catch {
    return [];
  }
}

/** The PID a window's owner wrote (_NET_WM_PID); only used to tell when the app is up. */
function windowPid(env: NodeJS.ProcessEnv, id: string): number | null {
  try {
    const out = execFileSync("xprop", ["-id", id, "_NET_WM_PID"], { env, encoding: "utf8", timeout: 5000 });
    const m = /= (\d+)/.exec(out);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

async function startApp(
  program: string,
  state: string,
  env: NodeJS.ProcessEnv,
  io: Io,
  signals: StartSignals,
): Promise<boolean> {
  const log = openSync(join(state, "app.log"), "a");
  const child = spawn(program, [], {
    env: { ...env, GDK_BACKEND: "x11" },
    // Its own session: it outlives this command, and stop ends it by its PID.
    detached: true,
    stdio: ["ignore", log, log],
  });
  const failed = new Promise<string>((r) => {
    child.once("error", (e: NodeJS.ErrnoException) => r(e.code ?? "failed"));
    child.once("exit", (code) => r(`exited with ${code}`));
  });
  let why: string | null = null;
  void failed.then((w) => {
    why = w;
  });
  if (child.pid === undefined) {
    io.err(`sandbox: ${program} could not be started (${await failed})\n`);
    return false;
  }
  writeFileSync(join(state, "app.pid"), `${child.pid}\n`);
  child.unref();
  const deadline = Date.now() + APP_READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (signals.signal !== null) return false;
    if (why !== null) {
      io.err(`sandbox: ${program} ${why} (its output: ${join(state, "app.log")})\n`);
      return false;
    }
    if (clientWindows(env).some((id) => windowPid(env, id) === child.pid)) return true;
    await sleep(100);
  }
  io.err(`sandbox: ${program} showed no window within ${APP_READY_TIMEOUT_MS / 1000} s\n`);
  return false;
}

function stopState(state: string, io: Io): number {
  try {
    execFileSync("bash", [SCRIPT, "stop", state], { stdio: ["ignore", "ignore", "pipe"], timeout: 60_000 });
    io.err(`sandbox: stopped (${state})\n`);
    return 0;
  } catch {
    io.err(`sandbox: could not stop ${state}\n`);
    return 1;
  }
}

export async function runSandbox(
  positionals: string[],
  values: Record<string, unknown>,
  io: Io = stdio,
): Promise<number> {
  if (process.platform !== "linux") {
    io.err("sandbox: a private X11 desktop needs Linux (Xvfb)\n");
    return 1;
  }
  const [action, dirArg] = positionals;
  if (action === "stop") {
    const state = dirArg ?? process.env.UIINSPECT_X11_STATE;
    if (!state || !existsSync(join(state, "xvfb.pid"))) {
      io.err(
        "sandbox: no sandbox to stop: give the folder `sandbox start` printed (UIINSPECT_X11_STATE), or run it in the shell that ran start\n",
      );
      return 1;
    }
    return stopState(state, io);
  }
  if (action !== "start" || dirArg !== undefined) {
    io.err("sandbox: usage: sandbox start [--app PROGRAM] [--dir DIR] | sandbox stop [DIR]\n");
    return 2;
  }
  const signals = new StartSignals();
  try {
    return await start(values, io, signals);
  } finally {
    signals.dispose();
  }
}

async function start(values: Record<string, unknown>, io: Io, signals: StartSignals): Promise<number> {
  // After a signal: what was started is stopped, and start exits 128 + the signal's number.
  const ended = (state: string | undefined): number => {
    if (state) stopState(state, io);
    io.err(`sandbox: start ended by ${signals.signal}\n`);
    return signals.status();
  };
  const args = ["start", ...(typeof values.dir === "string" ? [values.dir] : [])];
  const out = await runStartScript(args, signals);
  const env = out === null ? {} : parseEnvLines(out);
  const state = env.UIINSPECT_X11_STATE;
  // Interrupted while the script ran, the script stopped what it had started itself.
  if (signals.signal !== null) return ended(state);
  if (out === null) {
    io.err("sandbox: the private desktop did not start (see the lines above)\n");
    return 1;
  }
  if (!env.DISPLAY || !env.DBUS_SESSION_BUS_ADDRESS || !state) {
    io.err("sandbox: the private desktop reported no environment\n");
    return 1;
  }
  const app = typeof values.app === "string" ? values.app : null;
  const appUp = app === null || (await startApp(app, state, { ...process.env, ...env }, io, signals));
  if (signals.signal !== null) return ended(state);
  if (!appUp) {
    stopState(state, io);
    return 1;
  }
  for (const k of ["DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "UIINSPECT_X11_STATE"])
    if (env[k] !== undefined) io.out(`export ${k}=${shellWord(env[k])}\n`);
  io.out("export GDK_BACKEND=x11\n");
  const appPid = app !== null ? readFileSync(join(state, "app.pid"), "utf8").trim() : null;
  io.err(
    [
      `sandbox: a private desktop on ${env.DISPLAY}${app !== null ? ` with ${app} (pid ${appPid})` : ""}.`,
      'sandbox: the export lines went to stdout: eval "$(uiinspect-mcp sandbox start …)" sets them in a shell;',
      `sandbox: end it with: uiinspect-mcp sandbox stop ${shellWord(state)}`,
      "",
    ].join("\n"),
  );
  return 0;
}
