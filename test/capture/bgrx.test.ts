import { describe, expect, it } from "vitest";
import { bgrxToRgb } from "../../src/shared/bgrx.js";

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
});
