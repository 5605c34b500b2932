/**
 * 32-bit BGRX / BGRA pixels (little-endian words 0xXXRRGGBB: what XShmGetImage on a 24-bit
 * TrueColor visual and GetDIBits at 32 bpp return) packed to RGB, 3 bytes per pixel: the layout
 * the PNG encoder takes as it is (no alpha band to strip) and the hash reads in one piece.
 * Four pixels become three 32-bit words, so the loop writes words, not bytes.
 *
 * `out` may be the very memory of `src` (in place, from byte 0 of it): each group of four
 * pixels is read before its three words are written, and those words never reach past the
 * group's own input (an `out` that does not start on a word goes through bgrxToRgbRows).
 */
export function bgrxToRgb(src: Uint32Array, count: number, out: Uint8Array): void {
  if (out.byteLength < count * 3 || src.length < count) throw new RangeError("short pixel buffer");
  const groups = count >>> 2;
  if (out.byteOffset % 4 === 0) {
    packWords(src, 0, groups, new Uint32Array(out.buffer, out.byteOffset, groups * 3), 0);
    bgrxToRgbBytes(src, groups * 4, count, out);
  } else bgrxToRgbRows(src, count, count, 1, out, count * 3, 0);
}

/**
 * A block of `rows` rows of `count` pixels, `srcStride` words apart in `src`, into `out` from
 * byte `at`, `outStride` bytes apart: the screen read's rows into a frame's (the PNG rows of
 * the capture worker, each led by its filter byte, so rarely on a word). Each row is packed into
 * one word-aligned scratch row and copied from there, which costs far less than the byte loop
 * and allocates nothing per row.
 */
export function bgrxToRgbRows(
  src: Uint32Array,
  srcStride: number,
  count: number,
  rows: number,
  out: Uint8Array,
  outStride: number,
  at: number,
): void {
  if (rows <= 0 || count <= 0) return;
  if (src.length < (rows - 1) * srcStride + count || out.byteLength < at + (rows - 1) * outStride + count * 3)
    throw new RangeError("short pixel buffer");
  const groups = count >>> 2;
  const bytes = count * 3;
  const words = new Uint32Array(Math.ceil(bytes / 4));
  const row = new Uint8Array(words.buffer, 0, bytes);
  for (let y = 0; y < rows; y++) {
    const s = y * srcStride;
    packWords(src, s, groups, words, 0);
    for (let i = groups * 4, j = groups * 12; i < count; i++, j += 3) {
      const p = src[s + i] ?? 0;
      row[j] = (p >>> 16) & 0xff;
      row[j + 1] = (p >>> 8) & 0xff;
      row[j + 2] = p & 0xff;
    }
    out.set(row, at + y * outStride);
  }
}

/** `groups` groups of four pixels from src[from] as three RGB words each, into d from d[to]. */
function packWords(src: Uint32Array, from: number, groups: number, d: Uint32Array, to: number): void {
  for (let g = 0, i = from, j = to; g < groups; g++, i += 4, j += 3) {
    const p0 = src[i] ?? 0;
    const p1 = src[i + 1] ?? 0;
    const p2 = src[i + 2] ?? 0;
    const p3 = src[i + 3] ?? 0;
    d[j] = ((p0 >>> 16) & 0xff) | (p0 & 0xff00) | ((p0 & 0xff) << 16) | (((p1 >>> 16) & 0xff) << 24);
    d[j + 1] = ((p1 >>> 8) & 0xff) | ((p1 & 0xff) << 8) | (p2 & 0xff0000) | (((p2 >>> 8) & 0xff) << 24);
    d[j + 2] = (p2 & 0xff) | ((p3 >>> 8) & 0xff00) | ((p3 & 0xff00) << 8) | ((p3 & 0xff) << 24);
  }
}

/** Pixels [from, to) one byte at a time (the tail of a frame, or an unaligned `out`). */
function bgrxToRgbBytes(src: Uint32Array, from: number, to: number, out: Uint8Array): void {
  for (let i = from, j = from * 3; i < to; i++, j += 3) {
    const p = src[i] ?? 0;
    out[j] = (p >>> 16) & 0xff;
    out[j + 1] = (p >>> 8) & 0xff;
    out[j + 2] = p & 0xff;
  }
}
