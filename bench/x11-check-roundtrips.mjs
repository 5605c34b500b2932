// Round trips to the X server per last-moment check, counted instead of timed (wall time on a
// loaded 2-core machine drowns a change of a fraction of a millisecond). It runs BENCH_ROUNDS
// checks of one kind (BENCH_CHECK: key | click | shot) against gtk3-widget-factory on a private
// Xvfb + openbox desktop; run it under strace and count the X socket's syscalls per check:
//
//   for n in 0 200; do BENCH_ROUNDS=$n strace -f -c -e trace=poll,recvmsg,sendmsg,writev \
//     -o /tmp/rt-$n.txt node bench/x11-check-roundtrips.mjs; done
//
// (the difference between the two runs over 200 is one check's share; BENCH_DIST: another build).
// BENCH_CHECK=shot_window runs a whole screenshot instead (capture.window: listing, check, read,
// check, encode) and BENCH_CHECK=shot_two_hop the same as the two messages it replaced
// (desktop.list, then capture.region on that listing). BENCH_CHECK=shot_region is capture.region
// alone, against the supervisor's listing sent by value (made once before the rounds, on this
// unchanged desktop; its time stamp renewed each round so the check judges against it).
import { join, resolve } from "node:path";
import { startBenchApps, startX11Session, stopX11Session } from "./lib/x11.mjs";

const REPO = resolve(import.meta.dirname, "..");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 200);
const DIST = resolve(process.env.BENCH_DIST ?? join(REPO, "dist"));
const CHECKS = {
  key: { requireForeground: true, grabs: { keyboard: true } },
  click: { requireForeground: true, points: [{ x: 200, y: 200 }], grabs: { keyboard: true, pointer: true } },
  shot: { region: [0, 0, 800, 600] },
};
const SHOTS = ["shot_window", "shot_two_hop", "shot_region"];
const kind = process.env.BENCH_CHECK ?? "key";
const check = CHECKS[kind];
if (!check && !SHOTS.includes(kind))
  throw new Error("BENCH_CHECK: key, click, shot, shot_window, shot_two_hop or shot_region");

const sessionEnv = startX11Session();
const apps = [];
let platform = null;
let capPlatform = null;
try {
  const { createX11Platform } = await import(join(DIST, "platforms/x11/index.js"));
  const { verifyTarget } = await import(join(DIST, "workers/verify.js"));
  platform = await createX11Platform({ workerKind: "other" });
  const desktop = platform.desktop;
  const started = await startBenchApps(desktop, "rt");
  apps.push(...started.apps);
  const win = started.win;
  const target = { hwnd: win.hwnd, instance: win.instance };
  let once = () => verifyTarget(desktop, target, check);
  if (!check) {
    capPlatform = await createX11Platform({ workerKind: "capture" });
    const { captureHandlers } = await import(join(DIST, "workers/capture/handlers.js"));
    const { OPS } = await import(join(DIST, "shared/protocol.js"));
    const ctx = {
      signal: new AbortController().signal,
      deadline: Date.now() + 1e9,
      init: {},
      platform: capPlatform,
    };
    const shot = {
      region: [0, 0, 800, 600],
      masks: [],
      grid_spacing: null,
      output: "png",
      tiles: true,
      max_png_bytes: 64 * 1024 * 1024,
      compression_level: 2,
    };
    // capture.window only where the build has it (an older one has the two-message path alone).
    const one =
      kind === "shot_window"
        ? OPS["capture.window"].args.parse({
            hwnd: win.hwnd,
            ...shot,
            granted: [{ instance: win.instance, shown_before: [] }],
          })
        : null;
    const { windows } = kind === "shot_region" ? await captureHandlers["desktop.list"]({}, ctx) : {};
    const byValue = () => {
      const args = OPS["capture.region"].args.parse({
        target,
        listing: { at: Date.now(), windows },
        ...shot,
      });
      return captureHandlers["capture.region"](args, ctx);
    };
    once =
      kind === "shot_window"
        ? () => captureHandlers["capture.window"](one, ctx)
        : kind === "shot_region"
          ? byValue
          : async () => {
              const { listing_id } = await captureHandlers["desktop.list"]({}, ctx);
              const args = OPS["capture.region"].args.parse({ target, listing_id, ...shot });
              return captureHandlers["capture.region"](args, ctx);
            };
  }
  // Same setup either way; only the checks differ between a 0-round and an N-round run.
  await once();
  for (let i = 0; i < ROUNDS; i++) await once();
  process.stdout.write(
    `${JSON.stringify({ rounds: ROUNDS, windows: (await desktop.listWindows()).length })}\n`,
  );
} finally {
  await capPlatform?.desktop.dispose();
  await platform?.desktop.dispose();
  for (const a of apps) if (a.exitCode === null) a.kill("SIGKILL");
  stopX11Session(sessionEnv);
}
