// Cost of the consent dialog's window proof (src/platforms/x11/dialog/window.ts proveTree), run
// for every key, press and release it judges, on a private Xvfb + openbox desktop: the proof as
// shipped (the owners of each frame level's children) against walking every window of the frame
// with one XQueryTree each (what a full owner walk would cost), alternated round by round.
//
//   npm run build && node bench/x11-dialog-proof.mjs
//   BENCH_ROUNDS=500 node bench/x11-dialog-proof.mjs
//
// Prints one JSON object on stdout (ms per proof, p50 and mean, and the machine's load average).
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { startX11Session, stopX11Session, waitFor } from "./lib/x11.mjs";

const REPO = resolve(import.meta.dirname, "..");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 200);

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { p50_ms: Number(s[Math.floor(s.length / 2)].toFixed(2)), mean_ms: Number(mean.toFixed(2)) };
}

const env = startX11Session();
try {
  const { ConsentWindow } = await import(join(REPO, "dist/platforms/x11/dialog/window.js"));
  const w = new ConsentWindow({
    title: "bench dialog",
    text: "bench",
    timeoutMs: 600_000,
    allowInjected: false,
  });
  const stop = new AbortController();
  const running = w.run(stop.signal);
  // Private members are reached through the prototype: this measures the code as shipped.
  const proto = Object.getPrototypeOf(w);
  await waitFor("the dialog framed", async () => (proto.proveTree.call(w, 1) === "ok" ? true : null));
  const walk = () => {
    let top = w.win;
    for (let p = proto.tree.call(w, top).parent; p !== w.root; p = proto.tree.call(w, p).parent) top = p;
    const queue = [top];
    let n = 0;
    while (queue.length > 0) {
      n++;
      queue.push(...proto.tree.call(w, queue.shift()).children);
    }
    return n;
  };
  const shipped = [];
  const full = [];
  let frameWindows = 0;
  for (let i = 0; i < ROUNDS; i++) {
    let t = performance.now();
    proto.proveTree.call(w, 1);
    shipped.push(performance.now() - t);
    t = performance.now();
    frameWindows = walk();
    full.push(performance.now() - t);
  }
  stop.abort();
  await running;
  const a = stats(shipped);
  const b = stats(full);
  process.stdout.write(
    `${JSON.stringify({
      rounds: ROUNDS,
      frame_windows: frameWindows,
      proof: a,
      full_frame_walk: b,
      ratio_p50: Number((b.p50_ms / a.p50_ms).toFixed(1)),
      loadavg: loadavg().map((l) => Number(l.toFixed(2))),
    })}\n`,
  );
} finally {
  stopX11Session(env);
}
