import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import dbus from "dbus-next";
import { afterAll, beforeAll, expect } from "vitest";
import type { A11yHandle, Platform, WindowInfo } from "../../src/shared/platform.js";
import { CLI, LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import { type Attacker, buildAttacker, startAttacker } from "./attacker.js";

/**
 * Shared helpers for the X11 tests: a private Xvfb session per test file (.ci/x11-session.sh),
 * apps started inside it, an independent root capture (xwd) and independent AT-SPI reads.
 *
 * Required when UIINSPECT_REQUIRE_X11=1, or CI=true on Linux (a missing Xvfb then fails);
 * otherwise the suites are skipped with a message when the tools are missing.
 */

const here = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(here, "../..");
const SESSION_SCRIPT = join(REPO, ".ci/x11-session.sh");

/** CI=true requires them on Linux only (a Windows/macOS CI job has no X11); the env var everywhere. */
export const X11_REQUIRED =
  process.env.UIINSPECT_REQUIRE_X11 === "1" || (process.env.CI === "true" && process.platform === "linux");

function have(cmd: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const NEEDED = [
  "Xvfb",
  "openbox",
  "dbus-daemon",
  "xdpyinfo",
  "xprop",
  "xwininfo",
  "xdotool",
  "xwd",
  "xeyes",
  "zenity",
  "xterm",
];
export const MISSING_TOOLS = process.platform === "linux" ? NEEDED.filter((c) => !have(c)) : NEEDED;
/** Whether the suites run (true) or are skipped (false). When required, they always run. */
export const X11_AVAILABLE = X11_REQUIRED || MISSING_TOOLS.length === 0;
if (!X11_AVAILABLE) {
  process.stderr.write(
    `x11 tests skipped: missing ${MISSING_TOOLS.join(", ")} (run .ci/install-x11-deps.sh; set UIINSPECT_REQUIRE_X11=1 to require them)\n`,
  );
}

/**
 * Whether a suite that drives the built CLI on X11 runs: the tools are there and dist/cli.js is
 * built (or X11 is required, and a missing build then fails loudly). Says why when it is skipped.
 */
export function x11CliSuite(name: string, alsoNeeded: { what: string; ok: boolean } | null = null): boolean {
  if (!X11_AVAILABLE) return false;
  if (X11_REQUIRED) return true;
  const missing = !existsSync(CLI)
    ? "dist/cli.js is missing (npm run build)"
    : alsoNeeded && !alsoNeeded.ok
      ? alsoNeeded.what
      : null;
  if (missing) process.stderr.write(`x11 ${name} skipped: ${missing}\n`);
  return missing === null;
}

export interface X11Session {
  env: Record<string, string>;
  stop(): void;
}

/** Starts a private desktop and points this process (DISPLAY, session bus) at it. */
export function startSession(): X11Session {
  if (MISSING_TOOLS.length > 0) throw new Error(`X11 test tools missing: ${MISSING_TOOLS.join(", ")}`);
  const out = execFileSync("bash", [SESSION_SCRIPT, "start"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    timeout: 60_000,
  });
  const env: Record<string, string> = {};
  for (const line of out.split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) env[line.slice(0, i)] = line.slice(i + 1);
  }
  if (!env.DISPLAY || !env.DBUS_SESSION_BUS_ADDRESS || !env.UIINSPECT_X11_STATE) {
    throw new Error("x11-session.sh did not report its environment");
  }
  Object.assign(process.env, env, { GDK_BACKEND: "x11" });
  const apps: ChildProcess[] = [];
  sessionApps.set(env.UIINSPECT_X11_STATE, apps);
  return {
    env,
    stop() {
      for (const a of apps) {
        if (a.exitCode === null && a.signalCode === null && a.pid) {
          try {
            process.kill(a.pid, "SIGKILL");
          } catch {
            // gone
          }
        }
      }
      execFileSync("bash", [SESSION_SCRIPT, "stop", env.UIINSPECT_X11_STATE!], { stdio: "inherit" });
    },
  };
}

const sessionApps = new Map<string, ChildProcess[]>();

export interface App {
  child: ChildProcess;
  stdout: () => string;
  exited: Promise<number | null>;
}

/** Starts an app inside the session (the current process.env). */
export function startApp(cmd: string, args: string[]): App {
  const child = spawn(cmd, args, { env: process.env, stdio: ["ignore", "pipe", "ignore"] });
  let out = "";
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (d: string) => {
    out += d;
  });
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  for (const apps of sessionApps.values()) apps.push(child);
  return { child, stdout: () => out, exited };
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined>,
  timeoutMs = 15000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function waitForWindow(p: Platform, title: string, timeoutMs = 30000): Promise<WindowInfo> {
  return waitFor(
    `window "${title}"`,
    async () => {
      const all = await p.desktop.listWindows();
      return all.find((w) => w.title === title && w.visible && !w.iconic) ?? null;
    },
    timeoutMs,
  );
}

/** The visible window of the process whose executable path ends with `exeSuffix` (for apps whose title changes, like gtk3-demo). */
export function waitForExe(p: Platform, exeSuffix: string, timeoutMs = 30000): Promise<WindowInfo> {
  return waitFor(
    `window of ${exeSuffix}`,
    async () =>
      (await p.desktop.listWindows()).find(
        (w) => w.instance?.exe_path.endsWith(exeSuffix) && w.visible && !w.iconic,
      ) ?? null,
    timeoutMs,
  );
}

export function xdotool(...args: string[]): string {
  return execFileSync("xdotool", args, { encoding: "utf8", env: process.env }).trim();
}

/** Screen centre of the visible button called `name` in window `w`, from an AT-SPI walk of its own. */
export async function buttonCentre(
  p: Platform,
  w: WindowInfo,
  name: string,
): Promise<{ x: number; y: number }> {
  const s = await p.accessibility.openSession(w);
  try {
    const queue: A11yHandle[] = [await s.root()];
    while (queue.length > 0) {
      const node = queue.shift();
      const f = await s.facts(node);
      if (f.role === "button" && f.name === name && f.rect && !f.offscreen) {
        return { x: Math.floor((f.rect[0] + f.rect[2]) / 2), y: Math.floor((f.rect[1] + f.rect[3]) / 2) };
      }
      queue.push(...(await s.children(node)));
    }
    throw new Error(`no ${name} button`);
  } finally {
    await s.dispose();
  }
}

/** The title of our consent dialog: tests find it by title with xdotool; the server never does. */
export const CONSENT_TITLE = "uiinspect-mcp: access request";

/**
 * Server environment for tests that approve a dialog: Xvfb has only XTEST devices, which the
 * dialog ignores by default. Unsafe by name; tests of the default leave it out.
 */
export const UNSAFE_XTEST: Record<string, string> = { UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT: "1" };

/** Approves our consent dialog with xdotool (needs UNSAFE_XTEST); returns once the window is gone. */
export async function approveConsentDialog(): Promise<void> {
  const display = process.env.DISPLAY;
  if (!display) throw new Error("no DISPLAY");
  const { answerDialog } = await import("../lease/helpers.js");
  await answerDialog(display, "approve", 30_000, CONSENT_TITLE);
}

/** Clicks the button called `name` of the window titled `title` like a person (xdotool). */
export async function clickDialogButton(p: Platform, title: string, name: string): Promise<void> {
  const { x, y } = await buttonCentre(p, await waitForWindow(p, title), name);
  clickAt(x, y);
}

/** An independent capture of the root window via xwd, as RGBA. */
export function xwdRoot(): { width: number; height: number; rgba: Uint8Array } {
  return parseXwd(xwdRootRaw());
}

/** The raw xwd dump of the root window (parse it later with parseXwd, to keep a capture bracket short). */
export function xwdRootRaw(): Buffer {
  return execFileSync("xwd", ["-root", "-silent"], { env: process.env, maxBuffer: 64 * 1024 * 1024 });
}

/** An xwd dump as RGBA. */
export function parseXwd(buf: Buffer): { width: number; height: number; rgba: Uint8Array } {
  const u = (i: number) => buf.readUInt32BE(i * 4);
  const headerSize = u(0);
  const width = u(4);
  const height = u(5);
  const byteOrder = u(7);
  const bpp = u(11);
  const bpl = u(12);
  const redMask = u(14);
  const ncolors = u(19);
  // xwd writes 32 bpp, or 24 bpp when windows use other visuals (its multi-visual path).
  if ((bpp !== 32 && bpp !== 24) || redMask !== 0xff0000) throw new Error("unexpected xwd format");
  const bytesPP = bpp / 8;
  const start = headerSize + ncolors * 12;
  const rgba = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const s = start + y * bpl + x * bytesPP;
      const px = byteOrder === 0 ? buf.readUIntLE(s, bytesPP) : buf.readUIntBE(s, bytesPP);
      const d = (y * width + x) * 4;
      rgba[d] = (px >>> 16) & 0xff;
      rgba[d + 1] = (px >>> 8) & 0xff;
      rgba[d + 2] = px & 0xff;
      rgba[d + 3] = 255;
    }
  }
  return { width, height, rgba };
}

/** Independent AT-SPI access for assertions (reads a text value, which the product never does). */
export async function atspiBus(): Promise<dbus.MessageBus> {
  const session = dbus.sessionBus();
  try {
    const reply = await session.call(
      new dbus.Message({
        destination: "org.a11y.Bus",
        path: "/org/a11y/bus",
        interface: "org.a11y.Bus",
        member: "GetAddress",
      }),
    );
    return dbus.sessionBus({ busAddress: String(reply?.body[0]) });
  } finally {
    session.disconnect();
  }
}

export async function atspiText(bus: dbus.MessageBus, node: { bus: string; path: string }): Promise<string> {
  const reply = await bus.call(
    new dbus.Message({
      destination: node.bus,
      path: node.path,
      interface: "org.a11y.atspi.Text",
      member: "GetText",
      signature: "ii",
      body: [0, -1],
    }),
  );
  return String(reply?.body[0]);
}

/**
 * The AT-SPI peer address (GetApplicationBusAddress) of the registered application that process
 * `pid` owns, asked as any program on the accessibility bus may ask it; null when none answers.
 */
export async function peerAddressOf(bus: dbus.MessageBus, pid: number): Promise<string | null> {
  const apps = await bus.call(
    new dbus.Message({
      destination: "org.a11y.atspi.Registry",
      path: "/org/a11y/atspi/accessible/root",
      interface: "org.a11y.atspi.Accessible",
      member: "GetChildren",
    }),
  );
  let address: string | null = null;
  for (const [name, path] of (apps?.body[0] ?? []) as Array<[string, string]>) {
    const owner = await bus.call(
      new dbus.Message({
        destination: "org.freedesktop.DBus",
        path: "/org/freedesktop/DBus",
        interface: "org.freedesktop.DBus",
        member: "GetConnectionUnixProcessID",
        signature: "s",
        body: [name],
      }),
    );
    if (owner?.body[0] !== pid) continue;
    const reply = await bus.call(
      new dbus.Message({
        destination: name,
        path,
        interface: "org.a11y.atspi.Application",
        member: "GetApplicationBusAddress",
      }),
    );
    address = String(reply?.body[0]);
  }
  return address;
}

export function exeOf(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0")[0] ?? "";
}

/** Whether a process exists and is not a zombie. */
export function pidAlive(pid: number): boolean {
  if (!existsSync(`/proc/${pid}`)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Waits until no listed window carries `title` (e.g. a dialog whose process exited is torn down). */
export function waitForNoWindow(p: Platform, title: string, timeoutMs = 15000): Promise<true> {
  return waitFor(
    `no window "${title}"`,
    async () => ((await p.desktop.listWindows()).some((w) => w.title === title) ? null : true),
    timeoutMs,
  );
}

/**
 * Clicks button 1 at a screen point like a person. `xdotool mousemove --sync` to the point the
 * pointer is already on waits about 15 s (xdotool 3.20160805) for a motion that never comes, so
 * the pointer is only moved (and synced) when it is elsewhere.
 */
export function clickAt(x: number, y: number): void {
  const loc = xdotool("getmouselocation", "--shell");
  const at = (k: string) => Number(new RegExp(`^${k}=(-?\\d+)$`, "m").exec(loc)?.[1]);
  if (at("X") !== x || at("Y") !== y) xdotool("mousemove", "--sync", String(x), String(y));
  xdotool("click", "1");
}

/** Runs the built CLI (manager commands) and collects its output. */
export function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString("utf8");
    });
    child.stderr.on("data", (d: Buffer) => {
      out += d.toString("utf8");
    });
    child.on("close", (code) => done({ code, out }));
  });
}

/**
 * Stops this test's own broker: the pid of the last broker_start in its audit file. Never by
 * name, which would also stop brokers other test files run at the same time.
 */
export function stopOwnBroker(env: Record<string, string>): void {
  let pid = 0;
  try {
    const lines = readFileSync(
      join(env.XDG_STATE_HOME ?? "", "uiinspect-mcp/audit/unattended-approval.jsonl"),
      "utf8",
    )
      .split("\n")
      .filter(Boolean);
    for (const l of lines) {
      const e = JSON.parse(l) as { event?: string; broker_pid?: number };
      if (e.event === "broker_start" && typeof e.broker_pid === "number") pid = e.broker_pid;
    }
  } catch {
    return;
  }
  try {
    if (pid > 0) process.kill(pid, "SIGTERM");
  } catch {
    // Already gone.
  }
}

/**
 * The attack suites' shared setup: a private desktop, the attacker built, a target started, a
 * policy that allows it (its title patterns, the given actions, a "body" safe region of the whole
 * window), the built CLI serving that policy, and access to the target granted at our dialog.
 * Registers the suite's beforeAll/afterAll; the fields are there once beforeAll ran.
 */
export interface GrantedTarget {
  readonly p: Platform;
  readonly h: McpHarness;
  /** The suite's scratch folder (the policy, the attacker binary, what targets write). */
  readonly dir: string;
  readonly attackerBin: string;
  readonly target: WindowInfo;
  /** Attackers started with `attack` (stopAttackers ends them). */
  readonly attackers: Attacker[];
  attack(args: string[]): Promise<Attacker>;
  stopAttackers(): Promise<void>;
  /** The target as the platform lists it now. */
  live(): Promise<WindowInfo>;
  /** Activates the target and waits until the X server's focus is in it. */
  targetInFront(): Promise<WindowInfo>;
}

export interface GrantedTargetOptions {
  /** The scratch folder's prefix and the policy id's suffix. */
  name: string;
  titlePatterns: string[];
  actions: string[];
  /** Starts the target (attackers may already be started through `f`). */
  start(f: GrantedTarget): Promise<WindowInfo>;
  /** Safe regions besides "body" (the whole window), window-relative, from the started target. */
  moreRegions?(target: WindowInfo): Array<{ name: string; rect: [number, number, number, number] }>;
  /** More environment for the server (e.g. UIINSPECT_X11_TEST_WITHOUT_XLIB_XCB). */
  env?: Record<string, string>;
}

export function grantedTarget(opts: GrantedTargetOptions): GrantedTarget {
  let session: X11Session | undefined;
  const state: { p?: Platform; h?: McpHarness; dir?: string; attackerBin?: string; target?: WindowInfo } = {};
  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is set up in beforeAll`);
    return v;
  };
  const attackers: Attacker[] = [];
  const f: GrantedTarget = {
    get p() {
      return need(state.p, "the platform");
    },
    get h() {
      return need(state.h, "the server");
    },
    get dir() {
      return need(state.dir, "the scratch folder");
    },
    get attackerBin() {
      return need(state.attackerBin, "the attacker");
    },
    get target() {
      return need(state.target, "the target");
    },
    attackers,
    attack: (args) => startAttacker(f.attackerBin, args, attackers),
    async stopAttackers() {
      for (const a of attackers.splice(0)) await a.stop();
    },
    async live() {
      const w = await f.p.desktop.getWindow(f.target.hwnd);
      if (!w) throw new Error("the target is gone");
      return w;
    },
    async targetInFront() {
      await f.p.desktop.activateWindow(f.target.hwnd);
      await waitFor("target focused", async () => (await f.p.desktop.getWindow(f.target.hwnd))?.foreground);
      return f.live();
    },
  };
  beforeAll(async () => {
    session = startSession();
    state.dir = mkdtempSync(join(tmpdir(), `uix-${opts.name}-`));
    state.attackerBin = buildAttacker(state.dir);
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    state.p = await createX11Platform({ workerKind: "other" });
    const target = await opts.start(f);
    state.target = target;
    const policy = join(state.dir, "policy.json");
    const instance = target.instance;
    if (!instance) throw new Error("the target has no process instance");
    writeFileSync(
      policy,
      JSON.stringify({
        schema_version: 1,
        policy_id: `x11-${opts.name}`,
        application: { executable_path: instance.exe_path, title_patterns: opts.titlePatterns },
        allowed_actions: opts.actions,
        safe_regions: [
          { name: "body", rect: [0, 0, target.rect[2] - target.rect[0], target.rect[3] - target.rect[1]] },
          ...(opts.moreRegions?.(target) ?? []),
        ],
      }),
    );
    state.h = await McpHarness.start({
      ...LOOSE_BUDGETS,
      ...UNSAFE_XTEST,
      DESKTOP_AUTOMATION_POLICY_FILE: policy,
      UIINSPECT_CONSENT_TIMEOUT_MS: "60000",
      ...opts.env,
    });
    const pending = state.h.call("request_access", { hwnd: target.hwnd });
    await approveConsentDialog();
    expect((await pending).structured.decision).toBe("approved");
  }, 120_000);
  afterAll(async () => {
    await f.stopAttackers();
    await state.h?.close();
    await state.p?.dispose();
    session?.stop();
    // The policy, the attacker binary and what targets wrote: nothing of a run stays in /tmp.
    if (state.dir) rmSync(state.dir, { recursive: true, force: true });
  });
  return f;
}

/**
 * An xterm titled `title` that runs `cat` into `file` (no echo, no line buffering), so a test can
 * read back exactly what reached it; resolves once it is listed.
 */
export function catXterm(p: Platform, title: string, geometry: string, file: string): Promise<WindowInfo> {
  startApp("xterm", [
    "-T",
    title,
    "-geometry",
    geometry,
    "-e",
    "sh",
    "-c",
    `stty -icanon -echo; exec cat > '${file}'`,
  ]);
  return waitForWindow(p, title);
}

/** What reached a `catXterm` so far. */
export function readTyped(file: string): string {
  return existsSync(file) ? readFileSync(file, "latin1") : "";
}
