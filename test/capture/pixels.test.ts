import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { RawImage } from "../../src/shared/platform.js";
import {
  drawGrid,
  GRID_RGB,
  gridPositions,
  hash,
  LABEL_BG_RGB,
  LABEL_FG_RGB,
  labelSize,
  paintMasks,
  toRgb,
} from "../../src/workers/capture/pixels.js";

function solid(width: number, height: number, channels: 3 | 4, rgb: [number, number, number]): RawImage {
  const data = new Uint8Array(width * height * channels);
  for (let i = 0; i < width * height; i++) {
    data[i * channels] = rgb[0];
    data[i * channels + 1] = rgb[1];
    data[i * channels + 2] = rgb[2];
    if (channels === 4) data[i * channels + 3] = 255;
  }
  return { width, height, channels, data };
}

function px(img: RawImage, x: number, y: number): [number, number, number] {
  const i = (y * img.width + x) * img.channels;
  return [img.data[i], img.data[i + 1], img.data[i + 2]];
}

const FILL: [number, number, number] = [0x33, 0x66, 0xcc];

describe("paintMasks", () => {
  it.each([3, 4] as const)(
    "paints window-relative masks black, clipped to the region (%i channels)",
    (ch) => {
      // The image shows window rect [10,20,60,60] (50×40).
      const img = solid(50, 40, ch, FILL);
      const painted = paintMasks(
        img,
        [
          [0, 0, 15, 25], // overlaps top-left corner: image [0,0,5,5]
          [30, 30, 40, 35], // inside: image [20,10,30,15]
          [100, 100, 120, 120], // outside the region
        ],
        [10, 20, 60, 60],
      );
      expect(painted).toBe(25 + 50);
      expect(px(img, 0, 0)).toEqual([0, 0, 0]);
      expect(px(img, 4, 4)).toEqual([0, 0, 0]);
      expect(px(img, 5, 4)).toEqual(FILL);
      expect(px(img, 4, 5)).toEqual(FILL);
      expect(px(img, 20, 10)).toEqual([0, 0, 0]);
      expect(px(img, 29, 14)).toEqual([0, 0, 0]);
      expect(px(img, 30, 14)).toEqual(FILL);
      expect(px(img, 29, 15)).toEqual(FILL);
      expect(px(img, 49, 39)).toEqual(FILL);
      if (ch === 4) expect(img.data[3]).toBe(255);
      let black = 0;
      for (let y = 0; y < 40; y++) for (let x = 0; x < 50; x++) if (px(img, x, y)[2] === 0) black++;
      expect(black).toBe(75);
    },
  );

  it("leaves the image alone when no mask intersects", () => {
    const img = solid(8, 8, 3, FILL);
    const copy = img.data.slice();
    expect(paintMasks(img, [[20, 20, 30, 30]], [0, 0, 8, 8])).toBe(0);
    expect(img.data).toEqual(copy);
  });
});

describe("drawGrid", () => {
  it("computes line positions from the window-relative origin", () => {
    expect(gridPositions(120, 0, 50)).toEqual([0, 50, 100]);
    expect(gridPositions(120, 12, 50)).toEqual([38, 88]);
    expect(gridPositions(10, 50, 50)).toEqual([0]);
  });

  it.each([3, 4] as const)("draws 1-px lines every N pixels and labels them (%i channels)", (ch) => {
    const img = solid(200, 150, ch, FILL);
    const labels = drawGrid(img, 50, { x: 0, y: 0 });
    // Lines: x = 0, 50, 100, 150; y = 0, 50, 100.
    for (const x of [50, 100, 150]) expect(px(img, x, 120)).toEqual([...GRID_RGB]);
    for (const y of [50, 100]) expect(px(img, 120, y)).toEqual([...GRID_RGB]);
    expect(px(img, 51, 120)).toEqual(FILL);
    expect(px(img, 49, 120)).toEqual(FILL);
    expect(px(img, 120, 51)).toEqual(FILL);
    expect(px(img, 75, 75)).toEqual(FILL);
    // Labels carry the coordinate of their line.
    expect(labels.filter((l) => l.axis === "x").map((l) => l.value)).toEqual([0, 50, 100, 150]);
    expect(labels.filter((l) => l.axis === "y").map((l) => l.value)).toEqual([50, 100]);
    // The "50" label sits right of x=50 at the top: a box with white digit pixels inside.
    const l50 = labels.find((l) => l.axis === "x" && l.value === 50);
    expect(l50?.box).toEqual([52, 0, 52 + labelSize("50").width, labelSize("50").height]);
    const box = l50?.box ?? [0, 0, 0, 0];
    let fg = 0;
    let bg = 0;
    for (let y = box[1]; y < box[3]; y++) {
      for (let x = box[0]; x < box[2]; x++) {
        const p = px(img, x, y);
        if (p.join() === LABEL_FG_RGB.join()) fg++;
        else if (p.join() === LABEL_BG_RGB.join()) bg++;
      }
    }
    // "5" has 11 set bits and "0" has 12, each a 2×2 block.
    expect(fg).toBe((11 + 12) * 4);
    expect(fg + bg).toBe((box[2] - box[0]) * (box[3] - box[1]));
  });

  it("labels with window-relative values when the region is offset", () => {
    const img = solid(100, 100, 3, FILL);
    const labels = drawGrid(img, 50, { x: 12, y: 40 });
    expect(labels.filter((l) => l.axis === "x").map((l) => l.value)).toEqual([50, 100]);
    expect(px(img, 38, 90)).toEqual([...GRID_RGB]);
    expect(px(img, 37, 90)).toEqual(FILL);
    expect(px(img, 90, 10)).toEqual([...GRID_RGB]); // y = 50 → image row 10
  });

  it("skips labels that would overlap, never lines", () => {
    const img = solid(100, 100, 3, FILL);
    const labels = drawGrid(img, 5);
    const xs = labels.filter((l) => l.axis === "x");
    for (let i = 1; i < xs.length; i++) expect(xs[i].box[0]).toBeGreaterThan(xs[i - 1].box[2]);
    for (let x = 0; x < 100; x += 5) expect(px(img, x, 99)).toEqual([...GRID_RGB]);
  });

  it("is drawn after masks: grid lines cross a masked area, the rest of the mask stays black", () => {
    const img = solid(100, 100, 4, FILL);
    paintMasks(img, [[0, 0, 100, 100]], [0, 0, 100, 100]);
    drawGrid(img, 50);
    expect(px(img, 50, 80)).toEqual([...GRID_RGB]);
    expect(px(img, 80, 80)).toEqual([0, 0, 0]);
    // No fill colour survives anywhere.
    let fill = 0;
    for (let y = 0; y < 100; y++)
      for (let x = 0; x < 100; x++) if (px(img, x, y).join() === FILL.join()) fill++;
    expect(fill).toBe(0);
  });
});

describe("toRgb and hash", () => {
  it("hashes the RGB bytes whatever the channel count", () => {
    const rgba = solid(7, 5, 4, FILL);
    rgba.data[3] = 17; // alpha never counts
    const rgb = toRgb(rgba);
    expect(rgb.channels).toBe(3);
    expect(rgb.data.length).toBe(7 * 5 * 3);
    const expected = createHash("sha256").update(rgb.data).digest("hex");
    expect(hash(rgba)).toBe(expected);
    expect(hash(rgb)).toBe(expected);
    expect(toRgb(rgb)).toBe(rgb);
  });

  it("changes when a masked pixel changes and not when only a masked-out one does", () => {
    const a = solid(10, 10, 3, FILL);
    const b = solid(10, 10, 3, FILL);
    b.data[0] = 1; // pixel (0,0) differs
    expect(hash(a)).not.toBe(hash(b));
    paintMasks(a, [[0, 0, 1, 1]], [0, 0, 10, 10]);
    paintMasks(b, [[0, 0, 1, 1]], [0, 0, 10, 10]);
    expect(hash(a)).toBe(hash(b));
  });
});
