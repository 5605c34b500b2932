import { type ChildProcess, spawn } from "node:child_process";
import { statSync } from "node:fs";
import { inflateSync } from "node:zlib";
import { uiError } from "../../shared/errors.js";

/**
 * Frames of one PipeWire stream (a portal screen-cast node), read by a GStreamer child kept
 * running for the stream's life: `pipewiresrc` → RGBA → PNG at compression level 0 on its
 * stdout. PNG is only the framing (each frame carries its own size, so a window that is resized
 * mid-stream needs nothing special); level 0 stores the rows, so decoding is a copy. The child
 * holds no pixels of its own beyond GStreamer's buffers and is ended with the stream.
 *
 * The compositor sends a frame when the picture changes (mutter: on damage), so the latest
 * frame is the picture as of the last change; `seq` counts frames, for a caller that needs one
 * newer than something it saw.
 */

const GST = "/usr/bin/gst-launch-1.0";
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** A frame larger than this (bytes of RGBA) ends the reader: no screen needs more. */
const MAX_FRAME_BYTES = 16384 * 16384 * 4;
/** Bytes of unparsed output kept at most before the child is ended as misbehaving. */
const MAX_PENDING = 64 * 1024 * 1024 + 1024;
const MAX_FPS = 10;

export interface StreamFrame {
  readonly width: number;
  readonly height: number;
  /** RGBA, rows packed (width × 4 bytes). */
  readonly rgba: Uint8Array;
  readonly seq: number;
  /** Date.now() when the frame was complete. */
  readonly receivedAt: number;
}

/** The GStreamer program must be a root-owned file nobody else can write. */
function trustedGst(): string {
  try {
    const st = statSync(GST);
    if (st.isFile() && st.uid === 0 && (st.mode & 0o022) === 0) return GST;
  } catch {
    // missing
  }
  throw uiError("platform_unavailable", "GStreamer is not installed; screen-cast frames cannot be read.");
}

/**
 * The reader's gst-launch arguments behind `source` (the PipeWire node's pipewiresrc; a test
 * source in tests). pipewiresrc negotiates at least 8 buffers with the
 * compositor and hands them downstream oldest first, so a reader slower than the stream (RGBA
 * conversion and PNG framing of a whole monitor on a loaded machine: about 1 frame a second at
 * load 17 on two cores) would fall up to 8 frames behind: a picture seconds old, a window shown
 * there although a cover has since come over it. A leaky queue of one buffer right behind the
 * source keeps only the newest frame in front of the slow stages; the last frame of a burst is
 * never the one dropped.
 */
export function readerPipeline(source: readonly string[]): string[] {
  return [
    "-q",
    ...source,
    "!",
    // At most 10 frames a second from the compositor (mutter still sends the last change of
    // a burst after the interval), so an animation does not keep a core busy.
    `video/x-raw,max-framerate=${MAX_FPS}/1`,
    "!",
    "queue",
    "max-size-buffers=1",
    "max-size-bytes=0",
    "max-size-time=0",
    "leaky=downstream",
    "!",
    "videoconvert",
    "!",
    "video/x-raw,format=RGBA",
    "!",
    "pngenc",
    "compression-level=0",
    "snapshot=false",
    "!",
    "fdsink",
    "fd=1",
    "sync=false",
  ];
}

const PASSED_ENV = ["XDG_RUNTIME_DIR", "PIPEWIRE_REMOTE", "PIPEWIRE_RUNTIME_DIR", "HOME", "PATH"];

export class PipewireFrames {
  private child: ChildProcess | null;
  private pending: Buffer = Buffer.alloc(0);
  private last: StreamFrame | null = null;
  /** The newest complete PNG, decoded only when someone asks for a frame. */
  private raw: { png: Buffer; seq: number; at: number } | null = null;
  private seq = 0;
  private waiters: Array<{ after: number; resolve: (f: StreamFrame) => void; reject: (e: unknown) => void }> =
    [];
  private endedFlag = false;

  constructor(readonly node: number) {
    const env: Record<string, string> = { GST_DEBUG: "0" };
    for (const k of PASSED_ENV) {
      const v = process.env[k];
      if (v !== undefined) env[k] = v;
    }
    const child = spawn(trustedGst(), readerPipeline(["pipewiresrc", `path=${node}`, "always-copy=true"]), {
      env,
      stdio: ["ignore", "pipe", "ignore"],
    });
    this.child = child;
    child.stdout?.on("data", (d: Buffer) => this.feed(d));
    child.once("error", () => this.end());
    child.once("exit", () => this.end());
  }

  get ended(): boolean {
    return this.endedFlag;
  }

  latest(): StreamFrame | null {
    const r = this.raw;
    if (!r) return null;
    if (this.last?.seq === r.seq) return this.last;
    let decoded: { width: number; height: number; rgba: Uint8Array };
    try {
      decoded = decodePng(r.png);
    } catch {
      this.close();
      return null;
    }
    this.last = { ...decoded, seq: r.seq, receivedAt: r.at };
    return this.last;
  }

  /** The newest frame's number (0 before the first), without decoding it. */
  get latestSeq(): number {
    return this.raw?.seq ?? 0;
  }

  /** The first frame with seq > `after` (the next one to arrive, for after = latest's seq). */
  next(after: number, timeoutMs: number): Promise<StreamFrame> {
    if (this.raw && this.raw.seq > after) {
      const f = this.latest();
      if (f) return Promise.resolve(f);
    }
    if (this.endedFlag) return Promise.reject(uiError("target_gone", "The screen-cast stream has ended."));
    return new Promise((resolve, reject) => {
      const w = { after, resolve, reject };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(uiError("timeout", "No screen-cast frame arrived in time."));
      }, timeoutMs);
      w.resolve = (f) => {
        clearTimeout(timer);
        resolve(f);
      };
      w.reject = (e) => {
        clearTimeout(timer);
        reject(e);
      };
      this.waiters.push(w);
    });
  }

  /** A frame: the latest if there is one, else the first to arrive. */
  async frame(timeoutMs: number): Promise<StreamFrame> {
    return this.latest() ?? this.next(0, timeoutMs);
  }

  private feed(d: Buffer): void {
    this.pending = this.pending.length === 0 ? d : Buffer.concat([this.pending, d]);
    if (this.pending.length > MAX_PENDING) {
      this.close();
      return;
    }
    for (;;) {
      const size = completePng(this.pending);
      if (size === 0) return;
      if (size < 0) {
        this.close();
        return;
      }
      // Copied out: the pending buffer is reused for what follows.
      const png = Buffer.from(this.pending.subarray(0, size));
      this.pending = this.pending.subarray(size);
      this.seq += 1;
      this.raw = { png, seq: this.seq, at: Date.now() };
      if (this.waiters.length > 0) {
        const f = this.latest();
        if (!f) return;
        const ready = this.waiters.filter((w) => f.seq > w.after);
        this.waiters = this.waiters.filter((w) => f.seq <= w.after);
        for (const w of ready) w.resolve(f);
      }
    }
  }

  private end(): void {
    if (this.endedFlag) return;
    this.endedFlag = true;
    this.child = null;
    this.last = null;
    this.raw = null;
    this.pending = Buffer.alloc(0);
    const gone = uiError("target_gone", "The screen-cast stream has ended.");
    for (const w of this.waiters) w.reject(gone);
    this.waiters = [];
  }

  /** Ends the reader (by its PID) and drops the frames. */
  close(): void {
    const c = this.child;
    this.end();
    if (c && c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  }
}

/**
 * Bytes of the first complete PNG at the start of `buf`: 0 when more is needed, -1 when `buf`
 * does not start with a PNG.
 */
export function completePng(buf: Buffer): number {
  if (buf.length < 8) return buf.length === 0 || PNG_SIGNATURE.subarray(0, buf.length).equals(buf) ? 0 : -1;
  if (!buf.subarray(0, 8).equals(PNG_SIGNATURE)) return -1;
  let at = 8;
  for (;;) {
    if (buf.length < at + 8) return 0;
    const len = buf.readUInt32BE(at);
    if (len > MAX_FRAME_BYTES + 1024 * 1024) return -1;
    const type = buf.toString("latin1", at + 4, at + 8);
    const end = at + 12 + len;
    if (buf.length < end) return 0;
    if (type === "IEND") return end;
    at = end;
  }
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** One 8-bit RGBA or RGB, non-interlaced PNG → packed RGBA. */
export function decodePng(png: Buffer): { width: number; height: number; rgba: Uint8Array } {
  let at = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (at + 8 <= png.length) {
    const len = png.readUInt32BE(at);
    const type = png.toString("latin1", at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + len);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8];
      const colour = data[9];
      const interlace = data[12];
      if (depth !== 8 || interlace !== 0 || (colour !== 6 && colour !== 2))
        throw new Error("unsupported PNG layout");
      channels = colour === 6 ? 4 : 3;
    } else if (type === "IDAT") idat.push(data);
    else if (type === "IEND") break;
    at += 12 + len;
  }
  if (width === 0 || height === 0 || width * height * 4 > MAX_FRAME_BYTES) throw new Error("bad PNG size");
  const raw = inflateSync(Buffer.concat(idat));
  const rowBytes = width * channels;
  if (raw.length < height * (rowBytes + 1)) throw new Error("short PNG data");
  const out = new Uint8Array(width * height * 4);
  let prev = new Uint8Array(rowBytes);
  let cur = new Uint8Array(rowBytes);
  for (let y = 0; y < height; y++) {
    const base = y * (rowBytes + 1);
    const filter = raw[base];
    if (filter === 0) cur.set(raw.subarray(base + 1, base + 1 + rowBytes));
    else
      for (let i = 0; i < rowBytes; i++) {
        const x = raw[base + 1 + i];
        const a = i >= channels ? cur[i - channels] : 0;
        const b = prev[i];
        const c = i >= channels ? prev[i - channels] : 0;
        let v: number;
        switch (filter) {
          case 0:
            v = x;
            break;
          case 1:
            v = x + a;
            break;
          case 2:
            v = x + b;
            break;
          case 3:
            v = x + ((a + b) >> 1);
            break;
          case 4:
            v = x + paeth(a, b, c);
            break;
          default:
            throw new Error("bad PNG filter");
        }
        cur[i] = v & 0xff;
      }
    const o = y * width * 4;
    if (channels === 4) out.set(cur, o);
    else
      for (let x = 0; x < width; x++) {
        out[o + x * 4] = cur[x * 3];
        out[o + x * 4 + 1] = cur[x * 3 + 1];
        out[o + x * 4 + 2] = cur[x * 3 + 2];
        out[o + x * 4 + 3] = 255;
      }
    [prev, cur] = [cur, prev];
  }
  return { width, height, rgba: out };
}
