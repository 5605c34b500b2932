// A frame stream of a changing GTK window on a private Xvfb desktop for STREAM_MINUTES (default
// 10): zenity's pulsing progress bar, granted to one built server whose session subscribes to two
// of its safe regions: one read on every notifications/resources/updated (the fast subscriber),
// one never read (the stalled subscriber). The server's memory (bench/lib/x11desk.mjs memoryMiB:
// its own RSS and the RSS summed over it and its children) is sampled every STREAM_SAMPLE_S
// seconds (default 10), with the PNG bytes the streams keep (health_check.streams); CPU is the
// utime + stime of the server's process tree over the run. At the end the grant is released and
// every update that arrives after it is counted (only the stream's end should). The grant's
// lifetime is set past the run (a stream ends when its grant expires).
//
//   npm run build && node bench/frame-stream.mjs
//   STREAM_MINUTES=2 STREAM_RATE=2 node bench/frame-stream.mjs
//
// Prints one JSON object on stdout.
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { call } from "./lib/mcp.mjs";
import { memoryMiB, startDesk, waitFor } from "./lib/x11desk.mjs";

const MINUTES = Number(process.env.STREAM_MINUTES ?? 10);
const SAMPLE_S = Number(process.env.STREAM_SAMPLE_S ?? 10);
const RATE = process.env.STREAM_RATE ?? "10";
const TICK = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

/** utime + stime (s) of a process and its descendants. */
function cpuSeconds(pid) {
  const kids = new Map();
  for (const line of execFileSync("ps", ["-eo", "pid=,ppid="], { encoding: "utf8" }).split("\n")) {
    const [p, pp] = line.trim().split(/\s+/).map(Number);
    if (!p) continue;
    if (!kids.has(pp)) kids.set(pp, []);
    kids.get(pp).push(p);
  }
  let ticks = 0;
  const stack = [pid];
  while (stack.length > 0) {
    const p = stack.pop();
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // gone
    }
    for (const k of kids.get(p) ?? []) stack.push(k);
  }
  return ticks / TICK;
}

const desk = await startDesk();
const bar = spawn(
  "sh",
  [
    "-c",
    "sleep 100000 | exec zenity --progress --pulsate --title='uix stream bar' --text=working --width=420",
  ],
  { env: process.env, stdio: "ignore", detached: true },
);
try {
  const win = await waitFor("the bar", async () =>
    (await desk.platform.desktop.listWindows()).find((w) => w.title === "uix stream bar" && w.visible),
  );
  const w = win.rect[2] - win.rect[0];
  const h = win.rect[3] - win.rect[1];
  const server = await desk.grantedServer(
    win,
    {
      allowed_actions: ["observe"],
      safe_regions: [
        { name: "fast", rect: [0, 0, w, h] },
        { name: "stalled", rect: [0, 0, w, Math.max(1, h - 1)] },
      ],
    },
    // A stream ends with its grant; the run outlasts the default 5-minute grant.
    { UIINSPECT_VISUAL_SAMPLE_RATE: RATE, UIINSPECT_GRANT_TTL_MS: String((MINUTES + 5) * 60_000) },
  );
  const { client, pid } = server;
  const uri = (name) => `uiinspect://window/${win.hwnd}/region/${name}`;
  const counts = {
    fast_updates: 0,
    stalled_updates: 0,
    errors: {},
    after_release: 0,
    ended: null,
    ended_before_release: null,
  };
  let released = false;
  let pendingRead = null;
  let reads = 0;
  let bytes = 0;
  const readFast = async () => {
    const r = await client.readResource({ uri: uri("fast") });
    reads += 1;
    bytes += r.contents[0].blob.length;
  };
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => {
    const meta = n.params._meta ?? {};
    if (released) {
      if (meta.ended) counts.ended = meta.ended;
      else counts.after_release += 1;
      return;
    }
    if (meta.error) counts.errors[meta.error] = (counts.errors[meta.error] ?? 0) + 1;
    if (meta.ended) counts.ended_before_release = meta.ended;
    if (n.params.uri === uri("stalled")) counts.stalled_updates += 1;
    else if (meta.sequence !== undefined) {
      counts.fast_updates += 1;
      // One read at a time; an update meanwhile is picked up by the next read.
      if (pendingRead === null)
        pendingRead = readFast().finally(() => {
          pendingRead = null;
        });
    }
  });
  await client.subscribeResource({ uri: uri("stalled") });
  await client.subscribeResource({ uri: uri("fast") });
  const started = Date.now();
  const cpu0 = cpuSeconds(pid);
  const samples = [];
  const sample = async () => {
    const health = await call(client, "health_check");
    samples.push({
      t_s: Math.round((Date.now() - started) / 1000),
      ...memoryMiB(pid),
      streams: health.streams,
    });
  };
  await sample();
  while (Date.now() - started < MINUTES * 60_000) {
    await new Promise((r) => setTimeout(r, SAMPLE_S * 1000));
    await sample();
  }
  const seconds = (Date.now() - started) / 1000;
  const cpu = cpuSeconds(pid) - cpu0;
  await pendingRead;
  released = true;
  await call(client, "release_access", { hwnd: win.hwnd });
  await new Promise((r) => setTimeout(r, 3000));
  const rss = samples.map((s) => s.rss);
  const tree = samples.map((s) => s.tree_rss);
  console.log(
    JSON.stringify(
      {
        minutes: MINUTES,
        sample_rate_per_s: Number(RATE),
        region: [w, h],
        load_average: readFileSync("/proc/loadavg", "utf8").trim(),
        fast: {
          updates: counts.fast_updates,
          reads,
          frames_per_s: Math.round((reads / seconds) * 100) / 100,
          mean_png_base64: Math.round(bytes / Math.max(1, reads)),
        },
        stalled: { updates: counts.stalled_updates },
        errors: counts.errors,
        cpu_s: Math.round(cpu * 100) / 100,
        cpu_ms_per_delivered_frame: Math.round((cpu * 1000 * 100) / Math.max(1, reads)) / 100,
        rss_mib: { start: rss[0], min: Math.min(...rss), max: Math.max(...rss), end: rss.at(-1) },
        tree_rss_mib: { start: tree[0], min: Math.min(...tree), max: Math.max(...tree), end: tree.at(-1) },
        streams_peak_bytes: Math.max(...samples.map((s) => s.streams?.peak ?? 0)),
        ended_before_release: counts.ended_before_release,
        after_release: { updates: counts.after_release, ended: counts.ended },
        samples,
      },
      null,
      2,
    ),
  );
} finally {
  try {
    process.kill(-bar.pid, "SIGKILL");
  } catch {
    // gone
  }
  await desk.stop();
}
