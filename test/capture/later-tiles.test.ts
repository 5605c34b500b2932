import { describe, expect, it } from "vitest";
import { LaterTiles } from "../../src/workers/capture/laterTiles.js";
import { tileHashes } from "../../src/workers/capture/pixels.js";
import { encodePng, pngFrameRows } from "../../src/workers/capture/png.js";

const O = { client: "a1", instance: "1".repeat(32) };

function image(width: number, height: number, seed: number) {
  const data = new Uint8Array(width * height * 3).map((_, i) => ((i >> 4) * seed) & 0xff);
  return { width, height, channels: 3 as const, data };
}

describe("tiles of a kept PNG, hashed when asked", () => {
  it("gives exactly the tiles of the frame the PNG was encoded from", () => {
    const later = new LaterTiles();
    const img = image(100, 70, 7);
    const png = encodePng(img, 2);
    later.later(O, "a", png);
    // The kept copy is the worker's own: the answered PNG may be zeroed or transferred.
    png.fill(0);
    expect(Array.from(later.get(O, "a") ?? [])).toEqual(Array.from(tileHashes(img)));
    // Asked again: the same tiles (kept in place of the PNG).
    expect(Array.from(later.get(O, "a") ?? [])).toEqual(Array.from(tileHashes(img)));
    expect(later.get(O, "b")).toBeNull();
  });

  it("answers null for a PNG that is not one of ours, and reads back our rows only", () => {
    const later = new LaterTiles();
    const png = encodePng(image(40, 30, 3), 2);
    const bad = png.slice();
    bad[bad.length - 20] ^= 0xff; // inside the zlib stream
    later.later(O, "bad", bad);
    expect(later.get(O, "bad")).toBeNull();
    expect(later.size).toBe(0);
    expect(pngFrameRows(png.subarray(0, 30))).toBeNull();
    const rows = pngFrameRows(png);
    expect(rows?.width).toBe(40);
    expect(rows?.rows.byteLength).toBe((40 * 3 + 1) * 30);
  });

  it("keeps PNGs within its byte bound, oldest out", () => {
    const one = encodePng(image(64, 64, 5), 0);
    const later = new LaterTiles(one.byteLength * 2 + 10);
    later.later(O, "1", one);
    later.later(O, "2", one);
    later.later(O, "3", one);
    expect(later.size).toBe(2);
    expect(later.get(O, "1")).toBeNull();
    expect(later.get(O, "3")).not.toBeNull();
  });

  it("finds a frame only for its owner; forget drops an identity's or an instance's, and zeroes the copies", () => {
    const later = new LaterTiles();
    const png = encodePng(image(40, 30, 3), 2);
    const other = { client: "b2", instance: O.instance };
    const elsewhere = { client: "a1", instance: "2".repeat(32) };
    later.later(O, "h", png);
    expect(later.get(other, "h")).toBeNull();
    expect(later.get(elsewhere, "h")).toBeNull();
    later.later(other, "h", png);
    later.later(elsewhere, "h", png);
    expect(later.size).toBe(3);
    expect(later.forget({ client: "a1", instance: O.instance })).toBe(1);
    expect(later.get(O, "h")).toBeNull();
    expect(later.get(other, "h")).not.toBeNull();
    expect(later.forget({ client: null, instance: O.instance })).toBe(1);
    expect(later.forget({ client: "a1", instance: null })).toBe(1);
    expect(later.size).toBe(0);
    later.later(O, "h", png);
    expect(later.forget({ client: null, instance: null })).toBe(1);
    expect(later.size).toBe(0);
  });

  it("a slot keeps nothing that a forget named while it was open", () => {
    const later = new LaterTiles();
    const png = encodePng(image(40, 30, 3), 2);
    const voided = later.slot("a1");
    const untouched = later.slot("b2");
    later.forget({ client: "a1", instance: null });
    voided.keep(O.instance, "h", png);
    untouched.keep(O.instance, "h", png);
    expect(later.get(O, "h")).toBeNull();
    expect(later.get({ client: "b2", instance: O.instance }, "h")).not.toBeNull();
    // A forget of another instance voids nothing of this one's.
    const narrow = later.slot("a1");
    later.forget({ client: "a1", instance: "2".repeat(32) });
    narrow.keep(O.instance, "h", png);
    expect(later.get(O, "h")).not.toBeNull();
    // Closed, a slot keeps nothing; with no identity named, nothing is kept at all.
    const closed = later.slot("a1");
    closed.close();
    closed.keep(O.instance, "g", png);
    later.slot(null).keep(O.instance, "f", png);
    expect(later.get(O, "g")).toBeNull();
    expect(later.get(O, "f")).toBeNull();
  });
});
