import type { ProgressReporter } from "../access/callFacts.js";

/** The fixed text clients that show progress display while the dialog is open. */
export const CONSENT_WAIT_MESSAGE = "Waiting for a person to answer the access dialog";

export interface WaitProgressOptions {
  /** How long until the dialog closes by itself: the progress total. */
  totalMs: number;
  /** The first report comes only after this, so an answer kept from before reports nothing. */
  firstMs?: number;
  everyMs?: number;
  now?: () => number;
}

/**
 * Reports progress (elapsed ms of totalMs, with CONSENT_WAIT_MESSAGE) while `work` waits for a
 * person, then stops. The reporter sends nothing when the client gave no progressToken. A failed
 * notification never fails the wait.
 */
export async function withWaitProgress<T>(
  work: Promise<T>,
  report: ProgressReporter,
  opts: WaitProgressOptions,
): Promise<T> {
  const now = opts.now ?? Date.now;
  const start = now();
  const tick = () => {
    const elapsed = Math.min(Math.max(0, now() - start), opts.totalMs);
    report(elapsed, opts.totalMs, CONSENT_WAIT_MESSAGE).catch(() => undefined);
  };
  let interval: ReturnType<typeof setInterval> | undefined;
  const first = setTimeout(() => {
    tick();
    interval = setInterval(tick, opts.everyMs ?? 1000);
  }, opts.firstMs ?? 250);
  try {
    return await work;
  } finally {
    clearTimeout(first);
    if (interval !== undefined) clearInterval(interval);
  }
}
