import { uiError } from "../../shared/errors.js";
import { type Rect, rectHeight, rectWidth } from "../../shared/geometry.js";
import type { CapturePort, RawImage } from "../../shared/platform.js";
import * as w from "./ffi.js";

const SRCCOPY = 0x00cc0020;
/** Include layered windows, so the pixels are what the user sees. */
const CAPTUREBLT = 0x40000000;
const DIB_RGB_COLORS = 0;
const BI_RGB = 0;
/** Larger requests are refused before any allocation (16384² would be 1 GiB). */
const MAX_PIXELS = 64 * 1024 * 1024;

/**
 * GDI capture of a screen rect: BitBlt from the screen DC into a compatible bitmap, then
 * GetDIBits as 32-bit top-down BGRA, converted in place to RGBA (alpha forced opaque).
 * PrintWindow is not used: it asks the target to paint itself (not what the user sees, and
 * black under Wine). Every DC and bitmap is released in finally blocks.
 */
export function bitBltScreen(rect: Rect): RawImage {
  const width = rectWidth(rect);
  const height = rectHeight(rect);
  if (width <= 0 || height <= 0) throw uiError("invalid_argument", "The capture rect is empty.");
  if (width * height > MAX_PIXELS) throw uiError("image_too_large");
  const screen = w.GetDC(0);
  if (!screen) throw uiError("platform_unavailable", "The screen device context is unavailable.");
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
        const data = Buffer.alloc(width * height * 4);
        const lines = w.GetDIBits(mem, bmp, 0, height, data, bmi, DIB_RGB_COLORS);
        if (lines !== height) throw uiError("platform_unavailable", "GetDIBits failed.");
        for (let i = 0; i < data.length; i += 4) {
          const b = data[i];
          data[i] = data[i + 2];
          data[i + 2] = b;
          data[i + 3] = 255;
        }
        return {
          width,
          height,
          channels: 4,
          data: new Uint8Array(data.buffer, data.byteOffset, data.length),
        };
      } finally {
        w.DeleteObject(bmp);
      }
    } finally {
      w.DeleteDC(mem);
    }
  } finally {
    w.ReleaseDC(0, screen);
  }
}

export class Win32Capture implements CapturePort {
  async captureScreen(rect: Rect): Promise<RawImage> {
    return bitBltScreen(rect);
  }
}
