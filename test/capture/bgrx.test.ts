import { describe, expect, it } from "vitest";
import { bgrxToRgb, bgrxToRgbRows } from "../../src/shared/bgrx.js";

/** Random BGRX words (the X byte included: it must never reach the output). */
function frame(count: number, seed: number): Uint32Array {
  const w = new Uint32Array(count);
  let s = seed;
  for (let i = 0; i < count; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    w[i] = s;
  }
  return w;
}

function naive(src: Uint32Array, count: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push((src[i]! >>> 16) & 0xff, (src[i]! >>> 8) & 0xff, src[i]! & 0xff);
  return out;
}

describe("BGRX → packed RGB", () => {
  it("matches the byte-by-byte conversion for every tail length, aligned or not", () => {
    for (let count = 0; count <= 13; count++) {
      const src = frame(count, count + 1);
      const aligned = new Uint8Array(count * 3);
      bgrxToRgb(src, count, aligned);
      expect([...aligned]).toEqual(naive(src, count));
      const unaligned = new Uint8Array(count * 3 + 1).subarray(1);
      bgrxToRgb(src, count, unaligned);
      expect([...unaligned]).toEqual(naive(src, count));
    }
  });

  it("converts in place over its own input (the Win32 DIB)", () => {
    const count = 800 * 3 + 3;
    const src = frame(count, 7);
    const want = naive(src, count);
    bgrxToRgb(src, count, new Uint8Array(src.buffer));
    expect([...new Uint8Array(src.buffer, 0, count * 3)]).toEqual(want);
  });

  it("refuses a buffer too short for the pixels", () => {
    expect(() => bgrxToRgb(new Uint32Array(4), 4, new Uint8Array(11))).toThrow(RangeError);
    expect(() => bgrxToRgb(new Uint32Array(3), 4, new Uint8Array(12))).toThrow(RangeError);
  });

  it("converts a block of rows between strides, into rows led by a byte it leaves alone", () => {
    for (const count of [1, 3, 4, 5, 13, 800]) {
      const rows = 4;
      const srcStride = count + 3; // the screen read's rows may be wider than the rect
      const src = frame(srcStride * rows, count);
      const outStride = count * 3 + 1; // a PNG frame's rows: filter byte, then the pixels
      const out = new Uint8Array(outStride * rows + 5).fill(0xaa);
      const at = outStride + 1; // from the second row on, past its lead byte
      bgrxToRgbRows(src, srcStride, count, rows - 1, out, outStride, at);
      for (let y = 0; y < rows - 1; y++) {
        const row = src.subarray(y * srcStride, y * srcStride + count);
        const o = at + y * outStride;
        expect([...out.subarray(o, o + count * 3)]).toEqual(naive(row, count));
        expect(out[o - 1]).toBe(0xaa); // the lead byte
      }
      expect([...out.subarray(0, at)].every((v) => v === 0xaa)).toBe(true);
      expect([...out.subarray(at + (rows - 2) * outStride + count * 3)].every((v) => v === 0xaa)).toBe(true);
    }
  });

  it("refuses a block that does not fit its buffers", () => {
    expect(() => bgrxToRgbRows(new Uint32Array(7), 4, 4, 2, new Uint8Array(30), 13, 1)).toThrow(RangeError);
    expect(() => bgrxToRgbRows(new Uint32Array(8), 4, 4, 2, new Uint8Array(25), 13, 1)).toThrow(RangeError);
    bgrxToRgbRows(new Uint32Array(8), 4, 4, 2, new Uint8Array(26), 13, 1);
  });
});
