import type { RawImage } from "../../shared/platform.js";

type Sharp = typeof import("sharp").default;
let sharpModule: Promise<Sharp> | null = null;

/**
 * sharp is loaded when the capture worker has started (warmEncoder) or on the first encode,
 * never before the worker is ready: discovery and hashing never need it, and a native module
 * that fails to load must not take list_windows down with it.
 */
function loadSharp(): Promise<Sharp> {
  sharpModule ??= import("sharp").then((m): Sharp => {
    const sharp = m.default;
    // No decoded pixels stay in libvips' operation cache: a frame must be gone once answered.
    sharp.cache(false);
    // A PNG encode is one sequential zlib stream: more libvips threads do not make it faster,
    // they only add stacks and malloc arenas (in thread mode, in the server's own process).
    sharp.concurrency(1);
    return sharp;
  });
  return sharpModule;
}

/**
 * Loads sharp and runs one tiny encode, so the first screenshot after consent does not pay
 * for loading libvips and its PNG/zlib code (~100 ms). A failure here is not an error: the
 * first real encode reports it.
 */
export async function warmEncoder(): Promise<void> {
  try {
    await encodePng({ width: 16, height: 16, channels: 4, data: new Uint8Array(16 * 16 * 4) }, 2);
  } catch {
    // Reported by the first real encode.
  }
}

/**
 * PNG in memory (never a file). RGBA input is written as RGB: screen alpha carries
 * no information. The result is a Uint8Array that owns its whole ArrayBuffer, so the
 * caller can transfer it to another thread without moving unrelated bytes.
 */
export async function encodePng(img: RawImage, compressionLevel: number): Promise<Uint8Array<ArrayBuffer>> {
  const sharp = await loadSharp();
  const input = Buffer.from(img.data.buffer, img.data.byteOffset, img.width * img.height * img.channels);
  let pipeline = sharp(input, { raw: { width: img.width, height: img.height, channels: img.channels } });
  if (img.channels === 4) pipeline = pipeline.removeAlpha();
  const out = await pipeline.png({ compressionLevel, adaptiveFiltering: false, palette: false }).toBuffer();
  const ab = out.buffer;
  if (ab instanceof ArrayBuffer && out.byteOffset === 0 && out.byteLength === ab.byteLength) {
    return new Uint8Array(ab, 0, out.byteLength);
  }
  return new Uint8Array(out);
}
