/**
 * Tile hashes computed after the answer (capture tiles "later"). screenshot_window's frames need
 * them only when a visual wait later asks what changed since one of them, yet computing them
 * took about 0.8 ms of an 800×600 shot, before its answer. So the shot answers first and its
 * tiles are hashed right after (the next turn of the worker's event loop), from the same frame,
 * which is lent to the job until then; they are kept here under the frame's hash for
 * capture.tiles. Anything that reads them runs the jobs still due first, so an answer never
 * misses tiles of a frame already answered.
 *
 * Bounded by bytes, oldest out: what is gone (or lost with a restarted worker) is answered
 * null, and the wait then reports the whole region as changed, as for a frame it never saw.
 */
export class LaterTiles {
  private readonly kept = new Map<string, Uint32Array>();
  private keptBytes = 0;
  private readonly due: Array<() => void> = [];
  private scheduled = false;

  constructor(private readonly maxBytes = 2 * 1024 * 1024) {}

  /**
   * Hashes `compute()` under `frameHash` after the current turn, then calls `done` (which gives
   * the frame back); `done` runs even when the hashing throws.
   */
  later(frameHash: string, compute: () => Uint32Array, done: () => void): void {
    this.due.push(() => {
      try {
        this.keep(frameHash, compute());
      } finally {
        done();
      }
    });
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.runDue();
      });
    }
  }

  /** The tiles of the frame with this hash, or null. */
  get(frameHash: string): Uint32Array | null {
    this.runDue();
    const t = this.kept.get(frameHash);
    if (!t) return null;
    // Most recently asked last: the least recent goes first.
    this.kept.delete(frameHash);
    this.kept.set(frameHash, t);
    return t;
  }

  /** Runs every job still due now (a shot about to start, a read of the tiles). */
  runDue(): void {
    while (this.due.length > 0) {
      const job = this.due.shift();
      try {
        job?.();
      } catch {
        // A frame whose tiles could not be hashed has none here: capture.tiles answers null.
      }
    }
  }

  /** How many frames' tiles are kept (tests, memory accounting). */
  get size(): number {
    return this.kept.size;
  }

  private keep(frameHash: string, tiles: Uint32Array): void {
    const old = this.kept.get(frameHash);
    if (old) {
      this.kept.delete(frameHash);
      this.keptBytes -= old.byteLength;
    }
    if (tiles.byteLength > this.maxBytes) return;
    this.kept.set(frameHash, tiles);
    this.keptBytes += tiles.byteLength;
    for (const [k, v] of this.kept) {
      if (this.keptBytes <= this.maxBytes) break;
      this.kept.delete(k);
      this.keptBytes -= v.byteLength;
    }
  }
}
