import { crc32, inflateSync } from "node:zlib";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import type { RawImage } from "../../src/shared/platform.js";
import { FramePool, PngFrame } from "../../src/workers/capture/frames.js";
import { drawGrid, hash, paintMasks, sampleColor } from "../../src/workers/capture/pixels.js";
import { encodePng, encodePngFrame, pngRows } from "../../src/workers/capture/png.js";
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

  it("pngRows reads rows a stride apart, nothing between them", () => {
    const img = image(5, 3, 3, "noise", 9);
    const stride = 5 * 3 + 4;
    const wide = new Uint8Array(stride * 3).fill(0x77);
    for (let y = 0; y < 3; y++) wide.set(img.data.subarray(y * 15, y * 15 + 15), y * stride);
    expect(pngRows({ ...img, data: wide, stride }).equals(pngRows(img))).toBe(true);
  });
});

/** A PngFrame holding `img`'s pixels (RGB), as the capture port would have written them. */
function frameOf(img: RawImage): PngFrame {
  const f = new PngFrame(img.width, img.height);
  const row = img.width * 3;
  for (let y = 0; y < img.height; y++)
    f.target.data.set(img.data.subarray(y * row, y * row + row), y * f.target.stride);
  return f;
}

const view = (f: PngFrame): RawImage => ({
  width: f.width,
  height: f.height,
  channels: 3,
  data: f.target.data,
  stride: f.target.stride,
});

describe("PNG frames: the encoder's rows as the capture's target", () => {
  it("lays rows out as PNG filters them: filter byte 0, then the RGB pixels", () => {
    const f = new PngFrame(4, 3);
    expect(f.rows.byteLength).toBe(3 * 13);
    expect(f.target.stride).toBe(13);
    expect(f.target.data.byteOffset).toBe(1);
    expect(f.target.data.buffer).toBe(f.rows.buffer);
    expect(f.holds(view(f))).toBe(true);
    expect(f.holds({ ...view(f), stride: undefined })).toBe(false);
    expect(f.holds({ width: 4, height: 3, channels: 3, data: new Uint8Array(36) })).toBe(false);
  });

  it("encodes the frame's own rows to the same file as the packed image", async () => {
    for (const [w, h] of [
      [800, 600],
      [333, 127],
      [1, 1],
    ] as const) {
      const img = image(w, h, 3, w > 500 ? "ui" : "noise", w + h);
      const f = frameOf(img);
      const png = encodePngFrame(f, 2);
      expect(Buffer.from(png).equals(Buffer.from(encodePng(img, 2)))).toBe(true);
      expect(png.byteOffset).toBe(0);
      expect(png.buffer.byteLength).toBe(png.byteLength);
      const { data } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
      expect(data.equals(Buffer.from(img.data))).toBe(true);
    }
  });

  it("sets every filter byte back to None, whatever was left there", () => {
    const img = image(9, 4, 3, "noise", 5);
    const f = frameOf(img);
    for (let y = 0; y < 4; y++) f.rows[y * f.target.stride] = 4;
    expect(Buffer.from(encodePngFrame(f, 1)).equals(Buffer.from(encodePng(img, 1)))).toBe(true);
  });

  it("masks, grid, hash and samples on a frame give what they give on the packed image", () => {
    const img = image(120, 80, 3, "ui", 21);
    const packed: RawImage = { ...img, data: img.data.slice() };
    const f = frameOf(img);
    const masks: Array<[number, number, number, number]> = [
      [10, 10, 40, 30],
      [100, 70, 200, 200],
    ];
    expect(paintMasks(view(f), masks, [0, 0, 120, 80])).toBe(paintMasks(packed, masks, [0, 0, 120, 80]));
    drawGrid(view(f), 25, { x: 3, y: 4 });
    drawGrid(packed, 25, { x: 3, y: 4 });
    expect(hash(view(f))).toBe(hash(packed));
    expect(sampleColor(view(f), 119, 79)).toBe(sampleColor(packed, 119, 79));
    expect(sampleColor(view(f), 15, 15)).toBe("#000000");
    // Nothing was painted between the rows.
    for (let y = 0; y < 80; y++) expect(f.rows[y * f.target.stride]).toBe(0);
    expect(Buffer.from(encodePngFrame(f, 2)).equals(Buffer.from(encodePng(packed, 2)))).toBe(true);
  });
});

describe("FramePool", () => {
  it("lends a kept frame of the same size again, and a fresh one while it is out", () => {
    const pool = new FramePool();
    const a = pool.acquire(800, 600);
    const b = pool.acquire(800, 600);
    expect(b === a).toBe(false); // (compared as booleans: printing frames is slow)
    pool.release(a);
    pool.release(a); // twice: still kept once
    expect(pool.idleFrames).toBe(1);
    expect(pool.acquire(800, 600) === a).toBe(true);
    expect(pool.acquire(640, 480) === b).toBe(false);
  });

  it("keeps at most its limits: frames by count and by bytes, none larger than the byte limit", () => {
    const pool = new FramePool({ maxIdle: 2, maxIdleBytes: 3 * (300 * 3 + 1) * 200 });
    const frames = [pool.acquire(300, 200), pool.acquire(300, 200), pool.acquire(300, 200)];
    for (const f of frames) pool.release(f);
    expect(pool.idleFrames).toBe(2);
    const big = pool.acquire(1000, 1000);
    pool.release(big);
    expect(pool.idleFrames).toBe(2);
    expect(pool.acquire(1000, 1000) === big).toBe(false);
    const tight = new FramePool({ maxIdle: 4, maxIdleBytes: 2 * (300 * 3 + 1) * 200 });
    for (const f of [tight.acquire(300, 200), tight.acquire(300, 200), tight.acquire(300, 200)])
      tight.release(f);
    expect(tight.idleFrames).toBe(2);
  });
});
