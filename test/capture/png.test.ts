import { crc32, inflateSync } from "node:zlib";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import type { RawImage } from "../../src/shared/platform.js";
import { encodePng, pngRows } from "../../src/workers/capture/png.js";
import { rng } from "../support/rng.js";

/** Random noise (nothing for deflate to find) or UI-like flat blocks, RGB or RGBA. */
function image(width: number, height: number, channels: 3 | 4, kind: "noise" | "ui", seed: number): RawImage {
  const next = rng(seed);
  const data = new Uint8Array(width * height * channels);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * channels;
      const block = ((x >> 4) * 7 + (y >> 3) * 13) & 0xff;
      for (let c = 0; c < 3; c++)
        data[i + c] = kind === "noise" ? Math.floor(next() * 256) : (block * (c + 1)) & 0xff;
      if (channels === 4) data[i + 3] = Math.floor(next() * 256);
    }
  }
  return { width, height, channels, data };
}

/** The file's chunks, each CRC checked against node's own zlib.crc32. */
function chunks(png: Uint8Array): Array<{ type: string; data: Buffer }> {
  const b = Buffer.from(png);
  expect([...b.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const out: Array<{ type: string; data: Buffer }> = [];
  for (let at = 8; at < b.length; ) {
    const len = b.readUInt32BE(at);
    const type = b.toString("latin1", at + 4, at + 8);
    const data = b.subarray(at + 8, at + 8 + len);
    expect(b.readUInt32BE(at + 8 + len)).toBe(crc32(b.subarray(at + 4, at + 8 + len)));
    out.push({ type, data });
    at += 12 + len;
  }
  return out;
}

describe("PNG encoder (node:zlib, filter None)", () => {
  const cases: Array<[number, number, 3 | 4, "noise" | "ui"]> = [
    [800, 600, 3, "ui"],
    [333, 127, 3, "noise"],
    [1, 1, 3, "noise"],
    [17, 9, 4, "ui"],
    [64, 3, 4, "noise"],
  ];

  for (const [w, h, channels, kind] of cases) {
    it(`${w}×${h}, ${channels} channels, ${kind}: a decoder reads back exactly the RGB pixels`, async () => {
      const img = image(w, h, channels, kind, w * 31 + h);
      for (const level of [1, 6]) {
        const png = encodePng(img, level);
        // The result owns its whole buffer (transferable without unrelated bytes).
        expect(png.byteOffset).toBe(0);
        expect(png.buffer.byteLength).toBe(png.byteLength);
        const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
        expect([info.width, info.height, info.channels]).toEqual([w, h, 3]);
        for (let i = 0; i < w * h; i++) {
          for (let c = 0; c < 3; c++) {
            if (data[i * 3 + c] !== img.data[i * channels + c])
              throw new Error(`pixel ${i} channel ${c} differs`);
          }
        }
      }
    });
  }

  it("writes IHDR (8-bit RGB, no interlace), one IDAT holding the filtered rows, IEND", () => {
    const img = image(50, 20, 3, "ui", 7);
    const list = chunks(encodePng(img, 1));
    expect(list.map((c) => c.type)).toEqual(["IHDR", "IDAT", "IEND"]);
    const ihdr = list[0]?.data ?? Buffer.alloc(0);
    expect([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), ...ihdr.subarray(8)]).toEqual([
      50, 20, 8, 2, 0, 0, 0,
    ]);
    expect(inflateSync(list[1]?.data ?? Buffer.alloc(0)).equals(pngRows(img))).toBe(true);
    expect(list[2]?.data.length).toBe(0);
  });

  it("leads every row with filter byte 0 and drops alpha", () => {
    const img = image(3, 2, 4, "noise", 3);
    const rows = pngRows(img);
    expect(rows.length).toBe(2 * (1 + 3 * 3));
    expect([rows[0], rows[10]]).toEqual([0, 0]);
    expect([...rows.subarray(11, 14)]).toEqual([...img.data.subarray(12, 15)]);
  });

  it("a higher level never grows a UI frame's file", () => {
    const img = image(400, 300, 3, "ui", 11);
    expect(encodePng(img, 6).byteLength).toBeLessThanOrEqual(encodePng(img, 1).byteLength);
  });
});
