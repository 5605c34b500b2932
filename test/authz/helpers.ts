import { isUiError } from "../../src/shared/errors.js";
import type { ProcessInstance } from "../../src/shared/identity.js";
import type {
  ConsentAnswer,
  ConsentDialogContent,
  ConsentPrompter,
} from "../../src/supervisor/consent/prompter.js";

/** A clock plus timers that only move when the test says so: no real waiting, no flakiness. */
export class ManualTime {
  now: number;
  private seq = 0;
  private readonly timers = new Map<number, { due: number; fn: () => void }>();

  constructor(start = Date.parse("2026-11-30T10:00:00.000Z")) {
    this.now = start;
  }

  readonly clock = (): number => this.now;

  readonly setTimer = (fn: () => void, ms: number): unknown => {
    const id = ++this.seq;
    this.timers.set(id, { due: this.now + Math.max(0, ms), fn });
    return id;
  };

  readonly clearTimer = (h: unknown): void => {
    if (typeof h === "number") this.timers.delete(h);
  };

  get pendingTimers(): number {
    return this.timers.size;
  }

  /** Moves time forward, firing due timers in order and letting promise chains run after each. */
  async advance(ms: number): Promise<void> {
    const target = this.now + ms;
    await flush();
    for (;;) {
      let nextId: number | undefined;
      let nextDue = Number.POSITIVE_INFINITY;
      // Map order is creation order, so a strict "<" fires equal deadlines in creation order.
      for (const [id, t] of this.timers)
        if (t.due <= target && t.due < nextDue) {
          nextId = id;
          nextDue = t.due;
        }
      if (nextId === undefined) break;
      const t = this.timers.get(nextId);
      this.timers.delete(nextId);
      this.now = Math.max(this.now, nextDue);
      t?.fn();
      await flush();
    }
    this.now = target;
    await flush();
  }
}

/** Lets every queued microtask and promise continuation run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((r) => setImmediate(r));
}

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
