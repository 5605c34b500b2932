import { uiError } from "../../shared/errors.js";
import { SETTINGS } from "../../shared/settings.js";
import { type Env, readSetting } from "../../shared/settingsReader.js";

export interface Reservation {
  readonly bytes: number;
  /** Returns the bytes to the budget; safe to call any number of times. */
  release(): void;
}

interface Waiter {
  bytes: number;
  resolve: (r: Reservation) => void;
  reject: (e: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export const MIB = 1024 * 1024;
export const DEFAULT_MEMORY_BUDGET_BYTES = SETTINGS.screenshotMemoryBudgetBytes.default;
export const MIN_MEMORY_BUDGET_BYTES = SETTINGS.screenshotMemoryBudgetBytes.min;
export const MAX_MEMORY_BUDGET_BYTES = SETTINGS.screenshotMemoryBudgetBytes.max;

/**
 * Process-wide byte budget for image work. Waiters are served strictly first in, first out:
 * a small request never overtakes a large one that is waiting, so large ones cannot starve.
 */
export class MemoryBudget {
  private used = 0;
  private high = 0;
  private readonly queue: Waiter[] = [];

  constructor(readonly limitBytes: number) {
    if (!Number.isSafeInteger(limitBytes) || limitBytes < 1)
      throw uiError("invalid_argument", "Memory budget must be a positive integer.");
  }

  get inUse(): number {
    return this.used;
  }

  get peak(): number {
    return this.high;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** A reservation now, or null when it does not fit or others are already waiting. */
  tryReserve(bytes: number): Reservation | null {
    this.check(bytes);
    if (this.queue.length > 0 || this.used + bytes > this.limitBytes) return null;
    return this.grant(bytes);
  }

  /**
   * Waits in FIFO order for `bytes`. More than the whole budget fails at once with
   * memory_budget_exceeded; an aborted signal fails with cancelled and leaves the queue.
   */
  reserve(bytes: number, signal?: AbortSignal): Promise<Reservation> {
    try {
      this.check(bytes);
    } catch (e) {
      return Promise.reject(e);
    }
    if (bytes > this.limitBytes) return Promise.reject(uiError("memory_budget_exceeded"));
    if (signal?.aborted) return Promise.reject(uiError("cancelled"));
    const now = this.tryReserve(bytes);
    if (now) return Promise.resolve(now);
    return new Promise<Reservation>((resolve, reject) => {
      const w: Waiter = { bytes, resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          const i = this.queue.indexOf(w);
          if (i < 0) return; // already granted
          this.queue.splice(i, 1);
          reject(uiError("cancelled"));
          this.drain(); // the head may have been blocking smaller requests behind it
        };
        signal.addEventListener("abort", w.onAbort, { once: true });
      }
      this.queue.push(w);
    });
  }

  private check(bytes: number): void {
    if (!Number.isSafeInteger(bytes) || bytes < 0)
      throw uiError("invalid_argument", "Reserved bytes must be a non-negative integer.");
  }

  private grant(bytes: number): Reservation {
    this.used += bytes;
    if (this.used > this.high) this.high = this.used;
    let released = false;
    return {
      bytes,
      release: () => {
        if (released) return;
        released = true;
        this.used -= bytes;
        this.drain();
      },
    };
  }

  private drain(): void {
    while (this.queue.length > 0) {
      const head = this.queue[0];
      if (this.used + head.bytes > this.limitBytes) return;
      this.queue.shift();
      if (head.signal && head.onAbort) head.signal.removeEventListener("abort", head.onAbort);
      head.resolve(this.grant(head.bytes));
    }
  }
}

/** DESKTOP_AUTOMATION_SCREENSHOT_MEMORY_BUDGET_BYTES (default 128 MiB, 1 MiB..2 GiB); throws invalid_argument. */
export function memoryBudgetBytesFromEnv(env: Env): number {
  return readSetting(env, SETTINGS.screenshotMemoryBudgetBytes);
}

/** The process-wide budget, read once at start-up (later env changes have no effect). */
export function memoryBudgetFromEnv(env: Env): MemoryBudget {
  return new MemoryBudget(memoryBudgetBytesFromEnv(env));
}
