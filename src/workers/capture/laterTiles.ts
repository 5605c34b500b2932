import { tileHashes } from "./pixels.js";
import { pngFrameRows } from "./png.js";

/**
 * Tile hashes of screenshot_window's frames (tiles "later"), computed only when asked. A
 * frame's tiles are read only by a visual wait that later asks what changed since it, yet
 * hashing them cost about 0.6 ms of CPU on every 800×600 shot, first before the answer and then
 * right after it, where on two cores it competed with the supervisor's work on that answer. So
 * a shot keeps a copy of its PNG here (about 60 KB for a UI frame) under its frame hash, and
 * capture.tiles inflates that PNG back to the frame's rows and hashes their tiles: the same rows
 * the tiles would have been hashed from (no grid is drawn on a frame whose tiles come later), so
 * the same tiles.
 *
 * Bounded by bytes, oldest out: what is gone (or lost with a restarted worker) is answered
 * null, and the wait then reports the whole region as changed, as for a frame it never saw.
 * Tiles once hashed are kept in place of their PNG (a few KB instead of tens).
 */
export class LaterTiles {
  private readonly kept = new Map<string, Kept>();
  private keptBytes = 0;

  constructor(private readonly maxBytes = 6 * 1024 * 1024) {}

  /** Keeps a copy of `png` (the PNG the capture worker answered, no grid on it) under `frameHash`. */
  later(frameHash: string, png: Uint8Array): void {
    this.put(frameHash, { png: png.slice() });
  }

  /** The tiles of the frame with this hash, or null (never kept, gone, or not our PNG). */
  get(frameHash: string): Uint32Array | null {
    const k = this.kept.get(frameHash);
    if (!k) return null;
    const tiles = k.tiles ?? tilesOfPng(k.png);
    if (!tiles) {
      this.drop(frameHash);
      return null;
    }
    // Most recently asked last: the least recent goes first.
    this.put(frameHash, { tiles });
    return tiles;
  }

  /** How many frames are kept (tests, memory accounting). */
  get size(): number {
    return this.kept.size;
  }

  private put(frameHash: string, k: Kept): void {
    this.drop(frameHash);
    const bytes = sizeOf(k);
    if (bytes > this.maxBytes) return;
    this.kept.set(frameHash, k);
    this.keptBytes += bytes;
    for (const key of this.kept.keys()) {
      if (this.keptBytes <= this.maxBytes) break;
      this.drop(key);
    }
  }

  private drop(frameHash: string): void {
    const old = this.kept.get(frameHash);
    if (!old) return;
    this.kept.delete(frameHash);
    this.keptBytes -= sizeOf(old);
  }
}

type Kept = { png: Uint8Array; tiles?: undefined } | { tiles: Uint32Array; png?: undefined };

function sizeOf(k: Kept): number {
  return k.tiles ? k.tiles.byteLength : (k.png?.byteLength ?? 0);
}

/** The tile hashes of the frame one of our PNGs holds; null when it is not one of ours. */
function tilesOfPng(png: Uint8Array | undefined): Uint32Array | null {
  const frame = png ? pngFrameRows(png) : null;
  if (!frame) return null;
  const stride = frame.width * 3 + 1;
  return tileHashes({
    width: frame.width,
    height: frame.height,
    channels: 3,
    data: frame.rows.subarray(1),
    stride,
  });
}
