import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type DialogReport, DialogReportSchema } from "../../../shared/consentReport.js";
import { isUiError, uiError } from "../../../shared/errors.js";
import { SETTINGS } from "../../../shared/settings.js";
import { switchIsOn } from "../../../shared/settingsReader.js";

/**
 * Starts our own dialog (main.ts) as a child process and waits for its answer; what the dialog
 * ignored (counts and kinds, main.ts's `report` lines) is handed to `onReport` as it comes.
 * Trusted by construction: the program is node itself (process.execPath, absolute)
 * running our own file (resolved from this module's URL, absolute); no PATH lookup, no NODE_OPTIONS,
 * no inspector flags, and only the display variables in its environment. The promise settles only
 * once that process has exited, so whoever holds the dialog gate holds it while the window may be
 * on screen.
 */

/** The one explicit unsafe setting: XTEST input counts as a person's (tests under Xvfb only). */
export const UNSAFE_XTEST_SETTING = SETTINGS.unsafeAllowXtestConsent.env;

export function unsafeXtestConsent(env: Record<string, string | undefined>): boolean {
  return switchIsOn(env, SETTINGS.unsafeAllowXtestConsent);
}

/** The compiled entry: from dist when we run compiled, and dist's copy when run from sources (tests). */
export function dialogEntryPath(): string {
  const here = fileURLToPath(new URL("./main.js", import.meta.url));
  if (existsSync(here)) return here;
  return here.replace(/\/src\/platforms\/x11\/dialog\/main\.js$/, "/dist/platforms/x11/dialog/main.js");
}

export interface TrustedDialogRequest {
  title: string;
  text: string;
  timeoutMs: number;
}

const KILL_GRACE_MS = 2000;
const PASSED_ENV = ["DISPLAY", "XAUTHORITY", "HOME", "LANG", "LC_ALL", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME"];

/** Bounds what a dialog may write: lines beyond this length, or beyond this many bytes in all, are dropped. */
const MAX_LINE = 2048;
const MAX_OUTPUT = 1 << 20;

/** A stdout handler that hands on whole lines, within the bounds above. */
function lineReader(onLine: (line: string) => void): (d: Buffer) => void {
  let pending = "";
  let total = 0;
  return (d) => {
    total += d.length;
    if (total > MAX_OUTPUT) return;
    pending += d.toString("utf8");
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.length <= MAX_LINE) onLine(line);
    }
    if (pending.length > MAX_LINE) pending = "";
  };
}

function parseLine(line: string): { answer?: unknown; report?: unknown } | null {
  try {
    const msg: unknown = JSON.parse(line);
    return typeof msg === "object" && msg !== null ? (msg as { answer?: unknown; report?: unknown }) : null;
  } catch {
    return null;
  }
}

export function showTrustedDialog(
  req: TrustedDialogRequest,
  env: Record<string, string | undefined>,
  signal: AbortSignal,
  onReport?: (r: DialogReport) => void,
): Promise<"approve" | "deny"> {
  return new Promise((resolve, reject) => {
    const abortReason = (): Error => (isUiError(signal.reason) ? signal.reason : uiError("cancelled"));
    if (signal.aborted) {
      reject(abortReason());
      return;
    }
    const childEnv: Record<string, string> = {};
    for (const k of PASSED_ENV) {
      const v = env[k];
      if (v !== undefined) childEnv[k] = v;
    }
    const child = spawn(process.execPath, [dialogEntryPath()], {
      stdio: ["pipe", "pipe", "ignore"],
      env: childEnv,
    });
    let answer: unknown = null;
    let killTimer: NodeJS.Timeout | undefined;
    child.stdout.on(
      "data",
      lineReader((line) => {
        const m = parseLine(line);
        const report = DialogReportSchema.safeParse(m?.report);
        if (report.success) onReport?.(report.data);
        if (m && "answer" in m) answer = m.answer;
      }),
    );
    child.stdin.on("error", () => {
      // The child died before reading: its exit decides.
    });
    const onAbort = () => {
      child.kill("SIGTERM");
      killTimer = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    child.once("error", () => {
      signal.removeEventListener("abort", onAbort);
      reject(uiError("platform_unavailable", "The consent dialog could not be shown."));
    });
    child.once("close", (code) => {
      signal.removeEventListener("abort", onAbort);
      if (killTimer) clearTimeout(killTimer);
      if (signal.aborted) {
        reject(abortReason());
        return;
      }
      if (code === 0 && answer === "approve") resolve("approve");
      else if (code === 0 && answer === "deny") resolve("deny");
      else reject(uiError("platform_unavailable", "The consent dialog failed."));
    });
    child.stdin.write(
      `${JSON.stringify({
        title: req.title,
        text: req.text,
        timeout_ms: Math.max(100, Math.min(3_600_000, Math.round(req.timeoutMs))),
        allow_injected: unsafeXtestConsent(env),
      })}\n`,
    );
  });
}
