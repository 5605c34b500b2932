import { accessSync, constants, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { Worker } from "node:worker_threads";
import { trustedDialogProgram } from "../platforms/wayland/consent.js";
import { UNSAFE_XTEST_SETTING } from "../platforms/x11/dialog/spawn.js";
import { SETTINGS } from "../shared/settings.js";
import { readText } from "../shared/settingsReader.js";
import { allowedWindows } from "../supervisor/access/targets.js";
import type { ServerConfig } from "../supervisor/config.js";
import { describeConsentDialog, WAYLAND_LIMIT } from "../supervisor/consent/dialogInfo.js";
import type { PolicyState } from "../supervisor/policy/load.js";
import type { Supervisor } from "../supervisor/supervisor.js";
import type { ProbeRequest, ProbeResult } from "./doctorProbe.js";

/**
 * The checks behind `uiinspect-mcp doctor`: one per part the server needs, each with a one-line
 * fix. Native code and calls that may hang run in the server's own workers (platform facts,
 * windows) or in doctorProbe's worker thread (D-Bus, native modules), never on this thread.
 * Findings are codes, counts and paths the operator configured: never titles or screen content.
 */

export type CheckStatus = "ok" | "warn" | "fail" | "skip";

export interface Check {
  id: string;
  status: CheckStatus;
  summary: string;
  fix?: string;
}

type Env = Record<string, string | undefined>;
type Facts = Record<string, string | number | boolean | null>;

const ok = (id: string, summary: string): Check => ({ id, status: "ok", summary });
const warn = (id: string, summary: string, fix: string): Check => ({ id, status: "warn", summary, fix });
const fail = (id: string, summary: string, fix: string): Check => ({ id, status: "fail", summary, fix });
const skip = (id: string, summary: string): Check => ({ id, status: "skip", summary });

/** An executable file named `cmd` on PATH, or null. */
export function findOnPath(cmd: string, env: Env): string | null {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, cmd);
    try {
      accessSync(p, constants.X_OK);
      if (statSync(p).isFile()) return p;
    } catch {
      // Not here.
    }
  }
  return null;
}

/** Node 20.15 is the first 20.x with zlib.crc32, which the PNG encoder uses. */
export function nodeCheck(version: string = process.versions.node): Check {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  return major > 20 || (major === 20 && minor >= 15)
    ? ok("node", `Node v${version}`)
    : fail("node", `Node v${version} is too old`, "install Node 20.15 or newer");
}

export function displayCheck(config: ServerConfig, env: Env): Check {
  if (config.platform !== "x11") return skip("display", `not used by ${config.platform ?? "this OS"}`);
  if (env.DISPLAY?.trim()) return ok("display", `DISPLAY=${env.DISPLAY.trim()}`);
  const wayland = env.WAYLAND_DISPLAY?.trim() ? " (a Wayland session needs XWayland's DISPLAY)" : "";
  return fail(
    "display",
    `DISPLAY is not set${wayland}`,
    'set DISPLAY to the X display the apps run on (e.g. DISPLAY=:0); in Codex add env_vars = ["DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY"]',
  );
}

export function windowsSessionCheck(config: ServerConfig, env: Env): Check {
  if (config.platform !== "win32") return skip("windows_session", "not on Windows");
  const name = env.SESSIONNAME?.trim();
  if (name && name.toLowerCase() === "services")
    return fail(
      "windows_session",
      "running in the services session (session 0): no desktop to see",
      "start the server from the signed-in user's session, not from a service",
    );
  return ok("windows_session", name ? `session ${name}` : "interactive session");
}

/** The platform facts from the capture worker, or why there are none. */
export function platformChecks(config: ServerConfig, facts: Facts | { error: string }): Check[] {
  if (config.platform === null)
    return [fail("platform", "no backend for this OS", "run on Linux (X11) or Windows")];
  if ("error" in facts && Object.keys(facts).length === 1) {
    const fix =
      config.platform === "x11"
        ? "start the X server or point DISPLAY (and XAUTHORITY) at a running one; check with xdpyinfo"
        : config.platform === "fake"
          ? "set --fake-desktop FILE (UIINSPECT_FAKE_DESKTOP) to a scenario file"
          : config.platform === "wayland"
            ? "point WAYLAND_DISPLAY and DBUS_SESSION_BUS_ADDRESS at the running GNOME session"
            : "run in a signed-in desktop session";
    return [fail("platform", `${config.platform}: the backend did not start (${facts.error})`, fix)];
  }
  const f = facts as Facts;
  if (config.platform === "win32")
    return [
      ok(
        "platform",
        `win32, DPI awareness ${String(f.win32_dpi_process)} (thread ${String(f.win32_dpi_thread)}), integrity RID ${String(f.win32_integrity_rid)}`,
      ),
    ];
  if (config.platform === "wayland")
    return [
      ok(
        "platform",
        `wayland, display ${String(f.wayland_display)}: windows, trees and semantic actions; screenshots, clicks and keys refused (the compositor gives no window positions or focus)`,
      ),
      waylandLimitCheck(),
    ];
  const out: Check[] = [ok("platform", `${config.platform}`)];
  if (config.platform !== "x11") return out;
  out.push(
    ok("x_server", `display ${String(f.display)}, ${String(f.screen_width)}x${String(f.screen_height)}`),
  );
  out.push(
    f.ewmh === true
      ? ok("window_manager", `${f.wm_name ? String(f.wm_name) : "unnamed"} (EWMH)`)
      : fail(
          "window_manager",
          "no EWMH window manager: windows cannot be listed",
          "start an EWMH window manager in the session (openbox, xfwm4, mutter, kwin)",
        ),
  );
  out.push(
    f.xtest === true
      ? ok("xtest", "XTest present")
      : fail(
          "xtest",
          "the X server has no XTest: input is impossible",
          "use an X server with XTEST (Xorg, Xvfb)",
        ),
  );
  out.push(
    f.xshm === true
      ? ok("xshm", "MIT-SHM present")
      : warn(
          "xshm",
          "no MIT-SHM: captures use the slower XGetImage",
          "run the server on the X server's host",
        ),
  );
  out.push(
    f.x_resource_pid_lookup === true
      ? ok("x_resource", "X-Resource PID lookup")
      : warn(
          "x_resource",
          "no X-Resource: PIDs come from _NET_WM_PID (weaker)",
          "install libxres1 (apt install libxres1); the X server needs the X-Resource extension",
        ),
  );
  out.push(x11LimitCheck());
  return out;
}

/** What X11 itself cannot stop, said on every X11 doctor run (docs/security.md, "The X11 limit"). */
export function x11LimitCheck(): Check {
  return warn(
    "x11_limit",
    "X11 cannot stop another program of your user from forging hardware-looking input (XTest device events) or reading any window's pixels: consent here stops the agent's own tools and plain XTest, not malware already running as you",
    "run the agent and its targets under a dedicated account; GNOME 43 on Wayland has the same limit (docs/wayland.md)",
  );
}

/** What this GNOME does not stop, said on every Wayland doctor run (docs/wayland.md, "Consent"). */
export function waylandLimitCheck(): Check {
  return warn(
    "wayland_limit",
    WAYLAND_LIMIT,
    "run the agent and its targets under a dedicated account, or on a compositor that restricts its remote-desktop and screen-cast APIs to named callers (docs/wayland.md)",
  );
}

export function busChecks(config: ServerConfig, probe: ProbeResult | null): Check[] {
  if (config.platform !== "x11") return [];
  const bus = probe?.bus;
  if (!bus) return [fail("dbus_session", "the D-Bus probe did not answer in time", "check the session bus")];
  const out: Check[] = [];
  if (!bus.session_bus) {
    out.push(
      fail(
        "dbus_session",
        bus.address_source === "env"
          ? `D-Bus session bus unreachable at DBUS_SESSION_BUS_ADDRESS (${bus.session_error})`
          : "D-Bus session bus unreachable: DBUS_SESSION_BUS_ADDRESS is not set and no default bus answers",
        "run inside the desktop session, or pass DBUS_SESSION_BUS_ADDRESS (Codex: env_vars); without one: eval $(dbus-launch --sh-syntax)",
      ),
    );
    out.push(skip("atspi_bus", "needs the session bus"));
    return out;
  }
  out.push(
    ok(
      "dbus_session",
      `D-Bus session bus (${bus.address_source === "env" ? "DBUS_SESSION_BUS_ADDRESS" : "default address"})`,
    ),
  );
  if (!bus.atspi_bus) {
    out.push(
      fail(
        "atspi_bus",
        `AT-SPI bus unavailable (${bus.atspi_error})`,
        "install at-spi2-core (apt install at-spi2-core); it is started by org.a11y.Bus on the session bus",
      ),
    );
    return out;
  }
  out.push(ok("atspi_bus", "AT-SPI bus"));
  out.push(
    bus.atspi_enabled === true
      ? ok("atspi_enabled", "org.a11y.Status IsEnabled = true")
      : warn(
          "atspi_enabled",
          `org.a11y.Status IsEnabled = ${String(bus.atspi_enabled)}: some toolkits (Qt, Electron) expose no tree`,
          "busctl --user set-property org.a11y.Bus /org/a11y/bus org.a11y.Status IsEnabled b true",
        ),
  );
  return out;
}

/** The consent dialog program for this platform: the one place to update when the dialog changes. */
export function consentDialogCheck(config: ServerConfig, env: Env): Check {
  const dialog = describeConsentDialog(config.platform, env);
  // The unsafe test setting makes every dialog answerable by any local program: never a quiet "ok".
  if (dialog.warning) return warn("consent_dialog", `!!! ${dialog.warning}`, `unset ${UNSAFE_XTEST_SETTING}`);
  switch (config.platform) {
    case "x11":
      return ok("consent_dialog", `${dialog.mechanism} (${dialog.program})`);
    case "win32":
      return ok("consent_dialog", dialog.mechanism);
    case "fake":
      return config.fakeDesktop
        ? ok("consent_dialog", "scripted by the simulated desktop (consent.answer)")
        : fail("consent_dialog", "no scenario file", "set --fake-desktop FILE");
    case "wayland":
      return trustedDialogProgram() !== null
        ? ok("consent_dialog", `${dialog.mechanism} (${dialog.program})`)
        : fail(
            "consent_dialog",
            `${dialog.program} is missing, not a root-owned file or writable by others: no consent can be asked`,
            "install zenity (apt install zenity)",
          );
    default:
      return fail("consent_dialog", "no dialog on this OS", "run on Linux (X11) or Windows");
  }
}

export function moduleChecks(probe: ProbeResult | null, platform: ServerConfig["platform"]): Check[] {
  if (!probe)
    return [fail("native_modules", "the module probe did not answer in time", "reinstall the package")];
  return probe.modules.map((m) => {
    if (m.ok) return ok(`module_${m.name}`, `${m.name} ${m.version ?? ""}`.trim());
    const fix = `reinstall so ${m.name} has a build for this OS/arch (npm rebuild ${m.name})`;
    // The simulated desktop needs no FFI.
    return m.name === "koffi" && platform === "fake"
      ? warn(`module_${m.name}`, `${m.name} does not load (${m.code})`, fix)
      : fail(`module_${m.name}`, `${m.name} does not load (${m.code})`, fix);
  });
}

const POLICY_FIX = `--${SETTINGS.policyFile.flag} FILE or ${SETTINGS.policyFile.env} (examples: schema/examples/); check it with validate-policy FILE`;

export function policyChecks(
  state: PolicyState,
  env: Env,
  windows: number | null,
  matching: number | null,
): Check[] {
  const file = readText(env, SETTINGS.policyFile)?.trim();
  const where = file ? ` ${file}` : "";
  if (state.status === "none") return [fail("policy", "no policy: only health_check works", POLICY_FIX)];
  if (state.status === "error") {
    const reasons = state.reasons.slice(0, 3).map((r) => r.slice(0, 200));
    return [
      fail(
        "policy",
        `${state.source}${where}: ${state.code}${reasons.length ? ` (${reasons.join("; ")})` : ""}`,
        POLICY_FIX,
      ),
    ];
  }
  const p = state.policy;
  const out: Check[] = [
    ok(
      "policy",
      `${p.source}${where}${p.policy_id ? ` (${p.policy_id})` : ""}: ${p.allowed_actions.size} actions, ${p.safe_regions.length} safe regions`,
    ),
  ];
  if (p.source === "file" && file) out.push(filePermissionCheck(file));
  if (p.source === "file" && p.allowed_actions.has("observe") && p.safe_regions.length === 0)
    out.push(
      warn(
        "policy_regions",
        "observe is allowed but there are no safe_regions: with a policy file every screenshot needs region_name",
        "add safe_regions (window-relative rects) to the policy",
      ),
    );
  if (matching === null) out.push(skip("policy_matches", "no window list (the platform is not usable)"));
  else if (matching === 0)
    out.push(
      warn(
        "policy_matches",
        `matches none of the ${windows} windows now`,
        "start the app, or compare application.executable_path and title_patterns with the running app",
      ),
    );
  else out.push(ok("policy_matches", `matches ${matching} of the ${windows} windows now`));
  return out;
}

/** Another user able to write the policy could widen it. */
export function filePermissionCheck(file: string): Check {
  if (process.platform === "win32") return skip("policy_permissions", "not checked on Windows");
  try {
    const st = statSync(file);
    const uid = process.getuid?.() ?? -1;
    if ((st.mode & 0o022) !== 0)
      return warn(
        "policy_permissions",
        `${file} is writable by ${st.mode & 0o002 ? "everyone" : "its group"}`,
        `chmod go-w ${file}`,
      );
    if (st.uid !== uid && st.uid !== 0)
      return warn(
        "policy_permissions",
        `${file} belongs to another user (uid ${st.uid})`,
        `chown the file to uid ${uid} or root`,
      );
    return ok("policy_permissions", `mode ${(st.mode & 0o777).toString(8)}, owner uid ${st.uid}`);
  } catch {
    return skip("policy_permissions", "the file cannot be read");
  }
}

export function auditCheck(config: ServerConfig): Check {
  const file = config.auditFile;
  if (!file) return ok("audit_file", "not set (audit events stay in the in-memory ring)");
  try {
    const st = statSync(file);
    if (!st.isFile())
      return fail("audit_file", `${file} is not a regular file`, `point ${SETTINGS.auditFile.env} at a file`);
    accessSync(file, constants.W_OK);
    return ok("audit_file", `${file} (appendable)`);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "ENOENT")
      return fail(
        "audit_file",
        `${file} is not writable (${code})`,
        `fix its permissions, or choose another --audit-file`,
      );
  }
  try {
    accessSync(dirname(file), constants.W_OK | constants.X_OK);
    return ok("audit_file", `${file} (will be created 0600)`);
  } catch {
    return fail(
      "audit_file",
      `${dirname(file)} does not exist or is not writable`,
      `mkdir -p ${dirname(file)}`,
    );
  }
}

export async function leaseCheck(sup: Supervisor): Promise<Check> {
  if (!sup.lease) return skip("lease_broker", `the lease is off (${SETTINGS.lease.env})`);
  const s = await sup.lease.status();
  return s.reachable
    ? ok("lease_broker", `reachable, ${s.active ? `active until ${s.expires_at}` : "no active lease"}`)
    : fail(
        "lease_broker",
        `${SETTINGS.lease.env}=broker but no broker answers`,
        "uiinspect-mcp manager lease activate --hours N starts one (docs/lease.md)",
      );
}

/** Runs doctorProbe in a worker thread; null when it did not answer before the deadline. */
export async function runProbe(req: ProbeRequest, deadlineMs: number): Promise<ProbeResult | null> {
  const worker = new Worker(new URL("./doctorProbe.js", import.meta.url));
  try {
    return await new Promise<ProbeResult | null>((resolve) => {
      const t = setTimeout(() => resolve(null), deadlineMs);
      worker.once("message", (r: ProbeResult) => {
        clearTimeout(t);
        resolve(r);
      });
      worker.once("error", () => {
        clearTimeout(t);
        resolve(null);
      });
      worker.postMessage(req);
    });
  } finally {
    await worker.terminate();
  }
}

/** Windows on the desktop and how many the policy allows now; nulls when either is unknown. */
export async function windowCounts(
  sup: Supervisor,
  platformOk: boolean,
): Promise<{ windows: number | null; matching: number | null }> {
  if (!platformOk || sup.policyState.status !== "ok") return { windows: null, matching: null };
  try {
    const { windows } = await sup.workers.capture.call("desktop.list", {}, { deadlineMs: 10_000 });
    return { windows: windows.length, matching: allowedWindows(sup.policyState.policy, windows).length };
  } catch {
    return { windows: null, matching: null };
  }
}
