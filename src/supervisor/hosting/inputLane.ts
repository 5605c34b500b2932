import { uiError } from "../../shared/errors.js";

/**
 * One client's input effects run one at a time, in the order they arrived: a
 * `send_key alt+f2` can no longer slip between the characters of a `send_text` running at the
 * same moment. A later gesture waits for the one in flight; a caller that gives up while
 * waiting (its signal aborts) leaves the queue with `cancelled` and emits nothing.
 */
export class InputLane {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(client: string, signal: AbortSignal, effect: () => Promise<T>): Promise<T> {
    const before = this.tails.get(client) ?? Promise.resolve();
    let finished = (): void => undefined;
    const mine = new Promise<void>((resolve) => {
      finished = resolve;
    });
    // The next gesture waits for everything queued before it and for this one.
    const tail = before.then(() => mine);
    this.tails.set(client, tail);
    try {
      await waitUnlessAborted(before, signal);
      return await effect();
    } finally {
      finished();
      if (this.tails.get(client) === tail) this.tails.delete(client);
    }
  }

  /** Gestures of this client in flight or queued (tests, health figures). */
  busy(client: string): boolean {
    return this.tails.has(client);
  }
}

function waitUnlessAborted(p: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(uiError("cancelled"));
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(uiError("cancelled"));
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
  });
}
