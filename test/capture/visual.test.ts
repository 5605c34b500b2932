import { describe, expect, it } from "vitest";
import { changedRects, FrameMemo, MAX_CHANGED_RECTS } from "../../src/supervisor/screenshot/visual.js";
import { frameHash, TILE_SIZE, tileHashes } from "../../src/workers/capture/pixels.js";

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
    expect(frameHash(a, null)).not.toBe(frameHash(b, null));
    // The grid is part of what an image shows.
    expect(frameHash(a, null)).not.toBe(frameHash(a, 50));
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
    m.remember("c1", "h1", [1]);
    m.remember("c1", "h2", [2]);
    m.remember("c1", "h3", [3]);
    expect(m.tiles("c1", "h1")).toBeNull();
    expect(m.tiles("c1", "h3")).toEqual([3]);
    m.remember("c2", "x", [4]);
    m.remember("c3", "y", [5]);
    expect(m.tiles("c1", "h3")).toBeNull();
    expect(m.tiles("c3", "y")).toEqual([5]);
  });
});
