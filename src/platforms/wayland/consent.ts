import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import { announcePid, WAYLAND_DIALOG_PROGRAM } from "../../shared/dialogPresence.js";
import { isUiError, uiError } from "../../shared/errors.js";
import { SETTINGS } from "../../shared/settings.js";
import { switchIsOn } from "../../shared/settingsReader.js";

/**
 * Our own consent dialog on a GNOME Wayland session, the first of two gates (the second is the
 * compositor's portal dialog, src/supervisor/consent/portalGate.ts): zenity's question box,
 * started by absolute path from a root-owned file nobody else can write, never looked up on
 * PATH, with the server-built text, Deny as the default button and its own timeout as a
 * backstop after the broker's deadline (the broker closes it at its deadline).
 *
 * It is kept off the accessibility bus (NO_AT_BRIDGE for GTK 3, GTK_A11Y=none for GTK 4), so no
 * program presses its buttons over AT-SPI, this server's own semantic actions included. What it
 * cannot stop on this compositor: mutter's RemoteDesktop lets any program of the same user move
 * the pointer and press keys with no dialog, and no window can tell that input from a person's
 * (docs/wayland.md). With UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT=1 (tests only) it is put on the
 * accessibility bus, so a test answers it by pressing Allow there, as any program then could.
 *
 * While it runs, its PID is announced in the dialog presence folder, so every Wayland worker of
 * every uiinspect server of this user leaves its window out of listings and targets.
 */

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

/** Whether the unsafe test setting puts the dialog on the accessibility bus. */
export function waylandDialogOnA11yBus(env: Record<string, string | undefined>): boolean {
  return switchIsOn(env, SETTINGS.unsafeAllowXtestConsent);
}

/** The dialog program, when it is a root-owned regular file nobody else can write; else null. */
export function trustedDialogProgram(): string | null {
  try {
    const st = statSync(WAYLAND_DIALOG_PROGRAM);
    if (st.isFile() && st.uid === 0 && (st.mode & 0o022) === 0) return WAYLAND_DIALOG_PROGRAM;
  } catch {
    // missing
  }
  return null;
}

export function showWaylandDialog(
  req: { title: string; text: string; timeoutMs: number },
  env: Record<string, string | undefined>,
  signal: AbortSignal,
): Promise<"approve" | "deny"> {
  const program = trustedDialogProgram();
  if (program === null)
    return Promise.reject(uiError("platform_unavailable", "No consent dialog program is installed."));
  const abortReason = (): Error => (isUiError(signal.reason) ? signal.reason : uiError("cancelled"));
  if (signal.aborted) return Promise.reject(abortReason());
  const childEnv: Record<string, string> = { GDK_BACKEND: "wayland" };
  for (const k of PASSED_ENV) {
    const v = env[k];
    if (v !== undefined) childEnv[k] = v;
  }
  if (!waylandDialogOnA11yBus(env)) {
    childEnv.NO_AT_BRIDGE = "1";
    childEnv.GTK_A11Y = "none";
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
    const unannounce = child.pid ? announcePid(env, child.pid) : () => undefined;
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
      unannounce();
      reject(uiError("platform_unavailable", "The consent dialog could not be shown."));
    });
    // Settles only once the process has exited: the window is gone by then.
    child.once("exit", (code) => {
      signal.removeEventListener("abort", onAbort);
      unannounce();
      if (killTimer) clearTimeout(killTimer);
      if (aborted || signal.aborted) reject(abortReason());
      // zenity: 0 = Allow, 1 = Deny or closed, 5 = its own timeout; anything else is no answer.
      else if (code === 0) resolve("approve");
      else if (code === 1 || code === 5) resolve("deny");
      else reject(uiError("platform_unavailable", "The consent dialog failed."));
    });
  });
}
