import { type ChildProcess, spawn } from "node:child_process";
import { isUiError, uiError } from "../../shared/errors.js";
import type { ConsentAnswer, ConsentDialogContent, ConsentPrompter } from "./prompter.js";

/**
 * The trusted consent dialog on X11: `zenity --question` showing exactly the server-built
 * `content.text` (never anything the target provides), Deny as the default button, its own
 * timeout, and the whole process group killed when the signal aborts (timeout, target exit,
 * shutdown). Exit status 0 (Allow) approves; every other outcome denies.
 */

export interface ZenityPrompterOptions {
  /** The zenity binary (default: "zenity" from PATH). */
  command?: string;
  /** zenity's own timeout; defaults to UIINSPECT_CONSENT_TIMEOUT_MS (60000) plus a margin. */
  timeoutMs?: number;
}

export const ZENITY_TITLE = "uiinspect-mcp: access request";

export function zenityArgs(content: ConsentDialogContent, timeoutMs: number): string[] {
  return [
    "--question",
    `--title=${ZENITY_TITLE}`,
    // Plain text: the content is never interpreted as Pango markup.
    "--no-markup",
    `--text=${content.text}`,
    "--default-cancel",
    "--ok-label=Allow",
    "--cancel-label=Deny",
    "--width=520",
    `--timeout=${Math.max(1, Math.ceil(timeoutMs / 1000))}`,
  ];
}

export class ZenityPrompter implements ConsentPrompter {
  readonly simulated = false;
  private readonly command: string;
  private readonly timeoutMs: number;

  constructor(opts: ZenityPrompterOptions = {}) {
    this.command = opts.command ?? "zenity";
    const envTimeout = Number(process.env.UIINSPECT_CONSENT_TIMEOUT_MS ?? 60000);
    const base = Number.isFinite(envTimeout) && envTimeout > 0 ? envTimeout : 60000;
    // The server's own deadline (the signal) comes first; zenity's is the backstop.
    this.timeoutMs = opts.timeoutMs ?? base + 5000;
  }

  prompt(content: ConsentDialogContent, signal: AbortSignal): Promise<ConsentAnswer> {
    return new Promise<ConsentAnswer>((resolve, reject) => {
      const abortReason = (): Error => (isUiError(signal.reason) ? signal.reason : uiError("cancelled"));
      if (signal.aborted) {
        reject(abortReason());
        return;
      }
      let child: ChildProcess;
      try {
        child = spawn(this.command, zenityArgs(content, this.timeoutMs), {
          detached: true,
          stdio: "ignore",
          env: process.env,
        });
      } catch {
        reject(uiError("platform_unavailable", "The consent dialog could not be shown."));
        return;
      }
      let settled = false;
      const killGroup = () => {
        if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
        try {
          process.kill(-child.pid, "SIGTERM");
        } catch {
          try {
            child.kill("SIGTERM");
          } catch {
            // Already gone.
          }
        }
      };
      const onAbort = () => {
        killGroup();
        if (!settled) {
          settled = true;
          reject(abortReason());
        }
      };
      signal.addEventListener("abort", onAbort, { once: true });
      child.once("error", () => {
        signal.removeEventListener("abort", onAbort);
        if (settled) return;
        settled = true;
        reject(uiError("platform_unavailable", "The consent dialog could not be shown."));
      });
      child.once("exit", (code) => {
        signal.removeEventListener("abort", onAbort);
        if (settled) return;
        settled = true;
        resolve(code === 0 ? "approve" : "deny");
      });
    });
  }
}
