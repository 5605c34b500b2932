import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The private X11 desktops (sandbox/x11-session.sh) that processes of one test run still hold:
 * found from /proc only, by a token the run put into its own environment (every process a test
 * starts inherits it unless the test clears the environment), so a developer's own session and
 * other runs' sessions on the machine are never touched. A process belongs to a desktop when its
 * environment (UIINSPECT_X11_STATE, XDG_RUNTIME_DIR=STATE/runtime) or its stdout/stderr (Xvfb's
 * and openbox's logs) point into a folder the script marked as its own state.
 */

/** Set by the global setup in the run's environment: `<pid of the vitest process>.<random>`. */
export const RUN_TOKEN_VAR = "VITEST_UIINSPECT_RUN";
/** Set per test file by the setup file: the file that started a process, for the report. */
export const RUN_FILE_VAR = "VITEST_UIINSPECT_FILE";
/** The file x11-session.sh writes into a state folder when it creates it. */
export const STATE_MARKER = "x11-session.state";

const SCRIPT = resolve(dirname(fileURLToPath(import.meta.url)), "../../sandbox/x11-session.sh");

export interface LeakedProcess {
  pid: number;
  args: string;
  /** The test file whose worker started it (RUN_FILE_VAR), if the process carries it. */
  file: string | null;
  /** The x11-session state folder it belongs to. */
  state: string;
  /** Whether that desktop was started by this run (its Xvfb, bus or openbox carries the token). */
  runsDesktop: boolean;
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

function environOf(pid: number): Map<string, string> | null {
  const raw = readText(`/proc/${pid}/environ`);
  if (raw === null) return null;
  const env = new Map<string, string>();
  for (const entry of raw.split("\0")) {
    const i = entry.indexOf("=");
    if (i > 0) env.set(entry.slice(0, i), entry.slice(i + 1));
  }
  return env;
}

/** Parent PID, or null for a zombie or a process that is gone (a zombie holds nothing). */
function liveParent(pid: number): number | null {
  const stat = readText(`/proc/${pid}/stat`);
  if (stat === null) return null;
  const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
  return fields[0] === "Z" || fields[0] === "X" ? null : Number(fields[1]);
}

const isState = (dir: string) => existsSync(join(dir, STATE_MARKER));

/**
 * The folders a process's stdout/stderr, XDG_RUNTIME_DIR and UIINSPECT_X11_STATE point into,
 * most specific first: a desktop's parts inherit the environment of whoever started them (which
 * may name another desktop), but their logs and runtime folder are the script's own choice.
 */
function foldersOf(pid: number, env: Map<string, string>): string[] {
  const folders: string[] = [];
  for (const fd of [1, 2]) {
    try {
      // A removed log reads "PATH (deleted)": its folder is still dirname's answer.
      folders.push(dirname(readlinkSync(`/proc/${pid}/fd/${fd}`)));
    } catch {
      // closed, or not ours to read
    }
  }
  const runtime = env.get("XDG_RUNTIME_DIR");
  if (runtime && basename(runtime) === "runtime") folders.push(dirname(runtime));
  const named = env.get("UIINSPECT_X11_STATE");
  if (named) folders.push(named);
  return folders;
}

function livePids(): number[] {
  return readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((pid) => liveParent(pid) !== null);
}

/** The live processes of the desktop whose state folder is `state` (also once it was removed). */
export function processesOfState(state: string): number[] {
  return livePids().filter((pid) => {
    const env = environOf(pid);
    return env !== null && foldersOf(pid, env).includes(state);
  });
}

/** Whether the desktop of `state` was started by the run of `token`: a part it recorded carries it. */
function startedByRun(state: string, token: string): boolean {
  return ["xvfb", "dbus", "openbox"].some((part) => {
    const pid = Number((readText(join(state, `${part}.pid`)) ?? "").trim());
    return pid > 0 && environOf(pid)?.get(RUN_TOKEN_VAR) === token;
  });
}

/**
 * The live processes carrying `token` that belong to an x11-session desktop, except `self` and
 * its direct children (the vitest process and its workers, which carry the token themselves).
 */
export function leakedX11Processes(token: string, self: number = process.pid): LeakedProcess[] {
  if (process.platform !== "linux") return [];
  const out: LeakedProcess[] = [];
  for (const pid of livePids()) {
    if (pid === self) continue;
    const env = environOf(pid);
    if (env?.get(RUN_TOKEN_VAR) !== token) continue;
    if (liveParent(pid) === self) continue;
    const states = foldersOf(pid, env).filter(isState);
    if (states.length === 0) continue;
    // A desktop of the run's own before one it did not start (whose variables it inherited).
    const state = states.find((st) => startedByRun(st, token)) ?? states[0]!;
    const args = (readText(`/proc/${pid}/cmdline`) ?? "").split("\0").join(" ").trim();
    out.push({
      pid,
      args,
      file: env.get(RUN_FILE_VAR) ?? null,
      state,
      runsDesktop: startedByRun(state, token),
    });
  }
  return out;
}

function alive(pid: number): boolean {
  return liveParent(pid) !== null;
}

/**
 * Ends what the leaks hold: each desktop the run started through its own script (`stop STATE`,
 * by the PIDs it recorded), then every leaked process still alive by its PID. A desktop the run
 * did not start (a developer's, whose environment a test passed on) keeps running.
 */
export function stopLeaks(leaks: LeakedProcess[]): void {
  for (const state of new Set(leaks.filter((l) => l.runsDesktop).map((l) => l.state))) {
    try {
      execFileSync("bash", [SCRIPT, "stop", state], {
        stdio: ["ignore", "ignore", "inherit"],
        timeout: 60_000,
      });
    } catch {
      // reported by the caller; what is left is ended by PID below
    }
  }
  for (const l of leaks) {
    if (!alive(l.pid)) continue;
    try {
      process.kill(l.pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
}

/** One line per leaked process, grouped by desktop, naming the test file that started it. */
export function describeLeaks(leaks: LeakedProcess[]): string {
  const lines: string[] = [];
  for (const state of new Set(leaks.map((l) => l.state))) {
    const ours = leaks.some((l) => l.state === state && l.runsDesktop);
    lines.push(
      `x11 session ${state}${ours ? "" : " (not started by this run; only its processes below were ended)"}:`,
    );
    for (const l of leaks.filter((x) => x.state === state))
      lines.push(`  pid ${l.pid} ${l.args} (started by ${l.file ?? "an unknown test file"})`);
  }
  return lines.join("\n");
}
