import type { FrameTarget, RawImage } from "../../shared/platform.js";

/**
 * A frame laid out as the PNG encoder deflates it: each row of RGB led by its filter byte (0,
 * None). The capture port converts the screen's pixels straight into these rows, the masks and
 * grid paint them in place, and the encoder deflates the buffer as it is: between the screen
 * read and zlib the pixels are never copied.
 */
export class PngFrame {
  readonly width: number;
  readonly height: number;
  /** Filter byte + 3 × width pixel bytes, height times. */
  readonly rows: Uint8Array<ArrayBuffer>;
  /** What the capture port writes into: the pixel bytes, rows 3 × width + 1 apart. */
  readonly target: FrameTarget;

  constructor(width: number, height: number) {
    this.width = width;
    this.height = height;
    const stride = width * 3 + 1;
    this.rows = new Uint8Array(stride * height);
    this.target = { width, height, data: this.rows.subarray(1), stride };
  }

  get byteLength(): number {
    return this.rows.byteLength;
  }

  /** Whether `img` is this frame's pixels (the port filled the target rather than its own). */
  holds(img: RawImage): boolean {
    return (
      img.data.buffer === this.rows.buffer &&
      img.data.byteOffset === this.target.data.byteOffset &&
      img.channels === 3 &&
      img.width === this.width &&
      img.height === this.height &&
      img.stride === this.target.stride
    );
  }
}

/** How many idle frames a worker keeps, and how many bytes they may hold together. */
export interface FramePoolLimits {
  maxIdle: number;
  maxIdleBytes: number;
}

/**
 * The capture worker's frames, handed out shot after shot: a fresh 1.4 MB frame per 800×600
 * shot (and the row copy the encoder needed) made V8 collect every few shots for the external
 * memory alone. A frame is lent to one shot at a time (shots may overlap while they await the
 * display server) and comes back when the shot has encoded or failed. The pool keeps a few idle
 * frames of bounded total size; other sizes, or more, are left to the collector.
 *
 * What a lent frame holds from an earlier shot never shows: the port writes every pixel byte
 * (black where the screen has none), and a shot that fails after the read zeroes its frame.
 */
export class FramePool {
  private readonly idle: PngFrame[] = [];
  private readonly limits: FramePoolLimits;

  constructor(limits: FramePoolLimits = { maxIdle: 2, maxIdleBytes: 16 * 1024 * 1024 }) {
    this.limits = limits;
  }

  acquire(width: number, height: number): PngFrame {
    const i = this.idle.findIndex((f) => f.width === width && f.height === height);
    if (i >= 0) return this.idle.splice(i, 1)[0] as PngFrame;
    return new PngFrame(width, height);
  }

  release(frame: PngFrame): void {
    if (this.idle.includes(frame)) return;
    if (frame.byteLength > this.limits.maxIdleBytes) return;
    this.idle.unshift(frame);
    while (this.idle.length > this.limits.maxIdle || this.idleBytes() > this.limits.maxIdleBytes)
      this.idle.pop();
  }

  /** Frames kept for the next shots (tests, memory accounting). */
  get idleFrames(): number {
    return this.idle.length;
  }

  private idleBytes(): number {
    return this.idle.reduce((n, f) => n + f.byteLength, 0);
  }
}
