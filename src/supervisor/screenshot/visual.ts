import type { Rect } from "../../shared/geometry.js";

/**
 * Where two frames of one region differ, from their tile hashes (the capture worker's 32 × 32
 * tiles, src/workers/capture/pixels.ts), and the tile hashes of frames this server handed out
 * recently, so a later frame can say what changed since one the client holds. Only hashes are
 * kept here, never pixels.
 */

/** The capture worker's tile side. */
export const TILE = 32;
/** Beyond this many rectangles their bounding box is given instead. */
export const MAX_CHANGED_RECTS = 16;

/**
 * Window-relative rectangles covering every tile that differs: runs of changed tiles in a tile
 * row, merged with the run below when both span the same columns. `before` null (or of another
 * size): the whole region.
 */
export function changedRects(
  before: readonly number[] | null,
  after: readonly number[],
  width: number,
  height: number,
  origin: readonly [number, number],
): Rect[] {
  const cols = Math.ceil(width / TILE);
  const rows = Math.ceil(height / TILE);
  const whole: Rect = [origin[0], origin[1], origin[0] + width, origin[1] + height];
  if (before === null || before.length !== after.length || after.length !== cols * rows) return [whole];
  // Open runs by their column span: [x0, x1) in tiles → the rect growing downwards.
  let open = new Map<string, Rect>();
  const done: Rect[] = [];
  for (let ty = 0; ty < rows; ty++) {
    const next = new Map<string, Rect>();
    let tx = 0;
    while (tx < cols) {
      if (before[ty * cols + tx] === after[ty * cols + tx]) {
        tx += 1;
        continue;
      }
      const start = tx;
      while (tx < cols && before[ty * cols + tx] !== after[ty * cols + tx]) tx += 1;
      const key = `${start}:${tx}`;
      const y1 = origin[1] + Math.min(height, (ty + 1) * TILE);
      const above = open.get(key);
      if (above) {
        above[3] = y1;
        next.set(key, above);
        open.delete(key);
      } else {
        next.set(key, [
          origin[0] + start * TILE,
          origin[1] + ty * TILE,
          origin[0] + Math.min(width, tx * TILE),
          y1,
        ]);
      }
    }
    for (const r of open.values()) done.push(r);
    open = next;
  }
  for (const r of open.values()) done.push(r);
  if (done.length <= MAX_CHANGED_RECTS) return done.sort((a, b) => a[1] - b[1] || a[0] - b[0]);
  return [
    [
      Math.min(...done.map((r) => r[0])),
      Math.min(...done.map((r) => r[1])),
      Math.max(...done.map((r) => r[2])),
      Math.max(...done.map((r) => r[3])),
    ],
  ];
}

/**
 * What a memo holds for a frame: its tile hashes, or (screenshot_window's frames, tiles
 * "later") the full frame hash the capture worker keeps them under (CaptureService.tilesOf).
 */
export type MemoTiles = readonly number[] | { readonly later: string };

/**
 * Tile hashes of the frames a client was last given, by frame hash (a few per client, oldest
 * out), each with the key of the process instance it showed: when a grant ends, its identity's
 * entries of that instance go (forget), like the capture worker's kept frames (keptFrames.ts).
 */
export class FrameMemo {
  private readonly byClient = new Map<string, Map<string, { tiles: MemoTiles; instance: string }>>();

  constructor(
    private readonly perClient = 8,
    private readonly clients = 64,
  ) {}

  remember(client: string, hash: string, tiles: MemoTiles | undefined, instance: string): void {
    if (!tiles) return;
    let m = this.byClient.get(client);
    if (m) this.byClient.delete(client);
    else m = new Map();
    // Most recently used client last; the least recent goes past the cap.
    this.byClient.set(client, m);
    while (this.byClient.size > this.clients) {
      const oldest = this.byClient.keys().next().value;
      if (oldest === undefined) break;
      this.byClient.delete(oldest);
    }
    m.delete(hash);
    m.set(hash, { tiles, instance });
    while (m.size > this.perClient) {
      const oldest = m.keys().next().value;
      if (oldest === undefined) break;
      m.delete(oldest);
    }
  }

  tiles(client: string, hash: string): MemoTiles | null {
    return this.byClient.get(client)?.get(hash)?.tiles ?? null;
  }

  /** Drops every entry matching each field that is not null (both null: all). */
  forget(client: string | null, instance: string | null): void {
    for (const [c, m] of this.byClient) {
      if (client !== null && c !== client) continue;
      for (const [hash, e] of m) if (instance === null || e.instance === instance) m.delete(hash);
      if (m.size === 0) this.byClient.delete(c);
    }
  }
}

/** The tile hashes of the frames screenshot_window and wait_for_visual_change handed out. */
export const frameMemo = new FrameMemo();

/** The short form of a frame hash handed to clients (128 bits of the SHA-256). */
export function shortHash(frameHash: string): string {
  return frameHash.slice(0, 32);
}
