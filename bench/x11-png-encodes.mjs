// The ways to deflate one screenshot's PNG rows, timed in turn on a real frame: an 800×600
// capture of gtk3-widget-factory on a private Xvfb desktop (the capture port of dist/, its rows
// as the encoder deflates them: filter byte + RGB). zlib's fast deflate at levels 1–2 (level 2
// is used), other strategies and window sizes, filter Sub in JavaScript, and the rows deflated
// as two halves at once (one on libuv's pool, one on this thread; the raw streams joined with a
// sync flush and the two adler32s combined). Checks that the split stream inflates to the rows.
//
//   npm run build && node bench/x11-png-encodes.mjs        (BENCH_ROUNDS, default 100)
//
// Prints one JSON object: per encode p50 and min in ms, and its bytes; the load average.
import { loadavg } from "node:os";
import { join } from "node:path";
import zlib from "node:zlib";
import { percentiles } from "./lib/mcp.mjs";
import { REPO, startDesk } from "./lib/x11desk.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 100);
const C = zlib.constants;
const la = () => Math.round(loadavg()[0] * 100) / 100;

const desk = await startDesk();
let rows;
let width;
let height;
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  await new Promise((r) => setTimeout(r, 1500));
  const { createX11Platform } = await import(join(REPO, "dist/platforms/x11/index.js"));
  const { pngRows } = await import(join(REPO, "dist/workers/capture/png.js"));
  const platform = await createX11Platform({ workerKind: "capture" });
  const raw = await platform.capture.captureScreen([
    win.rect[0],
    win.rect[1],
    win.rect[0] + 800,
    win.rect[1] + 600,
  ]);
  ({ width, height } = raw);
  rows = pngRows(raw);
  await platform.dispose();
} finally {
  await desk.stop();
}

const stride = width * 3 + 1;
function subFilter(src) {
  const out = Buffer.allocUnsafe(src.length);
  for (let o = 0; o < src.length; o += stride) {
    out[o] = 1;
    out[o + 1] = src[o + 1];
    out[o + 2] = src[o + 2];
    out[o + 3] = src[o + 3];
    for (let i = o + 4, e = o + stride; i < e; i++) out[i] = (src[i] - src[i - 3]) & 255;
  }
  return out;
}

const BASE = 65521;
/** adler32 of A‖B from adler32(A), adler32(B) and B's length (zlib's adler32_combine). */
function adlerCombine(a1, a2, len2) {
  const rem = len2 % BASE;
  let sum1 = a1 & 0xffff;
  let sum2 = (rem * sum1) % BASE;
  sum1 += (a2 & 0xffff) + BASE - 1;
  sum2 += ((a1 >>> 16) & 0xffff) + ((a2 >>> 16) & 0xffff) + BASE - rem;
  if (sum1 >= BASE) sum1 -= BASE;
  if (sum1 >= BASE) sum1 -= BASE;
  if (sum2 >= BASE << 1) sum2 -= BASE << 1;
  if (sum2 >= BASE) sum2 -= BASE;
  return ((sum2 << 16) | sum1) >>> 0;
}
const half = stride * (height >> 1);
const A = rows.subarray(0, half);
const B = rows.subarray(half);
async function twoHalves() {
  const first = new Promise((ok, no) =>
    zlib.deflateRaw(A, { level: 2, finishFlush: C.Z_SYNC_FLUSH, chunkSize: 65536 }, (e, r) =>
      e ? no(e) : ok(r),
    ),
  );
  // A stored (level 0) zlib stream of the first half: zlib's own adler32 of it in its trailer.
  const firstSum = new Promise((ok, no) =>
    zlib.deflate(A, { level: 0, chunkSize: 1 << 20 }, (e, r) =>
      e ? no(e) : ok(r.readUInt32BE(r.length - 4)),
    ),
  );
  const second = zlib.deflateSync(B, { level: 2, chunkSize: 65536 });
  const [a, sumA] = await Promise.all([first, firstSum]);
  const out = Buffer.concat([
    Buffer.from([0x78, 0x5e]),
    a,
    second.subarray(2, second.length - 4),
    Buffer.alloc(4),
  ]);
  out.writeUInt32BE(adlerCombine(sumA, second.readUInt32BE(second.length - 4), B.length), out.length - 4);
  return out;
}
if (!zlib.inflateSync(await twoHalves()).equals(rows))
  throw new Error("the two halves do not inflate to the rows");

const opts = { chunkSize: 65536 };
const encodes = {
  level2_used: () => zlib.deflateSync(rows, { ...opts, level: 2 }),
  level1: () => zlib.deflateSync(rows, { ...opts, level: 1 }),
  level2_memlevel9: () => zlib.deflateSync(rows, { ...opts, level: 2, memLevel: 9 }),
  level2_window_4k: () => zlib.deflateSync(rows, { ...opts, level: 2, windowBits: 12 }),
  rle: () => zlib.deflateSync(rows, { ...opts, level: 1, strategy: C.Z_RLE }),
  huffman_only: () => zlib.deflateSync(rows, { ...opts, level: 1, strategy: C.Z_HUFFMAN_ONLY }),
  sub_filter_only: () => subFilter(rows),
  sub_then_rle: () => zlib.deflateSync(subFilter(rows), { ...opts, level: 1, strategy: C.Z_RLE }),
  sub_then_level2: () => zlib.deflateSync(subFilter(rows), { ...opts, level: 2 }),
  two_halves_at_once: twoHalves,
};
const load = [la()];
const times = Object.fromEntries(Object.keys(encodes).map((k) => [k, []]));
const bytes = {};
for (let i = 0; i < ROUNDS + 5; i++) {
  for (const [k, f] of Object.entries(encodes)) {
    const s = performance.now();
    const out = await f();
    const d = performance.now() - s;
    if (i >= 5) times[k].push(d);
    bytes[k] = out.length;
  }
}
load.push(la());
const result = { bench: "x11-png-encodes", rows_bytes: rows.length, rounds: ROUNDS, load, encodes: {} };
for (const k of Object.keys(encodes)) {
  const p = percentiles(times[k]);
  result.encodes[k] = { p50_ms: p.p50_ms, min_ms: p.min_ms, bytes: bytes[k] };
}
process.stdout.write(`${JSON.stringify(result)}\n`);
