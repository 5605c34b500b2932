import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import dbus from "dbus-next";
import { expect } from "vitest";

/**
 * Shared helpers for the Wayland tests: a private headless GNOME Shell per test file
 * (.ci/wayland-session.sh), GTK apps started on it, the same-user attacker
 * (fixtures/mutter-attacker.mjs) and independent AT-SPI reads over dbus-next.
 *
 * Required when UIINSPECT_REQUIRE_WAYLAND=1 (a missing gnome-shell then fails); otherwise the
 * suites are skipped with a message when the tools are missing.
 */

const here = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(here, "../..");
const SESSION_SCRIPT = join(REPO, ".ci/wayland-session.sh");
export const ATTACKER = join(here, "fixtures/mutter-attacker.mjs");

export const WAYLAND_REQUIRED = process.env.UIINSPECT_REQUIRE_WAYLAND === "1";

function have(cmd: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const NEEDED = [
  "gnome-shell",
  "pipewire",
  "wireplumber",
  "dbus-daemon",
  "unshare",
  "gst-launch-1.0",
  "gtk3-widget-factory",
  "gtk4-widget-factory",
  "zenity",
];
export const MISSING_TOOLS = process.platform === "linux" ? NEEDED.filter((c) => !have(c)) : NEEDED;
export const WAYLAND_AVAILABLE = WAYLAND_REQUIRED || MISSING_TOOLS.length === 0;
if (!WAYLAND_AVAILABLE) {
  process.stderr.write(
    `wayland tests skipped: missing ${MISSING_TOOLS.join(", ")} (run .ci/install-wayland-deps.sh; set UIINSPECT_REQUIRE_WAYLAND=1 to require them)\n`,
  );
}

export interface WaylandSession {
  env: Record<string, string>;
  stop(): void;
}

/** For a beforeAll that starts a session: two starts at the script's 90 s bound, and the rest. */
export const SESSION_HOOK_MS = 240_000;

/**
 * Starts a private GNOME session and points this process (Wayland display, buses) at it. Not
 * synchronous: the shell's start-up can take a minute on a loaded machine, and a test worker
 * blocked that long misses vitest's own RPC deadline, which fails the run by itself.
 */
export async function startSession(): Promise<WaylandSession> {
  if (MISSING_TOOLS.length > 0) throw new Error(`Wayland test tools missing: ${MISSING_TOOLS.join(", ")}`);
  // One more try: the script stops everything of a failed start, and a shell that once missed
  // its start-up under load (the script then prints why) is test infrastructure, not our code.
  const out = await runSessionStart().catch((e: unknown) => {
    process.stderr.write(`wayland session: ${(e as Error).message}; starting it once more\n`);
    return runSessionStart();
  });
  const env: Record<string, string> = {};
  for (const line of out.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  const state = env.UIINSPECT_WAYLAND_STATE;
  if (!state) throw new Error("wayland-session.sh printed no state directory");
  delete process.env.DISPLAY;
  Object.assign(process.env, env);
  return {
    env,
    stop: () => {
      execFileSync("bash", [SESSION_SCRIPT, "stop", state], { stdio: "inherit" });
    },
  };
}

/** `wayland-session.sh start`: what it printed (the session's environment), or why it failed. */
function runSessionStart(): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn("bash", [SESSION_SCRIPT, "start"], { stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d: string) => {
      stdout += d;
    });
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`wayland-session.sh start exited with ${code}`)),
    );
  });
}

/** Starts an app on the session; it is killed by PID at the end. */
export function startApp(cmd: string, args: string[], started: ChildProcess[]): ChildProcess {
  const child = spawn(cmd, args, { env: { ...process.env }, stdio: "ignore", detached: true });
  started.push(child);
  return child;
}

export function stopApps(started: ChildProcess[]): void {
  for (const c of started) {
    if (c.exitCode === null && c.signalCode === null && c.pid) {
      try {
        process.kill(c.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  started.length = 0;
}

export interface Step {
  step: string;
  ok: boolean;
  error?: string;
  [k: string]: unknown;
}

/** Runs the same-user attacker once, returning the steps it printed. */
export function runAttacker(args: string[], stdinMs = 0): Promise<Step[]> {
  return new Promise((resolveSteps, reject) => {
    const child = spawn(process.execPath, [ATTACKER, ...args], {
      env: { ...process.env },
      stdio: [stdinMs > 0 ? "pipe" : "ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (d: string) => {
      out += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("error", reject);
    child.once("exit", () => {
      clearTimeout(timer);
      resolveSteps(
        out
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((l) => JSON.parse(l) as Step),
      );
    });
  });
}

export async function waitFor<T>(what: string, fn: () => Promise<T | null>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Independent AT-SPI reads on the session's a11y bus (not the backend's code). */
export class A11yReader {
  private constructor(private readonly bus: dbus.MessageBus) {}

  static async open(): Promise<A11yReader> {
    const session = dbus.sessionBus();
    session.on("error", () => {});
    try {
      const reply = await session.call(
        new dbus.Message({
          destination: "org.a11y.Bus",
          path: "/org/a11y/bus",
          interface: "org.a11y.Bus",
          member: "GetAddress",
        }),
      );
      const address = reply?.body[0];
      if (typeof address !== "string") throw new Error("no a11y bus address");
      const bus = dbus.sessionBus({ busAddress: address });
      bus.on("error", () => {});
      return new A11yReader(bus);
    } finally {
      session.disconnect();
    }
  }

  async call(
    dest: string,
    path: string,
    iface: string,
    member: string,
    signature = "",
    body: unknown[] = [],
  ) {
    const reply = await this.bus.call(
      new dbus.Message({ destination: dest, path, interface: iface, member, signature, body }),
    );
    return reply?.body ?? [];
  }

  /** Applications the registry lists, with the PID the a11y bus daemon knows for each. */
  async apps(): Promise<Array<{ bus: string; path: string; name: string; pid: number }>> {
    const [kids] = (await this.call(
      "org.a11y.atspi.Registry",
      "/org/a11y/atspi/accessible/root",
      "org.a11y.atspi.Accessible",
      "GetChildren",
    )) as [Array<[string, string]>];
    const out: Array<{ bus: string; path: string; name: string; pid: number }> = [];
    for (const [bus, path] of kids) {
      try {
        const [pid] = (await this.call(
          "org.freedesktop.DBus",
          "/org/freedesktop/DBus",
          "org.freedesktop.DBus",
          "GetConnectionUnixProcessID",
          "s",
          [bus],
        )) as [number];
        const [name] = (await this.call(bus, path, "org.freedesktop.DBus.Properties", "Get", "ss", [
          "org.a11y.atspi.Accessible",
          "Name",
        ])) as [{ value: string }];
        out.push({ bus, path, name: name.value, pid });
      } catch {
        // an application that left meanwhile
      }
    }
    return out;
  }

  /** Depth-first nodes of one application: [bus, path, role name]. */
  async nodes(
    bus: string,
    path: string,
    max = 2000,
  ): Promise<Array<{ bus: string; path: string; role: string }>> {
    const out: Array<{ bus: string; path: string; role: string }> = [];
    const stack: Array<[string, string]> = [[bus, path]];
    while (stack.length > 0 && out.length < max) {
      const [b, p] = stack.pop() as [string, string];
      try {
        const [role] = (await this.call(b, p, "org.a11y.atspi.Accessible", "GetRoleName")) as [string];
        out.push({ bus: b, path: p, role });
        const [kids] = (await this.call(b, p, "org.a11y.atspi.Accessible", "GetChildren")) as [
          Array<[string, string]>,
        ];
        for (const k of kids.reverse()) stack.push(k);
      } catch {
        // gone meanwhile
      }
    }
    return out;
  }

  /** Whether the application named `appName` has a node of `role` whose name is `name`. */
  async hasNode(appName: string, role: string, name: string): Promise<boolean> {
    const app = (await this.apps()).find((a) => a.name === appName);
    if (!app) return false;
    for (const n of await this.nodes(app.bus, app.path)) {
      if (n.role !== role) continue;
      const [v] = (await this.call(n.bus, n.path, "org.freedesktop.DBus.Properties", "Get", "ss", [
        "org.a11y.atspi.Accessible",
        "Name",
      ])) as [{ value: string }];
      if (v.value === name) return true;
    }
    return false;
  }

  /** Presses the push button called `name` of the application named `appName` (Action 0). */
  async pressButton(appName: string, name: string): Promise<boolean> {
    const app = (await this.apps()).find((a) => a.name === appName);
    if (!app) return false;
    for (const n of await this.nodes(app.bus, app.path)) {
      if (n.role !== "push button") continue;
      const [v] = (await this.call(n.bus, n.path, "org.freedesktop.DBus.Properties", "Get", "ss", [
        "org.a11y.atspi.Accessible",
        "Name",
      ])) as [{ value: string }];
      if (v.value !== name) continue;
      await this.call(n.bus, n.path, "org.a11y.atspi.Action", "DoAction", "i", [0]);
      return true;
    }
    return false;
  }

  /** The first node of the application named `appName` with `role` and `name`, or null. */
  async findNode(appName: string, role: string, name: string): Promise<{ bus: string; path: string } | null> {
    const app = (await this.apps()).find((a) => a.name === appName);
    if (!app) return null;
    for (const n of await this.nodes(app.bus, app.path)) {
      if (n.role !== role) continue;
      const [v] = (await this.call(n.bus, n.path, "org.freedesktop.DBus.Properties", "Get", "ss", [
        "org.a11y.atspi.Accessible",
        "Name",
      ])) as [{ value: string }];
      if (v.value === name) return { bus: n.bus, path: n.path };
    }
    return null;
  }

  /** Every node of `appName` with `role` and `name`, with its extents in window coordinates. */
  async findAll(
    appName: string,
    role: string,
    name: string,
  ): Promise<Array<{ bus: string; path: string; rect: [number, number, number, number]; states: number }>> {
    const app = (await this.apps()).find((a) => a.name === appName);
    if (!app) return [];
    const out: Array<{ bus: string; path: string; rect: [number, number, number, number]; states: number }> =
      [];
    for (const n of await this.nodes(app.bus, app.path)) {
      if (n.role !== role) continue;
      const [v] = (await this.call(n.bus, n.path, "org.freedesktop.DBus.Properties", "Get", "ss", [
        "org.a11y.atspi.Accessible",
        "Name",
      ])) as [{ value: string }];
      if (v.value !== name) continue;
      const [ext] = (await this.call(n.bus, n.path, "org.a11y.atspi.Component", "GetExtents", "u", [1])) as [
        [number, number, number, number],
      ];
      out.push({ bus: n.bus, path: n.path, rect: ext, states: await this.states(n.bus, n.path) });
    }
    return out;
  }

  /** The first word of a node's AT-SPI state set. */
  async states(bus: string, path: string): Promise<number> {
    const [st] = (await this.call(bus, path, "org.a11y.atspi.Accessible", "GetState")) as [number[]];
    return st[0] ?? 0;
  }

  async doAction(node: { bus: string; path: string }, index = 0): Promise<void> {
    await this.call(node.bus, node.path, "org.a11y.atspi.Action", "DoAction", "i", [index]);
  }

  /** Selects a list item through its list's AT-SPI Selection (no pointer, no position). */
  async selectItem(node: { bus: string; path: string }): Promise<boolean> {
    const [index] = (await this.call(
      node.bus,
      node.path,
      "org.a11y.atspi.Accessible",
      "GetIndexInParent",
    )) as [number];
    const [parent] = (await this.call(node.bus, node.path, "org.freedesktop.DBus.Properties", "Get", "ss", [
      "org.a11y.atspi.Accessible",
      "Parent",
    ])) as [{ value: [string, string] }];
    const [ok] = (await this.call(
      parent.value[0],
      parent.value[1],
      "org.a11y.atspi.Selection",
      "SelectChild",
      "i",
      [index],
    )) as [boolean];
    return ok;
  }

  /** The accessible name of one node. */
  async name(bus: string, path: string): Promise<string> {
    const [v] = (await this.call(bus, path, "org.freedesktop.DBus.Properties", "Get", "ss", [
      "org.a11y.atspi.Accessible",
      "Name",
    ])) as [{ value: string }];
    return v.value;
  }

  /** Nodes of the application named `appName` with role and accessible name, depth first. */
  async named(appName: string): Promise<Array<{ bus: string; path: string; role: string; name: string }>> {
    const app = (await this.apps()).find((a) => a.name === appName);
    if (!app) return [];
    const out: Array<{ bus: string; path: string; role: string; name: string }> = [];
    for (const n of await this.nodes(app.bus, app.path, 5000)) {
      try {
        out.push({ ...n, name: await this.name(n.bus, n.path) });
      } catch {
        // gone meanwhile
      }
    }
    return out;
  }

  /**
   * The centre of gnome-shell's own widget named `name`, in screen coordinates (the shell is the
   * compositor: its extents are real positions, unlike a client's), or null.
   */
  async shellWidgetCentre(name: string): Promise<{ x: number; y: number } | null> {
    const node = (await this.named("gnome-shell")).find((n) => n.name === name);
    if (!node) return null;
    const [[x, y, w, h]] = (await this.call(
      node.bus,
      node.path,
      "org.a11y.atspi.Component",
      "GetExtents",
      "u",
      [0],
    )) as [[number, number, number, number]];
    return w > 0 && h > 0 ? { x: Math.round(x + w / 2), y: Math.round(y + h / 2) } : null;
  }

  async text(bus: string, path: string): Promise<string> {
    const [t] = (await this.call(bus, path, "org.a11y.atspi.Text", "GetText", "ii", [0, -1])) as [string];
    return t;
  }

  close(): void {
    this.bus.disconnect();
  }
}

/** One RGB frame (width × height × 3 bytes) of a PipeWire node, read by GStreamer. */
export function readFrame(node: number, width: number, height: number, timeoutMs = 15_000): Buffer {
  return execFileSync(
    "gst-launch-1.0",
    [
      "-q",
      "pipewiresrc",
      `path=${node}`,
      "num-buffers=1",
      "!",
      "videoconvert",
      "!",
      `video/x-raw,format=RGB,width=${width},height=${height}`,
      "!",
      "fdsink",
      "fd=1",
    ],
    { maxBuffer: width * height * 3 + 4096, timeout: timeoutMs },
  );
}

/**
 * One RGB frame of the whole monitor from a screen cast of the test's own: mutter's RecordMonitor
 * opened by another process (the attacker's "hold", which prints its PipeWire node and keeps the
 * cast until its stdin ends), never the portal's monitor node a server's reader holds (a second
 * reader of that node got no frame in three runs). The holder is stopped whatever happens.
 */
export async function readOwnMonitorFrame(
  size: { width: number; height: number },
  timeoutMs = 15_000,
): Promise<Buffer> {
  const holder = spawn(process.execPath, [ATTACKER, "hold"], {
    env: { ...process.env },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise((r) => holder.once("exit", r));
  try {
    let out = "";
    holder.stdout?.setEncoding("utf8");
    holder.stdout?.on("data", (d: string) => {
      out += d;
    });
    const node = await waitFor("the test's own screen cast", async () => {
      const found = /"node":(\d+)/.exec(out);
      return found ? Number(found[1]) : null;
    });
    return readFrame(node, size.width, size.height, timeoutMs);
  } finally {
    holder.stdin?.end();
    const late = setTimeout(() => holder.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(late);
  }
}

const PICKER = "xdg-desktop-portal-gnome";
// The picker's objects reach the a11y bus slowly on a loaded machine (a wait, not an assertion).
export const PICKER_WAIT_MS = 60_000;
const ST_CHECKED = 4;

/**
 * The portal's picker as it is on the a11y bus now: its "Single Window" tab (a dialog for windows
 * and monitors has tabs), `{ tab: null }` for a windows-only dialog showing the window's row, or
 * null while it is not shown.
 */
export async function pickerShown(
  reader: A11yReader,
  windowApp: string,
): Promise<{ tab: { bus: string; path: string } | null } | null> {
  const tab = await reader.findNode(PICKER, "tab", "Single Window");
  if (tab) return { tab };
  const row = await reader.findNode(PICKER, "list item", windowApp);
  return row ? { tab: null } : null;
}

/**
 * Answers xdg-desktop-portal-gnome's screen-share dialog the way a person would, through the
 * dialog's own AT-SPI objects (never screen coordinates): the window `windowApp` on the window
 * tab, the first monitor when asked, "Allow remote interaction" on when asked, then Share.
 * Honest only because it is a test: any program of the user could do the same (attacks.test.ts).
 */
export async function answerPicker(
  reader: A11yReader,
  opts: { windowApp: string; monitor: boolean; allowInput: boolean; share?: boolean },
): Promise<void> {
  const first = await waitFor("the picker", () => pickerShown(reader, opts.windowApp), PICKER_WAIT_MS);
  if (first.tab) await reader.doAction(first.tab);
  const row = await waitFor(
    "the shared window's row",
    () => reader.findNode(PICKER, "list item", opts.windowApp),
    PICKER_WAIT_MS,
  );
  expect(await reader.selectItem(row)).toBe(true);
  if (opts.monitor) {
    const monitors = await waitFor(
      "a monitor row",
      async () => {
        const app = (await reader.apps()).find((a) => a.name === PICKER);
        if (!app) return null;
        const list = await reader.nodes(app.bus, app.path);
        // The monitor rows are the list items that are neither the window row nor the switch's.
        const names = [];
        for (const n of list.filter((x) => x.role === "list item")) {
          const [v] = (await reader.call(n.bus, n.path, "org.freedesktop.DBus.Properties", "Get", "ss", [
            "org.a11y.atspi.Accessible",
            "Name",
          ])) as [{ value: string }];
          if (v.value !== opts.windowApp && v.value !== "Allow remote interaction") names.push(n);
        }
        return names.length > 0 ? names : null;
      },
      PICKER_WAIT_MS,
    );
    expect(await reader.selectItem(monitors[0])).toBe(true);
  }
  if (opts.allowInput) {
    const sw = await waitFor(
      "the remote interaction switch",
      () => reader.findNode(PICKER, "switch", "Allow remote interaction"),
      PICKER_WAIT_MS,
    );
    if (((await reader.states(sw.bus, sw.path)) & (1 << ST_CHECKED)) === 0) await reader.doAction(sw);
  }
  const button = await waitFor(
    "the picker's answer button",
    () => reader.findNode(PICKER, "button", opts.share === false ? "_Cancel Cancel" : "_Share Share"),
    PICKER_WAIT_MS,
  );
  await reader.doAction(button);
}
