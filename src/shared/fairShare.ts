import { isUiError, type UiError, uiError } from "./errors.js";

interface Waiting {
  start: () => void;
  /** Leaves the queue: the caller gave up before its turn. */
  abort: () => void;
}

/**
 * Calls of several identities to one shared worker, admitted so that no identity waits behind
 * another's backlog: an instance's uia worker, and the capture worker's shots (the supervisor
 * lets them through in turn by identity; the worker takes them as one identity, in the order
 * they came). At most `window` calls are in flight on the worker; beyond that, each identity's
 * calls wait in its own queue, in the order they came, and a freed slot goes to the next
 * identity in turn that has one waiting (round robin). An identity with 32 walks in flight on an
 * app then delays another's one walk by about `window` walks, not by 32. A call that gives up
 * while waiting (its signal aborts) leaves with the abort's reason when that is one of our errors
 * (a worker's deadline: worker_timeout), else `cancelled`, and never reaches the worker. No call
 * in flight waits on a queued one (a worker call ends on its own), so the window cannot deadlock.
 */
export class FairShare {
  private running = 0;
  /** Identities with calls waiting, in turn order (a served identity goes to the back). */
  private readonly queues = new Map<string, Waiting[]>();

  constructor(private readonly window: number) {
    if (!Number.isInteger(window) || window < 1) throw new RangeError("window must be a positive integer");
  }

  async run<T>(who: string, signal: AbortSignal | undefined, call: () => Promise<T>): Promise<T> {
    if (signal?.aborted) throw abortReason(signal);
    if (this.running >= this.window || this.queues.size > 0) await this.turn(who, signal);
    else this.running += 1;
    try {
      return await call();
    } finally {
      this.running -= 1;
      this.next();
    }
  }

  /** Calls in flight and waiting (tests, health figures). */
  load(): { running: number; waiting: number } {
    let waiting = 0;
    for (const q of this.queues.values()) waiting += q.length;
    return { running: this.running, waiting };
  }

  private turn(who: string, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => w.abort();
      const w: Waiting = {
        start: () => {
          signal?.removeEventListener("abort", onAbort);
          this.running += 1;
          resolve();
        },
        abort: () => {
          const q = this.queues.get(who);
          const i = q?.indexOf(w) ?? -1;
          if (q === undefined || i < 0) return;
          q.splice(i, 1);
          if (q.length === 0) this.queues.delete(who);
          reject(signal ? abortReason(signal) : uiError("cancelled"));
        },
      };
      const q = this.queues.get(who);
      if (q) q.push(w);
      else this.queues.set(who, [w]);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Hands free slots to waiting calls, one identity after another. */
  private next(): void {
    while (this.running < this.window) {
      const first = this.queues.entries().next();
      if (first.done) return;
      const [who, q] = first.value;
      const w = q.shift();
      this.queues.delete(who);
      if (q.length > 0) this.queues.set(who, q);
      w?.start();
    }
  }
}

function abortReason(signal: AbortSignal): UiError {
  return isUiError(signal.reason) ? signal.reason : uiError("cancelled");
}
