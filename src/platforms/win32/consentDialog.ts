import { Worker } from "node:worker_threads";
import { z } from "zod";
import * as w from "../../os/win32/ffi.js";
import { uiError } from "../../shared/errors.js";
import { unsafeXtestConsent } from "../x11/dialog/spawn.js";

/**
 * The server-owned Win32 consent dialog. It runs on a dedicated thread (a worker_thread) so
 * its modal loop never blocks the caller; it has no owner window (never a target's), is
 * topmost, and Deny is the default button. The text comes from the caller, built from OS
 * facts only (buildDialogContent); nothing the target controls is shown.
 *
 * Resolves "approve" / "deny" with the person's answer. On timeout the dialog is closed and
 * the promise rejects with UiError("consent_timeout"); on abort, with UiError("cancelled").
 * Closing finds the dialog by its thread (EnumThreadWindows) and posts WM_CLOSE (TaskDialog,
 * created with TDF_ALLOW_DIALOG_CANCELLATION) or WM_COMMAND IDNO (MessageBox): both end it as
 * a denial inside its own thread.
 */

const ThreadMsg = z.object({
  type: z.literal("thread"),
  tid: z.number().int(),
  kind: z.enum(["taskdialog", "messagebox"]),
});
const AnswerMsg = z.object({ type: z.literal("answer"), answer: z.enum(["approve", "deny"]) });
const FromThread = z.union([ThreadMsg, AnswerMsg]);

const WM_CLOSE = 0x0010;
const WM_COMMAND = 0x0111;
const IDNO = 7;
const CLOSE_RETRY_MS = 100;
const CLOSE_GIVE_UP_MS = 5000;

export const CONSENT_DIALOG_TITLE = "uiinspect-mcp: access request";

/** Top-level windows of one thread. */
export function threadWindows(tid: number): number[] {
  const out: number[] = [];
  w.withCallback(
    (hwnd: number) => {
      out.push(hwnd);
      return 1;
    },
    w.EnumWindowsProc,
    (cb) => w.EnumThreadWindows(tid, cb, 0),
  );
  return out;
}

export function showConsentDialog(
  text: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<"approve" | "deny"> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(uiError("cancelled"));
      return;
    }
    const worker = new Worker(new URL("./consentThread.js", import.meta.url), {
      workerData: { text, title: CONSENT_DIALOG_TITLE, allowInjected: unsafeXtestConsent(process.env) },
    });
    let tid = 0;
    let kind: "taskdialog" | "messagebox" = "taskdialog";
    let settled = false;
    let closing: NodeJS.Timeout | null = null;
    let giveUp: NodeJS.Timeout | null = null;

    const cleanup = () => {
      clearTimeout(timer);
      if (closing) clearInterval(closing);
      if (giveUp) clearTimeout(giveUp);
      signal?.removeEventListener("abort", onAbort);
    };
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      cleanup();
      fn();
      void worker.terminate();
    };
    /** Ends the dialog from outside as a denial, retrying until its thread answers. */
    const close = (error: ReturnType<typeof uiError>) => {
      if (closing || settled) return;
      const attempt = () => {
        if (!tid) return;
        for (const h of threadWindows(tid)) {
          if (kind === "taskdialog") w.PostMessageW(h, WM_CLOSE, 0, 0);
          else w.PostMessageW(h, WM_COMMAND, IDNO, 0);
        }
      };
      attempt();
      closing = setInterval(attempt, CLOSE_RETRY_MS);
      giveUp = setTimeout(() => finish(() => reject(error)), CLOSE_GIVE_UP_MS);
      pendingError = error;
    };
    let pendingError: ReturnType<typeof uiError> | null = null;
    const onAbort = () => close(uiError("cancelled"));
    const timer = setTimeout(() => close(uiError("consent_timeout")), Math.max(0, timeoutMs));
    signal?.addEventListener("abort", onAbort, { once: true });

    worker.on("message", (raw: unknown) => {
      const m = FromThread.safeParse(raw);
      if (!m.success) return;
      if (m.data.type === "thread") {
        tid = m.data.tid;
        kind = m.data.kind;
        return;
      }
      const answer = m.data.answer;
      const err = pendingError;
      // A dialog we closed ourselves is never an approval, whatever it returned.
      if (err) finish(() => reject(err));
      else finish(() => resolve(answer));
    });
    worker.on("error", () =>
      finish(() => reject(uiError("platform_unavailable", "The consent dialog failed."))),
    );
    worker.on("exit", () =>
      finish(() => reject(pendingError ?? uiError("platform_unavailable", "The consent dialog failed."))),
    );
  });
}
