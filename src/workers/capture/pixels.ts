import { createHash } from "node:crypto";
import { intersect, type Rect } from "../../shared/geometry.js";
import { type RawImage, rowStride } from "../../shared/platform.js";

/**
 * Pure pixel work of the capture worker. Every function works in place on the one
 * buffer the platform returned (RGB or RGBA, row-major, rows `rowStride` bytes apart) so a
 * frame is never copied between capture and encoding, and none writes the bytes between
 * rows (the encoder's filter bytes). Nothing here touches the platform.
 */

/** Colour of grid lines (magenta: rare in real UIs, visible on light and dark). */
export const GRID_RGB: readonly [number, number, number] = [255, 0, 255];
/** Label digits are drawn in this colour on a LABEL_BG_RGB box. */
export const LABEL_FG_RGB: readonly [number, number, number] = [255, 255, 255];
export const LABEL_BG_RGB: readonly [number, number, number] = [0, 0, 0];

/** 3×5 bitmap digits, one row per entry, bit 2 = leftmost column. */
const DIGITS: ReadonlyArray<readonly number[]> = [
  [0b111, 0b101, 0b101, 0b101, 0b111], // 0
  [0b010, 0b110, 0b010, 0b010, 0b111], // 1
  [0b111, 0b001, 0b111, 0b100, 0b111], // 2
  [0b111, 0b001, 0b111, 0b001, 0b111], // 3
  [0b101, 0b101, 0b111, 0b001, 0b001], // 4
  [0b111, 0b100, 0b111, 0b001, 0b111], // 5
  [0b111, 0b100, 0b111, 0b101, 0b111], // 6
  [0b111, 0b001, 0b001, 0b001, 0b001], // 7
  [0b111, 0b101, 0b111, 0b101, 0b111], // 8
  [0b111, 0b101, 0b111, 0b001, 0b111], // 9
];

/** Each font pixel is drawn as a SCALE×SCALE block. */
export const LABEL_SCALE = 2;
const GLYPH_W = 3 * LABEL_SCALE;
const GLYPH_H = 5 * LABEL_SCALE;
const GLYPH_GAP = LABEL_SCALE;
/** Padding of the label box around the digits. */
const LABEL_PAD = 1;
/** Distance between a grid line and its label box. */
const LABEL_GAP = 2;

export function labelSize(text: string): { width: number; height: number } {
  const n = text.length;
  return { width: n * GLYPH_W + (n - 1) * GLYPH_GAP + 2 * LABEL_PAD, height: GLYPH_H + 2 * LABEL_PAD };
}

/** Throws when the buffer is not what its header says (a platform bug, never trusted). */
export function assertImage(img: RawImage): void {
  if (!Number.isInteger(img.width) || !Number.isInteger(img.height) || img.width < 0 || img.height < 0) {
    throw new RangeError("bad image size");
  }
  if (img.channels !== 3 && img.channels !== 4) throw new RangeError("bad channel count");
  const stride = rowStride(img);
  const row = img.width * img.channels;
  if (!Number.isInteger(stride) || stride < row) throw new RangeError("bad row stride");
  if (img.height > 0 && img.data.byteLength < (img.height - 1) * stride + row)
    throw new RangeError("short pixel buffer");
}

function fillRect(img: RawImage, l: number, t: number, r: number, b: number, rgb: readonly number[]): void {
  const x0 = Math.max(0, l);
  const y0 = Math.max(0, t);
  const x1 = Math.min(img.width, r);
  const y1 = Math.min(img.height, b);
  if (x0 >= x1 || y0 >= y1) return;
  const ch = img.channels;
  const d = img.data;
  const stride = rowStride(img);
  const [cr, cg, cb] = rgb;
  for (let y = y0; y < y1; y++) {
    let i = y * stride + x0 * ch;
    const end = y * stride + x1 * ch;
    if (ch === 4) {
      for (; i < end; i += 4) {
        d[i] = cr;
        d[i + 1] = cg;
        d[i + 2] = cb;
        d[i + 3] = 255;
      }
    } else {
      for (; i < end; i += 3) {
        d[i] = cr;
        d[i + 1] = cg;
        d[i + 2] = cb;
      }
    }
  }
}

/**
 * Paints masks black. `masks` are window-relative, `region` is the window-relative
 * rect the image shows; each mask is clipped to the region. Returns the number of
 * image pixels that were painted (overlaps counted once per mask).
 */
export function paintMasks(img: RawImage, masks: readonly Rect[], region: Rect): number {
  let painted = 0;
  for (const m of masks) {
    const i = intersect(m, region);
    if (!i) continue;
    const l = i[0] - region[0];
    const t = i[1] - region[1];
    const r = Math.min(img.width, i[2] - region[0]);
    const b = Math.min(img.height, i[3] - region[1]);
    if (l >= r || t >= b) continue;
    fillRect(img, l, t, r, b, LABEL_BG_RGB);
    painted += (r - l) * (b - t);
  }
  return painted;
}

function drawText(img: RawImage, text: string, left: number, top: number): void {
  const { width, height } = labelSize(text);
  fillRect(img, left, top, left + width, top + height, LABEL_BG_RGB);
  let x = left + LABEL_PAD;
  const y = top + LABEL_PAD;
  for (const c of text) {
    const glyph = DIGITS[c.charCodeAt(0) - 48];
    if (glyph) {
      for (let row = 0; row < 5; row++) {
        const bits = glyph[row];
        for (let col = 0; col < 3; col++) {
          if (bits & (0b100 >> col)) {
            const px = x + col * LABEL_SCALE;
            const py = y + row * LABEL_SCALE;
            fillRect(img, px, py, px + LABEL_SCALE, py + LABEL_SCALE, LABEL_FG_RGB);
          }
        }
      }
    }
    x += GLYPH_W + GLYPH_GAP;
  }
}

export interface GridLabel {
  axis: "x" | "y";
  value: number;
  /** Image-relative box the label occupies. */
  box: Rect;
}

/** Image positions of grid lines along one axis: where origin + position is a multiple of spacing. */
export function gridPositions(length: number, origin: number, spacing: number): number[] {
  const out: number[] = [];
  const first = (((spacing - (origin % spacing)) % spacing) + spacing) % spacing;
  for (let p = first; p < length; p += spacing) out.push(p);
  return out;
}

/**
 * Grid overlay, drawn after the masks: 1-px lines wherever the window-relative
 * coordinate (origin + image offset) is a multiple of `spacing`, and each line labelled
 * with that window-relative coordinate (x labels along the top edge, right of their
 * line; y labels along the left edge, below their line; at the far edge they go on the
 * other side of the line). A label that would not fit whole, or would overlap the
 * previous one, is skipped; lines are always drawn.
 * Returns the labels drawn.
 */
export function drawGrid(
  img: RawImage,
  spacing: number,
  origin: { x: number; y: number } = { x: 0, y: 0 },
): GridLabel[] {
  if (!Number.isInteger(spacing) || spacing < 1) throw new RangeError("bad grid spacing");
  const xs = gridPositions(img.width, origin.x, spacing);
  const ys = gridPositions(img.height, origin.y, spacing);
  for (const x of xs) fillRect(img, x, 0, x + 1, img.height, GRID_RGB);
  for (const y of ys) fillRect(img, 0, y, img.width, y + 1, GRID_RGB);

  const labels: GridLabel[] = [];
  const band = labelSize("0").height;
  let lastRight = Number.NEGATIVE_INFINITY;
  for (const x of xs) {
    const text = String(origin.x + x);
    const { width, height } = labelSize(text);
    if (height > img.height) break;
    // Right of the line; at the right edge, left of it.
    let left = x + LABEL_GAP;
    if (left + width > img.width) left = x - LABEL_GAP - width + 1;
    if (left < 0 || left < lastRight + LABEL_GAP) continue;
    drawText(img, text, left, 0);
    labels.push({ axis: "x", value: origin.x + x, box: [left, 0, left + width, height] });
    lastRight = left + width;
  }
  // y labels start below the band of x labels so the corner never holds two labels.
  let lastBottom = band;
  for (const y of ys) {
    const text = String(origin.y + y);
    const { width, height } = labelSize(text);
    if (width > img.width) continue;
    let top = y + LABEL_GAP;
    if (top + height > img.height) top = y - LABEL_GAP - height + 1;
    if (top < lastBottom + LABEL_GAP) continue;
    drawText(img, text, 0, top);
    labels.push({ axis: "y", value: origin.y + y, box: [0, top, width, top + height] });
    lastBottom = top + height;
  }
  return labels;
}

/** The image as RGB: the same object when it already is, otherwise one packed copy. */
export function toRgb(img: RawImage): RawImage {
  if (img.channels === 3 && rowStride(img) === img.width * 3) return img;
  const out = new Uint8Array(img.width * img.height * 3);
  const stride = rowStride(img);
  const ch = img.channels;
  const d = img.data;
  for (let y = 0, j = 0; y < img.height; y++) {
    for (let x = 0, s = y * stride; x < img.width; x++, s += ch, j += 3) {
      out[j] = d[s];
      out[j + 1] = d[s + 1];
      out[j + 2] = d[s + 2];
    }
  }
  return { width: img.width, height: img.height, channels: 3, data: out };
}

/** The colour of one pixel (image coordinates) as "#rrggbb". */
export function sampleColor(img: RawImage, x: number, y: number): string {
  const i = y * rowStride(img) + x * img.channels;
  const hex = (v: number | undefined) => (v ?? 0).toString(16).padStart(2, "0");
  return `#${hex(img.data[i])}${hex(img.data[i + 1])}${hex(img.data[i + 2])}`;
}

/**
 * SHA-256 (hex) of the image's RGB bytes, row-major, alpha dropped, nothing between rows.
 * RGBA input is converted one row at a time, so the frame is never copied whole.
 */
export function hash(img: RawImage): string {
  const h = createHash("sha256");
  const stride = rowStride(img);
  const d = img.data;
  if (img.channels === 3) {
    const packed = img.width * 3;
    if (stride === packed) h.update(d.subarray(0, packed * img.height));
    else for (let y = 0; y < img.height; y++) h.update(d.subarray(y * stride, y * stride + packed));
    return h.digest("hex");
  }
  const row = new Uint8Array(img.width * 3);
  for (let y = 0; y < img.height; y++) {
    let s = y * stride;
    for (let j = 0; j < row.length; j += 3, s += 4) {
      row[j] = d[s];
      row[j + 1] = d[s + 1];
      row[j + 2] = d[s + 2];
    }
    h.update(row);
  }
  return h.digest("hex");
}

/** Side of the square tiles whose hashes locate a change between two frames. */
export const TILE_SIZE = 32;

/**
 * One 32-bit FNV-1a-style hash per TILE_SIZE × TILE_SIZE tile (the last row and column of tiles
 * may be smaller), row-major: two frames of the same region differ at least where their tiles'
 * hashes differ. Only for locating changes: whether a frame changed at all is its SHA-256
 * (frameHash.ts), so a tile that changed and kept its hash (a chance of about 2^-32) only makes a
 * changed rect smaller. The bytes go in four at a time, in two lanes of alternate words (each
 * step xors a word and multiplies by an odd prime), folded into the tile's hash at the end of
 * each of its rows: a step per byte was a chain of 1.4 million dependent multiplications per
 * 800×600 frame, about 1.5 ms, as long as the screen read; now about 0.55 ms.
 */
export function tileHashes(img: RawImage): Uint32Array {
  const cols = Math.ceil(img.width / TILE_SIZE);
  const rows = Math.ceil(img.height / TILE_SIZE);
  const out = new Uint32Array(cols * rows).fill(0x811c9dc5);
  const stride = rowStride(img);
  const ch = img.channels;
  const d = img.data;
  // Unaligned word reads (a PNG frame's rows are 3 × width + 1 bytes apart).
  const view = new DataView(d.buffer, d.byteOffset, d.byteLength);
  for (let y = 0; y < img.height; y++) {
    const base = ((y / TILE_SIZE) | 0) * cols;
    let s = y * stride;
    for (let tx = 0; tx < cols; tx++) {
      const end = s + Math.min(TILE_SIZE, img.width - tx * TILE_SIZE) * ch;
      // Two lanes (even and odd words), so the multiplications of a row do not wait on each
      // other; folded into the tile's hash at the end of its row.
      let h = out[base + tx] as number;
      let g = h ^ 0x9e3779b9;
      for (; s + 8 <= end; s += 8) {
        h = Math.imul(h ^ view.getInt32(s, true), 0x01000193);
        g = Math.imul(g ^ view.getInt32(s + 4, true), 0x01000193);
      }
      for (; s < end; s++) h = Math.imul(h ^ (d[s] as number), 0x01000193);
      out[base + tx] = Math.imul(h ^ ((g << 13) | (g >>> 19)), 0x01000193) >>> 0;
    }
  }
  return out;
}
