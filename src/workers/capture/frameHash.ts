import { createHash } from "node:crypto";

/**
 * The frame hash: SHA-256 of the PNG the capture worker encodes for a frame (with the size, the
 * grid and the zlib level in front), not of its raw pixels.
 *
 * Why the PNG: an 800×600 frame is 1.44 MB of RGB and about 60 KB of PNG; SHA-256 of the raw
 * bytes cost 0.85 ms (SHA-NI), as much as the screen read, on every screenshot, which encodes
 * the PNG anyway. Hashing the PNG is the same commitment to the image: PNG is lossless (the
 * bytes decode to exactly one image), and the encoder is deterministic (filter None on every
 * row, node:zlib at a fixed level), so equal images give equal PNGs and equal hashes, and
 * different images give different PNGs, whose SHA-256 differ unless SHA-256 collides. The hash
 * stays cryptographic: a caller supplies hashes to compare against (if_changed_since, since, a
 * stream's last frame), and a chosen collision must stay out of reach.
 *
 * The price: a sample that wants only the hash (visual waits, an unchanged stream frame) now
 * encodes its frame too (docs/benchmarks.md measures both).
 */
export function frameHashOfPng(
  png: Uint8Array,
  size: { width: number; height: number },
  gridSpacing: number | null,
  compressionLevel: number,
): string {
  const h = createHash("sha256");
  h.update(`png;${size.width}x${size.height};grid=${gridSpacing ?? 0};level=${compressionLevel};`);
  h.update(png);
  return h.digest("hex");
}
