import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import { isUiError, uiError } from "../../shared/errors.js";
import { SETTINGS } from "../../shared/settings.js";
import { switchIsOn } from "../../shared/settingsReader.js";

/**
 * The consent dialog on a GNOME Wayland session, only under the unsafe test setting.
 *
 * On this compositor no window can tell a person's input from a program's: mutter's
 * org.gnome.Mutter.RemoteDesktop lets any program of the same user move the pointer and press
 * keys with no dialog (test/wayland/attacks.test.ts), and AT-SPI lets it press any button.
 * A dialog answered that way proves nothing, so by default the backend has no consent dialog at
 * all and access can never be granted. With UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT=1 (tests only:
 * "injected input may answer") the dialog is zenity's question box, started by absolute path from
 * a root-owned file, with the server-built text and Deny as the default button.
 */

const ZENITY = "/usr/bin/zenity";
const KILL_GRACE_MS = 2000;
const PASSED_ENV = [
  "WAYLAND_DISPLAY",
  "XDG_RUNTIME_DIR",
  "DBUS_SESSION_BUS_ADDRESS",
  "HOME",
  "LANG",
  "LC_ALL",
  "XDG_CONFIG_HOME",
  "XDG_DATA_HOME",
  "XDG_CACHE_HOME",
];

export function waylandConsentAllowed(env: Record<string, string | undefined>): boolean {
  return switchIsOn(env, SETTINGS.unsafeAllowXtestConsent);
}

/** The dialog program must be a root-owned file nobody else can write. */
function trustedProgram(): string {
  try {
    const st = statSync(ZENITY);
    if (st.isFile() && st.uid === 0 && (st.mode & 0o022) === 0) return ZENITY;
  } catch {
    // missing
  }
  throw uiError("platform_unavailable", "No consent dialog program is installed.");
}

export function showWaylandDialog(
  req: { title: string; text: string; timeoutMs: number },
  env: Record<string, string | undefined>,
  signal: AbortSignal,
): Promise<"approve" | "deny"> {
  if (!waylandConsentAllowed(env)) {
    return Promise.reject(
      uiError("platform_unavailable", "No trusted consent dialog is available on this platform."),
    );
  }
  let program: string;
  try {
    program = trustedProgram();
  } catch (e) {
    return Promise.reject(e);
  }
  const abortReason = (): Error => (isUiError(signal.reason) ? signal.reason : uiError("cancelled"));
  if (signal.aborted) return Promise.reject(abortReason());
  const childEnv: Record<string, string> = { GDK_BACKEND: "wayland" };
  for (const k of PASSED_ENV) {
    const v = env[k];
    if (v !== undefined) childEnv[k] = v;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(
      program,
      [
        "--question",
        `--title=${req.title}`,
        `--text=${req.text}`,
        "--no-markup",
        "--default-cancel",
        "--ok-label=Allow",
        "--cancel-label=Deny",
        `--timeout=${Math.max(1, Math.ceil(req.timeoutMs / 1000))}`,
      ],
      { env: childEnv, stdio: "ignore" },
    );
    let aborted = false;
    let killTimer: NodeJS.Timeout | null = null;
    const onAbort = () => {
      aborted = true;
      child.kill("SIGTERM");
      killTimer = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    child.once("error", () => {
      signal.removeEventListener("abort", onAbort);
      reject(uiError("platform_unavailable", "The consent dialog could not be shown."));
    });
    // Settles only once the process has exited: the window is gone by then.
    child.once("exit", (code) => {
      signal.removeEventListener("abort", onAbort);
      if (killTimer) clearTimeout(killTimer);
      if (aborted || signal.aborted) reject(abortReason());
      // zenity: 0 = Allow, 1 = Deny or closed, 5 = its own timeout; anything else is no answer.
      else if (code === 0) resolve("approve");
      else if (code === 1 || code === 5) resolve("deny");
      else reject(uiError("platform_unavailable", "The consent dialog failed."));
    });
  });
}
