import * as w from "../../os/win32/ffi.js";
import { bgrxToRgb, bgrxToRgbRows } from "../../shared/bgrx.js";
import { uiError } from "../../shared/errors.js";
import { type Rect, rectHeight, rectWidth } from "../../shared/geometry.js";
import { type CapturePort, type FrameTarget, frameFits, type RawImage } from "../../shared/platform.js";

const SRCCOPY = 0x00cc0020;
/** Include layered windows, so the pixels are what the user sees. */
const CAPTUREBLT = 0x40000000;
const DIB_RGB_COLORS = 0;
const BI_RGB = 0;
/** Larger requests are refused before any allocation (16384² would be 1 GiB). */
const MAX_PIXELS = 64 * 1024 * 1024;

/**
 * GDI capture of a screen rect: BitBlt from the screen DC into a compatible bitmap, then
 * GetDIBits as 32-bit top-down BGRA, converted to RGB (3 bytes per pixel) into the caller's
 * frame when it passes one that fits (the capture worker's PNG rows), else packed in place.
 * `dib`, when given, is where GetDIBits writes (reused shot after shot while the size holds).
 * PrintWindow is not used: it asks the target to paint itself (not what the user sees, and
 * black under Wine). Every DC and bitmap is released in finally blocks.
 */
export function bitBltScreen(rect: Rect, screenDc?: ScreenDc, into?: FrameTarget, dib?: DibBuffer): RawImage {
  const width = rectWidth(rect);
  const height = rectHeight(rect);
  if (width <= 0 || height <= 0) throw uiError("invalid_argument", "The capture rect is empty.");
  if (width * height > MAX_PIXELS) throw uiError("image_too_large");
  const own = screenDc ?? new ScreenDc();
  const screen = own.get();
  try {
    const mem = w.CreateCompatibleDC(screen);
    if (!mem) throw uiError("platform_unavailable", "CreateCompatibleDC failed.");
    try {
      const bmp = w.CreateCompatibleBitmap(screen, width, height);
      if (!bmp) throw uiError("platform_unavailable", "CreateCompatibleBitmap failed.");
      try {
        const old = w.SelectObject(mem, bmp);
        let ok = 0;
        try {
          ok = w.BitBlt(mem, 0, 0, width, height, screen, rect[0], rect[1], SRCCOPY | CAPTUREBLT);
        } finally {
          w.SelectObject(mem, old);
        }
        if (!ok) throw uiError("platform_unavailable", "BitBlt failed.");
        // BITMAPINFOHEADER (40 bytes) + room for the colour table GetDIBits may write.
        const bmi = Buffer.alloc(40 + 256 * 4);
        bmi.writeUInt32LE(40, 0);
        bmi.writeInt32LE(width, 4);
        bmi.writeInt32LE(-height, 8); // negative: top-down rows
        bmi.writeUInt16LE(1, 12);
        bmi.writeUInt16LE(32, 14);
        bmi.writeUInt32LE(BI_RGB, 16);
        const n = width * height;
        const frame = into && frameFits(into, width, height) ? into : null;
        // A reused buffer is written whole by GetDIBits (every line, checked) or not used.
        const data = frame && dib ? dib.get(n * 4) : Buffer.alloc(n * 4);
        const lines = w.GetDIBits(mem, bmp, 0, height, data, bmi, DIB_RGB_COLORS);
        if (lines !== height) throw uiError("platform_unavailable", "GetDIBits failed.");
        const words = new Uint32Array(data.buffer, data.byteOffset, n);
        if (frame) {
          bgrxToRgbRows(words, width, width, height, frame.data, frame.stride, 0);
          return { width, height, channels: 3, data: frame.data, stride: frame.stride };
        }
        // BGRA → packed RGB in place (the encoder's input as it is; alpha carries nothing).
        bgrxToRgb(words, n, data);
        return { width, height, channels: 3, data: new Uint8Array(data.buffer, data.byteOffset, n * 3) };
      } finally {
        w.DeleteObject(bmp);
      }
    } finally {
      w.DeleteDC(mem);
    }
  } finally {
    if (!screenDc) own.release();
  }
}

/** How long one screen DC is reused before it is released and fetched again. */
const SCREEN_DC_TTL_MS = 5000;

/**
 * The screen DC (GetDC(NULL)), kept for a few seconds between captures: under Wine fetching
 * it costs ~90 ms (measured), on Windows it is cheap either way. Released on dispose and
 * whenever it is older than SCREEN_DC_TTL_MS, so display changes are picked up.
 */
export class ScreenDc {
  private dc = 0;
  private at = 0;

  get(): number {
    if (this.dc && Date.now() - this.at > SCREEN_DC_TTL_MS) this.release();
    if (!this.dc) {
      this.dc = w.GetDC(0);
      this.at = Date.now();
      if (!this.dc) throw uiError("platform_unavailable", "The screen device context is unavailable.");
    }
    return this.dc;
  }

  release(): void {
    if (this.dc) w.ReleaseDC(0, this.dc);
    this.dc = 0;
  }
}

/** The DIB GetDIBits writes into, kept while shots keep the same size (no 4 B/px buffer each). */
export class DibBuffer {
  private buf: Buffer | null = null;

  get(bytes: number): Buffer {
    if (this.buf?.byteLength !== bytes) this.buf = Buffer.allocUnsafeSlow(bytes);
    return this.buf;
  }
}

export class Win32Capture implements CapturePort {
  private readonly screen = new ScreenDc();
  private readonly dib = new DibBuffer();

  async captureScreen(rect: Rect, into?: FrameTarget): Promise<RawImage> {
    return bitBltScreen(rect, this.screen, into, this.dib);
  }

  dispose(): void {
    this.screen.release();
  }
}
