// The passive-grab probes on a private Xvfb desktop. Keys (src/platforms/x11/passiveGrabs.ts):
// per character, the whole key path under the server grab (focus check, XTEST route, keyboard
// probe, passive-grab probe, the key events) against the probe alone. Buttons
// (passiveButtonGrabs.ts): per press, the whole press path (pressCheck.ts under the server grab,
// the press, its release) against the probe alone, for the left button (openbox's own binding
// on the client window conflicts, so the X-Resource holder count runs too), a wheel notch (no
// conflict) and a 3-notch scroll; then the left button again with a second xterm running (it
// holds passive grabs of its own, so the conflict is ambiguous and the press is recorded).
// `--without-xlib-xcb`: the same with the X connection as without libX11-xcb (the core probes on
// Xlib, judged by X-Resource counts: corePassiveXlib.ts).
// Run after `npm run build`, inside `source .ci/x11-session.sh start`:
//   node bench/x11-passive-grabs.mjs [--without-xlib-xcb]
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";

const { XConnection } = await import("../dist/platforms/x11/xconn.js");
const { X11Input } = await import("../dist/platforms/x11/input.js");
const { requireNoPassiveKeyGrab } = await import("../dist/platforms/x11/passiveGrabs.js");
const { probePassiveButtonGrabs } = await import("../dist/platforms/x11/passiveButtonGrabs.js");

const term = spawn(
  "xterm",
  ["-T", "uix bench grabs", "-e", "sh", "-c", "stty -icanon -echo; exec cat > /dev/null"],
  {
    stdio: "ignore",
  },
);
await sleep(1500);
const x = XConnection.open({ withoutXlibXcb: process.argv.includes("--without-xlib-xcb") });
const focusOf = () => {
  const f = [0];
  x.n.XGetInputFocus(x.dpy, f, [0]);
  return Number(f[0]);
};
const input = new X11Input(x);
const proof = { focus: String(focusOf()), points: [] };
const text = "the quick brown fox jumps over the lazy dog ";
const N = 8;
const t0 = process.hrtime.bigint();
for (let i = 0; i < N; i++) await input.typeText("0", text, "type", async () => proof);
const typed = Number(process.hrtime.bigint() - t0) / 1e6 / (N * text.length);
const kc = x.n.XKeysymToKeycode(x.dpy, 0x61);
const probes = N * text.length;
const t1 = process.hrtime.bigint();
for (let i = 0; i < probes; i++) requireNoPassiveKeyGrab(x, focusOf(), [{ kc, shifted: false }]);
const probe = Number(process.hrtime.bigint() - t1) / 1e6 / probes;
const first = process.hrtime.bigint();
const all = [...new Set(text)].map((c) => ({
  kc: x.n.XKeysymToKeycode(x.dpy, c.codePointAt(0)),
  shifted: false,
}));
requireNoPassiveKeyGrab(x, focusOf(), all);
const whole = Number(process.hrtime.bigint() - first) / 1e6;
console.log(
  JSON.stringify({
    xlib_xcb: x.xlibXcb !== null,
    per_char_ms: +typed.toFixed(3),
    probe_per_char_ms: +probe.toFixed(3),
    probe_share: +(probe / typed).toFixed(3),
    first_char_whole_text_probe_ms: +whole.toFixed(3),
    distinct_keys: all.length,
  }),
);

// Buttons: the pointer in the middle of the xterm, the proof of the windows under it.
const win = [0];
x.n.XGetInputFocus(x.dpy, win, [0]);
const geo = [0];
const gx = [0];
const gy = [0];
x.n.XTranslateCoordinates(x.dpy, Number(win[0]), x.root, 40, 40, gx, gy, geo);
const px = gx[0] ?? 0;
const py = gy[0] ?? 0;
await input.moveTo(px, py);
const path = [];
for (let at = x.root; ; ) {
  const child = [0];
  x.n.XTranslateCoordinates(x.dpy, x.root, at, px, py, [0], [0], child);
  const next = Number(child[0] ?? 0);
  if (next === 0) break;
  path.push(String(next));
  at = next;
}
const point = { focus: null, points: [{ x: px, y: py, path, grabOwner: null }] };
const windows = [x.root, ...path.map(Number)];
const owner = x.clientOf(Number(path.at(-1)));
const wm = x.clientOf(Number(path[0]));
const parties = { allowed: new Set([owner, wm]), managed: new Set(path.slice(0, 2).map(Number)) };
const M = 200;
// openbox takes each press first (its Sync grab on the client window) and replays it: the next
// press waits, untimed, until the pointer is free again.
const pointerFree = async () => {
  for (;;) {
    if (x.n.XGrabPointer(x.dpy, x.root, 0, 0, 1, 1, 0, 0, 0) === 0) {
      x.n.XUngrabPointer(x.dpy, 0);
      x.n.XSync(x.dpy, 0);
      return;
    }
    await sleep(2);
  }
};
const time = async (fn, m = M) => {
  let ns = 0n;
  for (let i = 0; i < m; i++) {
    await pointerFree();
    const t = process.hrtime.bigint();
    await fn();
    ns += process.hrtime.bigint() - t;
  }
  return Number(ns) / 1e6 / m;
};
const click = async () => {
  await input.buttonDown("left", point);
  await input.buttonUp("left");
};
const verdict = (b) => probePassiveButtonGrabs(x, windows, b, 0, parties);
const pressLeft = await time(click);
const probeLeft = await time(() => verdict(1));
const notch = await time(() => input.wheel(1, point));
const probeNotch = await time(() => verdict(4));
const scroll3 = await time(() => input.wheel(3, point));
const other = spawn("xterm", ["-T", "uix bench other", "-geometry", "20x4+700+500"], { stdio: "ignore" });
await sleep(1500);
const leftVerdict = verdict(1);
const pressAmbiguous = await time(click, 50);
console.log(
  JSON.stringify({
    windows: windows.length,
    left_press_ms: +pressLeft.toFixed(3),
    left_probe_ms: +probeLeft.toFixed(3),
    left_probe_share: +(probeLeft / pressLeft).toFixed(3),
    notch_ms: +notch.toFixed(3),
    notch_probe_ms: +probeNotch.toFixed(3),
    notch_probe_share: +(probeNotch / notch).toFixed(3),
    scroll_3_notches_ms: +scroll3.toFixed(3),
    with_second_xterm: leftVerdict,
    left_press_recorded_ms: +pressAmbiguous.toFixed(3),
    recorded_over_plain: +(pressAmbiguous / pressLeft).toFixed(2),
  }),
);
other.kill("SIGKILL");
x.close();
term.kill("SIGKILL");
