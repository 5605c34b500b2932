import { isUiError, type UiError, uiError } from "../../shared/errors.js";
import { SHOTS_IN_FLIGHT } from "../../shared/shots.js";

/** Bounds the shots in flight in this worker (SHOTS_IN_FLIGHT: why), in the order they came. */
export class ShotGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number = SHOTS_IN_FLIGHT) {}

  /** Resolves with the release once the shot may run; rejects when `signal` aborts first. */
  enter(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(abortReason(signal));
    if (this.running < this.limit) {
      this.running += 1;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const go = () => {
        signal.removeEventListener("abort", onAbort);
        this.running += 1;
        resolve(this.releaser());
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(go);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(abortReason(signal));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(go);
    });
  }

  /** Shots running now and waiting (tests). */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.running -= 1;
      this.waiting.shift()?.();
    };
  }
}

/** The code the handler would answer with: the deadline's or the cancel's, else cancelled. */
function abortReason(signal: AbortSignal): UiError {
  return isUiError(signal.reason) ? signal.reason : uiError("cancelled");
}
