import { endianness } from "node:os";
import { uiError } from "../../shared/errors.js";
import {
  containsPoint,
  intersect,
  type Rect,
  rectHeight,
  rectWidth,
  toScreen,
} from "../../shared/geometry.js";
import type { RawImage } from "../../shared/platform.js";
import type { Scenario, ScenarioWindow } from "./scenario.js";

/** Largest capture the simulated screen renders in one call (pixels); beyond it: image_too_large. */
export const MAX_RENDER_PIXELS = 1 << 28;

const LITTLE_ENDIAN = endianness() === "LE";

/** "#rrggbb" → the 32-bit word whose bytes in memory are R, G, B, 255. */
export function colorWord(hex: string): number {
  const r = Number.parseInt(hex.slice(1, 3), 16);
  const g = Number.parseInt(hex.slice(3, 5), 16);
  const b = Number.parseInt(hex.slice(5, 7), 16);
  return LITTLE_ENDIAN
    ? ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0
    : ((r << 24) | (g << 16) | (b << 8) | 255) >>> 0;
}

/** "#rrggbb" → [r, g, b]. */
export function parseColor(hex: string): [number, number, number] {
  return [
    Number.parseInt(hex.slice(1, 3), 16),
    Number.parseInt(hex.slice(3, 5), 16),
    Number.parseInt(hex.slice(5, 7), 16),
  ];
}

/** The windows in stacking order, topmost first: by `z`, ties broken by their order in the file. */
export function stackingOrder(s: Scenario): ScenarioWindow[] {
  return s.windows
    .map((w, i) => ({ w, i }))
    .sort((a, b) => a.w.z - b.w.z || a.i - b.i)
    .map((e) => e.w);
}

/** Whether a window is drawn at all (visible and not minimized). */
export function isDrawn(w: ScenarioWindow): boolean {
  return w.visible && !w.iconic;
}

/** The topmost drawn window under a screen point inside the virtual screen, or null (the desktop). */
export function topWindowAt(s: Scenario, x: number, y: number): ScenarioWindow | null {
  if (!containsPoint(s.virtual_screen, x, y)) return null;
  for (const w of stackingOrder(s)) {
    if (isDrawn(w) && containsPoint(w.rect, x, y)) return w;
  }
  return null;
}

/** Drawn windows whose rect meets `rect` on the virtual screen. */
export function windowsMeeting(s: Scenario, rect: Rect): ScenarioWindow[] {
  const clip = intersect(rect, s.virtual_screen);
  if (clip === null) return [];
  return s.windows.filter((w) => isDrawn(w) && intersect(w.rect, clip) !== null);
}

function fillRect(px: Uint32Array, stride: number, origin: Rect, r: Rect, word: number): void {
  const x0 = r[0] - origin[0];
  const x1 = r[2] - origin[0];
  for (let y = r[1]; y < r[3]; y++) {
    const row = (y - origin[1]) * stride;
    px.fill(word, row + x0, row + x1);
  }
}

/**
 * Renders the screen rect `rect` of the simulated desktop as RGBA: the background, then every
 * visible, non-minimized window from the bottom of the stack to the top, each its `fill` and then
 * its `paint` rects, clipped to the window and to the virtual screen. Areas outside the virtual
 * screen are background.
 */
export function renderDesktop(s: Scenario, rect: Rect): RawImage {
  const width = rectWidth(rect);
  const height = rectHeight(rect);
  if (width === 0 || height === 0) throw uiError("invalid_argument", "The capture rect is empty.");
  if (width * height > MAX_RENDER_PIXELS) throw uiError("image_too_large");
  // Not zeroed: every pixel is written by the background fill below. Large sizes never come from
  // Node's shared pool, so the image owns its whole ArrayBuffer (transferable).
  const data: Uint8Array = Buffer.allocUnsafeSlow(width * height * 4);
  const px = new Uint32Array(data.buffer, data.byteOffset, width * height);
  px.fill(colorWord(s.background));
  const clip = intersect(rect, s.virtual_screen);
  if (clip === null) return { width, height, channels: 4, data };
  const order = stackingOrder(s);
  for (let i = order.length - 1; i >= 0; i--) {
    const w = order[i];
    if (!isDrawn(w)) continue;
    const wclip = intersect(w.rect, clip);
    if (wclip === null) continue;
    fillRect(px, width, rect, wclip, colorWord(w.fill));
    for (const p of w.paint ?? []) {
      const pr = intersect(toScreen(w.rect, p.rect), wclip);
      if (pr !== null) fillRect(px, width, rect, pr, colorWord(p.fill));
    }
  }
  return { width, height, channels: 4, data };
}
