import { crc32, deflateSync, inflateSync } from "node:zlib";
import { type RawImage, rowStride } from "../../shared/platform.js";
import type { PngFrame } from "./frames.js";

/**
 * PNG in memory (never a file): 8-bit RGB, filter None on every row, one zlib stream in one IDAT
 * chunk. node:zlib does the deflate, on the calling thread (the capture worker's: a hop to the
 * libuv pool and back per 16 KiB of output cost more than it saved, and on two cores an encode
 * overlapped with the after-read check only slowed both); the container around it is three chunks. Why not sharp, which this used
 * before: for a raw RGB frame its libvips pipeline costs ~1.6× a direct deflate of the same
 * rows at the same level, and filter None at level 1 is no larger on UI frames than sharp's
 * level 2 (docs/reference.md, "Screenshots: PNG encoding").
 *
 * RGBA input is written as RGB: screen alpha carries no information. The result owns its whole
 * ArrayBuffer, so the caller can transfer it to another thread without moving unrelated bytes.
 */
export function encodePng(img: RawImage, compressionLevel: number): Uint8Array<ArrayBuffer> {
  return encodeRows(pngRows(img), img.width, img.height, compressionLevel);
}

/**
 * A PngFrame's PNG, deflated from the frame's own rows (no copy). Its filter bytes are set
 * here, so nothing that painted the pixels can have left another filter type behind.
 */
export function encodePngFrame(frame: PngFrame, compressionLevel: number): Uint8Array<ArrayBuffer> {
  const stride = frame.target.stride;
  for (let y = 0, o = 0; y < frame.height; y++, o += stride) frame.rows[o] = 0;
  return encodeRows(frame.rows, frame.width, frame.height, compressionLevel);
}

function encodeRows(
  rows: Uint8Array,
  width: number,
  height: number,
  compressionLevel: number,
): Uint8Array<ArrayBuffer> {
  // 64 KiB output chunks: an 800×600 UI frame's stream fits one. A chunk sized to the frame
  // (a quarter of its rows) was 360 KB of fresh external memory per shot, which made V8 collect
  // more often; measured side by side, the fixed chunk was 7–8% faster per shot end to end.
  const idat = deflateSync(rows, { level: compressionLevel, chunkSize: 64 * 1024 });
  const out = new Uint8Array(new ArrayBuffer(SIGNATURE.length + 25 + 12 + idat.byteLength + 12));
  out.set(SIGNATURE, 0);
  let at = SIGNATURE.length;
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: truecolour (RGB)
  // compression 0 (deflate), filter method 0, interlace 0 (none)
  at = chunk(out, at, "IHDR", ihdr);
  at = chunk(out, at, "IDAT", idat);
  chunk(out, at, "IEND", EMPTY);
  return out;
}

const SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);
const EMPTY = new Uint8Array(0);

/**
 * The image's scanlines as PNG filters them: each row led by its filter type byte (0, None) and
 * then its RGB bytes. None is the cheapest filter to apply and, on UI frames (flat areas, text),
 * deflate at a low level finds the same runs without it.
 */
export function pngRows(img: RawImage): Buffer {
  const { width, height, channels, data } = img;
  const packed = width * 3;
  const srcStride = rowStride(img);
  const rows = Buffer.allocUnsafe((packed + 1) * height);
  const src = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  for (let y = 0, o = 0; y < height; y++, o += packed + 1) {
    rows[o] = 0;
    if (channels === 3) {
      src.copy(rows, o + 1, y * srcStride, y * srcStride + packed);
      continue;
    }
    for (let x = 0, s = y * srcStride, d = o + 1; x < width; x++, s += 4, d += 3) {
      rows[d] = src[s] ?? 0;
      rows[d + 1] = src[s + 1] ?? 0;
      rows[d + 2] = src[s + 2] ?? 0;
    }
  }
  return rows;
}

/** Writes one chunk (length, type, data, CRC of type and data) at `at`; returns the end. */
function chunk(out: Uint8Array, at: number, type: string, data: Uint8Array): number {
  const view = new DataView(out.buffer, out.byteOffset);
  view.setUint32(at, data.byteLength);
  for (let i = 0; i < 4; i++) out[at + 4 + i] = type.charCodeAt(i);
  out.set(data, at + 8);
  const crc = crc32(data, crc32(out.subarray(at + 4, at + 8)));
  view.setUint32(at + 8 + data.byteLength, crc >>> 0);
  return at + 12 + data.byteLength;
}

/**
 * One tiny encode when the capture worker has started, so the first screenshot after consent
 * does not pay for compiling the row code and zlib's first allocations. A failure here
 * is not an error: the first real encode reports it.
 */
export function warmEncoder(): void {
  try {
    encodePng({ width: 16, height: 16, channels: 3, data: new Uint8Array(16 * 16 * 3) }, 1);
  } catch {
    // Reported by the first real encode.
  }
}

/**
 * The rows of a PNG this module wrote (signature, IHDR of 8-bit RGB, one IDAT, IEND), inflated:
 * each row its filter byte (None) and its RGB bytes, as the frame was deflated from. Null for
 * anything else (another layout, another filter, a stream that does not inflate to the size).
 */
export function pngFrameRows(png: Uint8Array): { width: number; height: number; rows: Buffer } | null {
  const at = SIGNATURE.length;
  if (png.byteLength < at + 25 + 12 + 12) return null;
  for (let i = 0; i < at; i++) if (png[i] !== SIGNATURE[i]) return null;
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  const type = (o: number) => String.fromCharCode(...png.subarray(o, o + 4));
  if (view.getUint32(at) !== 13 || type(at + 4) !== "IHDR") return null;
  const width = view.getUint32(at + 8);
  const height = view.getUint32(at + 12);
  if (png[at + 16] !== 8 || png[at + 17] !== 2 || png[at + 20] !== 0) return null;
  const idat = at + 25;
  const len = view.getUint32(idat);
  if (type(idat + 4) !== "IDAT" || idat + 12 + len > png.byteLength) return null;
  const stride = width * 3 + 1;
  let rows: Buffer;
  try {
    rows = inflateSync(png.subarray(idat + 8, idat + 8 + len), { maxOutputLength: stride * height });
  } catch {
    return null;
  }
  if (rows.byteLength !== stride * height) return null;
  for (let y = 0; y < height; y++) if (rows[y * stride] !== 0) return null;
  return { width, height, rows };
}
