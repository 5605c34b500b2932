import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { completePng, decodePng, readerPipeline } from "../../src/platforms/wayland/pipewireFrames.js";

/**
 * The screen-cast reader's GStreamer pipeline keeps only the newest frame in front of its slow
 * stages: a reader that falls behind the stream hands out the latest picture, not a backlog of
 * older ones (a monitor picture seconds old would show a window uncovered after a cover came
 * over it). Run for real with a test source in place of pipewiresrc: 60 frames of a moving
 * ball while nothing reads the output yet.
 */

const GST = "/usr/bin/gst-launch-1.0";
const FRAMES = 60;
const SOURCE = ["videotestsrc", `num-buffers=${FRAMES}`, "pattern=ball"];

function pngs(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let rest = buf;
  for (;;) {
    const size = completePng(rest);
    if (size <= 0) return out;
    out.push(rest.subarray(0, size));
    rest = rest.subarray(size);
  }
}

/** Runs gst-launch; `holdMs`: how long its output is left unread first. */
function run(args: string[], holdMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(GST, args, { stdio: ["ignore", "pipe", "ignore"] });
    const chunks: Buffer[] = [];
    child.stdout.pause();
    setTimeout(() => {
      child.stdout.on("data", (d: Buffer) => chunks.push(d));
      child.stdout.resume();
    }, holdMs);
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`gst ${code}`)),
    );
  });
}

describe.skipIf(!existsSync(GST))("wayland screen-cast reader pipeline", () => {
  it("a reader that lags drops the older frames and still hands out the newest", async () => {
    const lagging = pngs(await run(readerPipeline(SOURCE), 1500));
    // Every frame kept, read at once: the reference for the stream's last picture.
    const all = pngs(
      await run(
        [
          "-q",
          ...SOURCE,
          "!",
          "videoconvert",
          "!",
          "video/x-raw,format=RGBA",
          "!",
          "pngenc",
          "compression-level=0",
          "!",
          "fdsink",
          "fd=1",
        ],
        0,
      ),
    );
    expect(all).toHaveLength(FRAMES);
    expect(lagging.length).toBeGreaterThan(0);
    // The output pipe holds less than one frame: while unread, the source's frames were dropped.
    expect(lagging.length).toBeLessThan(FRAMES);
    const last = decodePng(lagging[lagging.length - 1] as Buffer);
    const newest = decodePng(all[all.length - 1] as Buffer);
    expect(Buffer.from(last.rgba).equals(Buffer.from(newest.rgba))).toBe(true);
  });
});
