/**
 * Where a window is on the monitor, and whether it is what the monitor shows around a point,
 * from two pictures the compositor itself rendered: the window's own screen-cast stream (only
 * that window's surfaces, nothing drawn over it) and the monitor's stream (what the person sees).
 * A window whose pixels around the point appear on the monitor exactly, at exactly one place,
 * is visible there and uncovered; anything else (no match: covered, off screen, a different
 * picture; several matches: nothing distinctive enough to tell where) proves nothing and the
 * effect is refused. Pixels the window stream has with any transparency (client-side shadows,
 * rounded corners) are never compared: the monitor blends them with whatever is behind.
 */

export interface RgbaFrame {
  readonly width: number;
  readonly height: number;
  /** RGBA, packed rows. */
  readonly rgba: Uint8Array;
}

/** [left, top, right, bottom) of the pixels with full opacity, or null when there are none. */
export function opaqueBox(f: RgbaFrame): [number, number, number, number] | null {
  let l = f.width;
  let t = f.height;
  let r = -1;
  let b = -1;
  const d = f.rgba;
  for (let y = 0; y < f.height; y++) {
    const row = y * f.width * 4;
    let first = -1;
    let last = -1;
    for (let x = 0; x < f.width; x++) {
      if (d[row + x * 4 + 3] === 255) {
        first = x;
        break;
      }
    }
    if (first < 0) continue;
    for (let x = f.width - 1; x >= first; x--) {
      if (d[row + x * 4 + 3] === 255) {
        last = x;
        break;
      }
    }
    if (first < l) l = first;
    if (last > r) r = last;
    if (y < t) t = y;
    b = y;
  }
  return r < 0 ? null : [l, t, r + 1, b + 1];
}

export type MatchResult =
  | { kind: "found"; dx: number; dy: number; radius: number }
  | { kind: "not_shown" }
  | { kind: "ambiguous" }
  | { kind: "transparent" };

const RADII = [8, 16, 32, 64];
/** Offsets kept at most while a patch is still too plain to tell them apart. */
const MAX_CANDIDATES = 4096;

const words = new WeakMap<Uint8Array, Uint32Array>();
/** The frame's pixels as 32-bit words (one per pixel, any byte order: only compared). */
function wordsOf(f: RgbaFrame): Uint32Array {
  let w = words.get(f.rgba);
  if (!w) {
    w =
      f.rgba.byteOffset % 4 === 0
        ? new Uint32Array(f.rgba.buffer, f.rgba.byteOffset, f.width * f.height)
        : new Uint32Array(new Uint8Array(f.rgba).buffer, 0, f.width * f.height);
    words.set(f.rgba, w);
  }
  return w;
}

/** Colour bits of a word (alpha dropped), in the byte order of this machine. */
const COLOUR = new Uint8Array(new Uint32Array([0x01020304]).buffer)[0] === 0x04 ? 0x00ffffff : 0xffffff00;

function rgbAt(f: RgbaFrame, x: number, y: number): number {
  return (wordsOf(f)[y * f.width + x] & COLOUR) >>> 0;
}

/**
 * Finds the offset (dx, dy) such that monitor(x + dx, y + dy) = window(x, y) for every opaque
 * window pixel in a square around (wx, wy), the window-stream point; the square grows until
 * exactly one offset is left.
 */
export function matchAround(win: RgbaFrame, mon: RgbaFrame, wx: number, wy: number): MatchResult {
  if (wx < 0 || wy < 0 || wx >= win.width || wy >= win.height) return { kind: "transparent" };
  if (win.rgba[(wy * win.width + wx) * 4 + 3] !== 255) return { kind: "transparent" };
  let candidates: Array<[number, number]> | null = null;
  for (const radius of RADII) {
    // The patch: opaque window pixels in the square, the point first, then in an order that
    // puts pixels of other colours early, so most wrong offsets fail on the first few.
    const pts: Array<[number, number, number]> = [];
    const x0 = Math.max(0, wx - radius);
    const x1 = Math.min(win.width - 1, wx + radius);
    const y0 = Math.max(0, wy - radius);
    const y1 = Math.min(win.height - 1, wy + radius);
    const centre = rgbAt(win, wx, wy);
    pts.push([wx, wy, centre]);
    const others: Array<[number, number, number]> = [];
    const same: Array<[number, number, number]> = [];
    for (let y = y0; y <= y1; y++)
      for (let x = x0; x <= x1; x++) {
        if (x === wx && y === wy) continue;
        if (win.rgba[(y * win.width + x) * 4 + 3] !== 255) continue;
        const c = rgbAt(win, x, y);
        (c === centre ? same : others).push([x, y, c]);
      }
    // A square of one colour tells offsets apart no better than its centre: look wider.
    if (others.length === 0 && candidates === null) continue;
    // Spread the differently coloured pixels: every 7th first, then the rest.
    for (let k = 0; k < 7; k++) for (let i = k; i < others.length; i += 7) pts.push(others[i]);
    pts.push(...same);

    const mw = wordsOf(mon);
    const fits = (dx: number, dy: number): boolean => {
      for (const [x, y, c] of pts) {
        const mx = x + dx;
        const my = y + dy;
        if (mx < 0 || my < 0 || mx >= mon.width || my >= mon.height) return false;
        if ((mw[my * mon.width + mx] & COLOUR) >>> 0 !== c) return false;
      }
      return true;
    };

    const next: Array<[number, number]> = [];
    if (candidates === null) {
      // Every monitor pixel could be where the point is.
      for (let my = 0; my < mon.height && next.length <= MAX_CANDIDATES; my++) {
        const row = my * mon.width;
        for (let mx = 0; mx < mon.width; mx++) {
          if ((mw[row + mx] & COLOUR) >>> 0 !== centre) continue;
          const dx = mx - wx;
          const dy = my - wy;
          if (fits(dx, dy)) {
            next.push([dx, dy]);
            if (next.length > MAX_CANDIDATES) break;
          }
        }
      }
    } else {
      for (const [dx, dy] of candidates) if (fits(dx, dy)) next.push([dx, dy]);
    }
    if (next.length === 0) return { kind: "not_shown" };
    if (next.length === 1) return { kind: "found", dx: next[0][0], dy: next[0][1], radius };
    // Too many plain matches to carry on: a larger square would have to start over.
    candidates = next.length > MAX_CANDIDATES ? null : next;
  }
  return { kind: "ambiguous" };
}
