import { describe, expect, it } from "vitest";
import { changedRects, FrameMemo, MAX_CHANGED_RECTS } from "../../src/supervisor/screenshot/visual.js";
import { frameHashOfPng } from "../../src/workers/capture/frameHash.js";
import { TILE_SIZE, tileHashes } from "../../src/workers/capture/pixels.js";
import { encodePng } from "../../src/workers/capture/png.js";

function frame(width: number, height: number, paint?: (x: number, y: number) => number) {
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      data.fill(paint?.(x, y) ?? 0x40, (y * width + x) * 3, (y * width + x) * 3 + 3);
  return { width, height, channels: 3 as const, data };
}

describe("tile hashes and changed rectangles", () => {
  it("locates one changed pixel to its tile, in window coordinates", () => {
    const a = frame(100, 70);
    const b = frame(100, 70, (x, y) => (x === 40 && y === 65 ? 0xff : 0x40));
    const ta = Array.from(tileHashes(a));
    const tb = Array.from(tileHashes(b));
    expect(ta).toHaveLength(Math.ceil(100 / TILE_SIZE) * Math.ceil(70 / TILE_SIZE));
    // Tile (1, 2): x 32–64, y 64–70 (the last row of tiles is short); origin (10, 50).
    expect(changedRects(ta, tb, 100, 70, [10, 50])).toEqual([[42, 114, 74, 120]]);
    expect(changedRects(ta, ta, 100, 70, [10, 50])).toEqual([]);
    const fh = (img: typeof a, grid: number | null) => frameHashOfPng(encodePng(img, 2), img, grid, 2);
    expect(fh(a, null)).not.toBe(fh(b, null));
    expect(fh(a, null)).toBe(fh(frame(100, 70), null));
    // The grid is part of what an image shows.
    expect(fh(a, null)).not.toBe(fh(a, 50));
  });

  it("a change to any one byte changes exactly its tile's hash, in every lane and in a short last tile", () => {
    // 70 px wide: the last tile column is 6 px (18 bytes a row: words of both lanes and a tail).
    // Rows laid out as a PNG frame's (stride 3 × width + 1), so the word reads are unaligned.
    const width = 70;
    const height = 40;
    const stride = width * 3 + 1;
    const base = new Uint8Array(stride * height).map((_, i) => (i * 37) & 0xff);
    const img = (data: Uint8Array) => ({ width, height, channels: 3 as const, data, stride });
    const before = Array.from(tileHashes(img(base)));
    const cols = Math.ceil(width / TILE_SIZE);
    for (const [x, y, c] of [
      [0, 0, 0],
      [1, 0, 1],
      [2, 3, 2],
      [33, 5, 0],
      [64, 31, 2],
      [69, 32, 1],
      [66, 39, 2],
    ] as const) {
      const changed = base.slice();
      const at = y * stride + x * 3 + c;
      changed[at] = (changed[at] ?? 0) ^ 0x01;
      const after = Array.from(tileHashes(img(changed)));
      const tile = Math.floor(y / TILE_SIZE) * cols + Math.floor(x / TILE_SIZE);
      const differs = after.flatMap((h, i) => (h !== before[i] ? [i] : []));
      expect(differs, `byte ${c} of pixel ${x},${y}`).toEqual([tile]);
    }
  });

  it("merges a block of changed tiles into one rectangle; unknown frames are the whole region", () => {
    const a = frame(128, 128);
    const b = frame(128, 128, (x, y) => (x >= 32 && x < 96 && y >= 32 && y < 96 ? 0 : 0x40));
    expect(changedRects(Array.from(tileHashes(a)), Array.from(tileHashes(b)), 128, 128, [0, 0])).toEqual([
      [32, 32, 96, 96],
    ]);
    expect(changedRects(null, Array.from(tileHashes(b)), 128, 128, [5, 6])).toEqual([[5, 6, 133, 134]]);
  });

  it("gives the bounding box past the cap of rectangles", () => {
    const a = frame(32 * 10, 32 * 10);
    // A checkerboard of changed tiles: 50 separate rectangles.
    const b = frame(32 * 10, 32 * 10, (x, y) =>
      (Math.floor(x / 32) + Math.floor(y / 32)) % 2 === 0 ? 0 : 0x40,
    );
    const rects = changedRects(Array.from(tileHashes(a)), Array.from(tileHashes(b)), 320, 320, [0, 0]);
    expect(MAX_CHANGED_RECTS).toBeLessThan(50);
    expect(rects).toEqual([[0, 0, 320, 320]]);
  });

  it("remembers a few frames per client, oldest out", () => {
    const m = new FrameMemo(2, 2);
    m.remember("c1", "h1", [1], "i");
    m.remember("c1", "h2", [2], "i");
    m.remember("c1", "h3", [3], "i");
    expect(m.tiles("c1", "h1")).toBeNull();
    expect(m.tiles("c1", "h3")).toEqual([3]);
    m.remember("c2", "x", [4], "i");
    m.remember("c3", "y", [5], "i");
    expect(m.tiles("c1", "h3")).toBeNull();
    expect(m.tiles("c3", "y")).toEqual([5]);
  });
});
