import { Writable } from "node:stream";
import { type StdoutSink, streamSink } from "./stdoutSinks.js";

export interface StdoutQueueOptions {
  /**
   * Bytes queued (written by the transport, not yet taken by the sink) past which `onPressure(true)`
   * is called; `onPressure(false)` once no more than half of it is left. Unbounded when absent.
   */
  limitBytes?: number;
  onPressure?: (full: boolean) => void;
  /** The sink failed (EPIPE, a closed stdout): what is queued is dropped, nothing more is written. */
  onGone?: (err: Error) => void;
}

/**
 * The MCP frames on their way to stdout, in order, with their bytes accounted.
 *
 * The MCP SDK's stdio transport adds `stdout.once("drain")` for every message it sends while
 * stdout is backed up, so a burst of answers to a slow reader would pile one listener per answer
 * onto process.stdout (MaxListenersExceededWarning past ten). Here the transport's writes always
 * succeed at once and queue in this object; at most one write to the sink is outstanding, and it
 * carries everything queued meanwhile as one buffer. The sink reports completion by callback, so
 * no 'drain' listener is added at all, and the event loop never waits for the reader (see
 * stdoutSinks.ts for the kinds of stdout that Node would otherwise write synchronously).
 *
 * The queue is bounded by its owner: past `limitBytes` it calls `onPressure(true)`, and the
 * serve verb stops reading requests until `onPressure(false)`.
 */
export class StdoutQueue {
  readonly stream: Writable;
  private frames: Buffer[] = [];
  private bytes = 0;
  private high = 0;
  private busy = false;
  private gone = false;
  private full = false;
  private idle: Array<() => void> = [];

  constructor(
    private readonly sink: StdoutSink,
    private readonly opts: StdoutQueueOptions = {},
  ) {
    this.stream = new Writable({
      // Never report backpressure to the transport: this queue is the only one.
      highWaterMark: Number.MAX_SAFE_INTEGER,
      decodeStrings: true,
      write: (chunk: Buffer, _encoding, callback) => {
        this.push(chunk);
        callback();
      },
    });
  }

  /** Bytes written by the transport that the sink has not finished writing. */
  get queuedBytes(): number {
    return this.bytes;
  }

  /** The most `queuedBytes` has ever been. */
  get peakBytes(): number {
    return this.high;
  }

  /**
   * Resolves true once everything queued is out, false if `timeoutMs` passed first (a client
   * that never reads cannot hold the exit) or the sink is gone with frames dropped.
   */
  flush(timeoutMs: number): Promise<boolean> {
    if (this.bytes === 0) return Promise.resolve(!this.gone || this.frames.length === 0);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.idle = this.idle.filter((f) => f !== done);
        resolve(false);
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve(!this.gone);
      };
      this.idle.push(done);
    });
  }

  private push(chunk: Buffer): void {
    if (this.gone) return;
    this.frames.push(chunk);
    this.bytes += chunk.length;
    if (this.bytes > this.high) this.high = this.bytes;
    const limit = this.opts.limitBytes;
    if (!this.full && limit !== undefined && this.bytes > limit) {
      this.full = true;
      this.opts.onPressure?.(true);
    }
    this.pump();
  }

  private pump(): void {
    if (this.busy || this.gone || this.frames.length === 0) return;
    const data = this.frames.length === 1 ? this.frames[0] : Buffer.concat(this.frames);
    this.frames = [];
    this.busy = true;
    this.sink.write(data, (err) => {
      this.busy = false;
      this.bytes -= data.length;
      if (err) this.fail(err);
      else this.relieve();
      this.pump();
      if (this.bytes === 0) this.settle();
    });
  }

  private relieve(): void {
    const limit = this.opts.limitBytes;
    if (this.full && limit !== undefined && this.bytes <= limit / 2) {
      this.full = false;
      this.opts.onPressure?.(false);
    }
  }

  private fail(err: Error): void {
    if (this.gone) return;
    this.gone = true;
    this.bytes = 0;
    this.frames = [];
    this.opts.onGone?.(err);
  }

  private settle(): void {
    const waiting = this.idle;
    this.idle = [];
    for (const f of waiting) f();
  }
}

/**
 * A writer for the transport over a Node stream (kept for callers that have a stream, not a
 * sink): the same queue, unbounded, over `streamSink(target)`. A closed target drops what is
 * queued quietly; the shutdown path watches the target itself.
 */
export function singleDrainWriter(target: NodeJS.WritableStream & { destroyed?: boolean }): Writable {
  return new StdoutQueue(streamSink(target)).stream;
}
