import { describe, expect, it } from "vitest";
import { LaterTiles } from "../../src/workers/capture/laterTiles.js";
import { tileHashes } from "../../src/workers/capture/pixels.js";
import { encodePng, pngFrameRows } from "../../src/workers/capture/png.js";

function image(width: number, height: number, seed: number) {
  const data = new Uint8Array(width * height * 3).map((_, i) => ((i >> 4) * seed) & 0xff);
  return { width, height, channels: 3 as const, data };
}

describe("tiles of a kept PNG, hashed when asked", () => {
  it("gives exactly the tiles of the frame the PNG was encoded from", () => {
    const later = new LaterTiles();
    const img = image(100, 70, 7);
    const png = encodePng(img, 2);
    later.later("a", png);
    // The kept copy is the worker's own: the answered PNG may be zeroed or transferred.
    png.fill(0);
    expect(Array.from(later.get("a") ?? [])).toEqual(Array.from(tileHashes(img)));
    // Asked again: the same tiles (kept in place of the PNG).
    expect(Array.from(later.get("a") ?? [])).toEqual(Array.from(tileHashes(img)));
    expect(later.get("b")).toBeNull();
  });

  it("answers null for a PNG that is not one of ours, and reads back our rows only", () => {
    const later = new LaterTiles();
    const png = encodePng(image(40, 30, 3), 2);
    const bad = png.slice();
    bad[bad.length - 20] ^= 0xff; // inside the zlib stream
    later.later("bad", bad);
    expect(later.get("bad")).toBeNull();
    expect(later.size).toBe(0);
    expect(pngFrameRows(png.subarray(0, 30))).toBeNull();
    const rows = pngFrameRows(png);
    expect(rows?.width).toBe(40);
    expect(rows?.rows.byteLength).toBe((40 * 3 + 1) * 30);
  });

  it("keeps PNGs within its byte bound, oldest out", () => {
    const one = encodePng(image(64, 64, 5), 0);
    const later = new LaterTiles(one.byteLength * 2 + 10);
    later.later("1", one);
    later.later("2", one);
    later.later("3", one);
    expect(later.size).toBe(2);
    expect(later.get("1")).toBeNull();
    expect(later.get("3")).not.toBeNull();
  });
});
