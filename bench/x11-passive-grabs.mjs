// The passive-grab probe before each typed character (src/platforms/x11/passiveGrabs.ts), on a
// private Xvfb desktop: per character, the whole key path under the server grab (focus check,
// XTEST route, keyboard probe, passive-grab probe, the key events) against the probe alone.
// Run after `npm run build`, inside `source .ci/x11-session.sh start`:
//   node bench/x11-passive-grabs.mjs
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";

const { XConnection } = await import("../dist/platforms/x11/xconn.js");
const { X11Input } = await import("../dist/platforms/x11/input.js");
const { requireNoPassiveKeyGrab } = await import("../dist/platforms/x11/passiveGrabs.js");

const term = spawn(
  "xterm",
  ["-T", "uix bench grabs", "-e", "sh", "-c", "stty -icanon -echo; exec cat > /dev/null"],
  {
    stdio: "ignore",
  },
);
await sleep(1500);
const x = XConnection.open();
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
for (let i = 0; i < probes; i++) requireNoPassiveKeyGrab(x, focusOf(), [{ kc, shifted: false }], true);
const probe = Number(process.hrtime.bigint() - t1) / 1e6 / probes;
const first = process.hrtime.bigint();
const all = [...new Set(text)].map((c) => ({
  kc: x.n.XKeysymToKeycode(x.dpy, c.codePointAt(0)),
  shifted: false,
}));
requireNoPassiveKeyGrab(x, focusOf(), all, true);
const whole = Number(process.hrtime.bigint() - first) / 1e6;
console.log(
  JSON.stringify({
    per_char_ms: +typed.toFixed(3),
    probe_per_char_ms: +probe.toFixed(3),
    probe_share: +(probe / typed).toFixed(3),
    first_char_whole_text_probe_ms: +whole.toFixed(3),
    distinct_keys: all.length,
  }),
);
x.close();
term.kill("SIGKILL");
