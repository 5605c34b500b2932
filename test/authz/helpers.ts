import { isUiError } from "../../src/shared/errors.js";
import type { ProcessInstance } from "../../src/shared/identity.js";
import type {
  ConsentAnswer,
  ConsentDialogContent,
  ConsentPrompter,
} from "../../src/supervisor/consent/prompter.js";
import { flush } from "../support/time.js";

/** The clock lives in test/support; the authz tests keep importing it from here. */
export { flush, ManualTime } from "../support/time.js";

export interface ShownPrompt {
  content: ConsentDialogContent;
  signal: AbortSignal;
  answer: (a: ConsentAnswer) => void;
  fail: (e: unknown) => void;
}

/** A prompter the test answers by hand; it records every dialog and honours abort. */
export class ScriptedPrompter implements ConsentPrompter {
  readonly simulated = true;
  readonly shown: ShownPrompt[] = [];

  prompt(content: ConsentDialogContent, signal: AbortSignal): Promise<ConsentAnswer> {
    return new Promise<ConsentAnswer>((resolve, reject) => {
      signal.addEventListener("abort", () => reject(new Error("closed")), { once: true });
      this.shown.push({ content, signal, answer: resolve, fail: reject });
    });
  }

  last(): ShownPrompt {
    const p = this.shown.at(-1);
    if (!p) throw new Error("no dialog was shown");
    return p;
  }
}

export function instance(pid: number, start = "2026-11-30T08:00:00.000Z"): ProcessInstance {
  return { pid, start_time: start, exe_path: "c:\\program files\\ruffle\\bin\\ruffle.exe", session: "1" };
}

/** The error code a promise or function fails with, or "ok". */
export async function outcome(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === "function" ? p() : p);
    return "ok";
  } catch (e) {
    return isUiError(e) ? e.code : "not-a-UiError";
  }
}

/** Settled state of a promise without awaiting it forever. */
export async function peekState<T>(p: Promise<T>): Promise<"pending" | "fulfilled" | "rejected"> {
  let state: "pending" | "fulfilled" | "rejected" = "pending";
  p.then(
    () => {
      state = "fulfilled";
    },
    () => {
      state = "rejected";
    },
  );
  await flush();
  return state;
}
