import { appendFile, mkdir, readFile } from "node:fs/promises";
import { dirname, isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { isUiError, uiError } from "../../shared/errors.js";
import type { ConsentAnswer, ConsentDialogContent, ConsentPrompter } from "./prompter.js";

/** The `consent` object of the simulated desktop's scenario file (docs/spec.md §10). */
export const FakeConsentScriptSchema = z.object({
  answer: z.enum(["approve", "deny", "timeout", "ignore"]),
  delay_ms: z.number().int().min(0).max(3_600_000).default(0),
  log: z.string().min(1).optional(),
});
export type FakeConsentScript = z.infer<typeof FakeConsentScriptSchema>;

export interface FakePrompterTimers {
  setTimer: (fn: () => void, ms: number) => unknown;
  clearTimer: (handle: unknown) => void;
}

const realTimers: FakePrompterTimers = {
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/**
 * The simulated desktop's scripted consent dialog. Each prompt re-reads the scenario file, so
 * a test can change the answer between prompts; it appends exactly the dialog content as one
 * JSON line to `consent.log` (relative paths from the scenario file's folder), waits
 * `delay_ms` and answers. "timeout" and "ignore" never answer: the broker's timeout or the
 * target's exit closes them. A scenario without a `consent` object answers "deny", because
 * deny is the default button. Exists only for the fake platform; the supervisor must never select
 * it for a real backend.
 */
export class FakePrompter implements ConsentPrompter {
  readonly simulated = true;
  private readonly timers: FakePrompterTimers;
  /** Last script read successfully: a half-written scenario file falls back to it. */
  private lastGood: { script: FakeConsentScript | undefined } | undefined;

  constructor(
    private readonly scenarioPath: string,
    timers?: FakePrompterTimers,
  ) {
    this.timers = timers ?? realTimers;
  }

  async prompt(content: ConsentDialogContent, signal: AbortSignal): Promise<ConsentAnswer> {
    throwIfAborted(signal);
    const script = await this.readScript();
    throwIfAborted(signal);
    if (script?.log) {
      const logPath = isAbsolute(script.log) ? script.log : resolve(dirname(this.scenarioPath), script.log);
      try {
        await mkdir(dirname(logPath), { recursive: true });
        await appendFile(logPath, `${JSON.stringify(content)}\n`, { encoding: "utf8", mode: 0o600 });
      } catch {
        // A test that asked for a log must see the failure rather than a silent gap.
        throw uiError("platform_unavailable", "The simulated consent log cannot be written.");
      }
      throwIfAborted(signal);
    }
    const answer = script?.answer ?? "deny";
    const delay = script?.delay_ms ?? 0;
    return new Promise<ConsentAnswer>((resolvePromise, reject) => {
      let timer: unknown;
      const onAbort = () => {
        if (timer !== undefined) this.timers.clearTimer(timer);
        reject(uiError("cancelled"));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      if (answer === "timeout" || answer === "ignore") return; // only an abort ends these
      timer = this.timers.setTimer(() => {
        signal.removeEventListener("abort", onAbort);
        resolvePromise(answer);
      }, delay);
    });
  }

  private async readScript(): Promise<FakeConsentScript | undefined> {
    try {
      const script = parseScenario(await readFile(this.scenarioPath, "utf8"));
      this.lastGood = { script };
      return script;
    } catch (e) {
      // A test may be rewriting the file right now: keep the last good script, as the fake desktop does.
      if (this.lastGood) return this.lastGood.script;
      throw isUiError(e) ? e : uiError("platform_unavailable", "The simulated desktop file cannot be read.");
    }
  }
}

function parseScenario(raw: string): FakeConsentScript | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch {
    throw uiError("platform_unavailable", "The simulated desktop file is not valid JSON.");
  }
  if (doc === null || typeof doc !== "object" || !("consent" in doc) || doc.consent === undefined)
    return undefined;
  const parsed = FakeConsentScriptSchema.safeParse(doc.consent);
  if (!parsed.success) throw uiError("platform_unavailable", "The simulated consent script is invalid.");
  return parsed.data;
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw uiError("cancelled");
}
