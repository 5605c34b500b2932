import { randomUUID } from "node:crypto";
import type { WindowInfo } from "../../shared/platform.js";

/**
 * The capture worker's own recent desktop.list answers, by id. The supervisor resolves a
 * screenshot's target from one of them moments before it asks for the pixels; handing back the
 * id instead of the whole listing saves copying it to the supervisor's thread and back and
 * checking it twice on the way (it grows with the desktop). An id is random, so one from before
 * a worker restart never names another listing; an unknown or stale id just means the pre-check
 * enumerates again.
 */
export class ListingCache {
  private readonly kept: Array<{ id: string; at: number; windows: WindowInfo[] }> = [];

  constructor(
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
    private readonly capacity = 8,
  ) {}

  /** Keeps `windows` (this worker's listing, read now); returns its id. */
  remember(windows: WindowInfo[]): string {
    const id = randomUUID();
    this.kept.unshift({ id, at: this.now(), windows });
    if (this.kept.length > this.capacity) this.kept.length = this.capacity;
    return id;
  }

  /** The listing `id` names while it is at most maxAgeMs old; else undefined. */
  fresh(id: string): WindowInfo[] | undefined {
    const hit = this.kept.find((k) => k.id === id);
    if (!hit) return undefined;
    return readRecently(hit.at, this.maxAgeMs, this.now()) ? hit.windows : undefined;
  }
}

/** Whether something read at `at` is at most `maxAgeMs` old at `now` (a clock gone back: no). */
export function readRecently(at: number, maxAgeMs: number, now: number): boolean {
  const age = now - at;
  return age >= 0 && age <= maxAgeMs;
}
