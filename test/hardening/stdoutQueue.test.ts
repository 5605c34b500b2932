import { execFileSync } from "node:child_process";
import { closeSync, constants, createReadStream, openSync } from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { fdSink, type StdoutSink, writesSynchronously } from "../../src/supervisor/mcp/stdoutSinks.js";
import { StdoutQueue } from "../../src/supervisor/mcp/stdoutWriter.js";
import { scratchDir } from "../support/scratch.js";

/** A sink the test completes by hand: what it was given, and the writes still outstanding. */
function manualSink() {
  const writes: Buffer[] = [];
  const pending: Array<(err: Error | null) => void> = [];
  const sink: StdoutSink = {
    write(data, done) {
      writes.push(data);
      pending.push(done);
    },
  };
  return {
    sink,
    writes,
    outstanding: () => pending.length,
    complete: (err: Error | null = null) => pending.shift()?.(err),
  };
}

const frame = (i: number, size = 100) => `${JSON.stringify({ i, pad: "p".repeat(size) })}\n`;
const ids = (bufs: Buffer[]) =>
  Buffer.concat(bufs)
    .toString("utf8")
    .trim()
    .split("\n")
    .map((l) => (JSON.parse(l) as { i: number }).i);

describe("StdoutQueue", () => {
  it("one write outstanding, everything queued meanwhile in the next one, in order, bytes accounted", () => {
    const m = manualSink();
    const q = new StdoutQueue(m.sink);
    expect(q.stream.write(frame(0))).toBe(true);
    for (let i = 1; i < 50; i++) expect(q.stream.write(frame(i))).toBe(true);
    expect(m.outstanding()).toBe(1);
    expect(m.writes).toHaveLength(1);
    const total = Array.from({ length: 50 }, (_, i) => Buffer.byteLength(frame(i))).reduce(
      (a, b) => a + b,
      0,
    );
    expect(q.queuedBytes).toBe(total);
    m.complete();
    expect(m.writes).toHaveLength(2);
    expect(m.outstanding()).toBe(1);
    m.complete();
    expect(q.queuedBytes).toBe(0);
    expect(ids(m.writes)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(q.peakBytes).toBe(total);
  });

  it("past the limit it reports pressure once, and relief once no more than half is left", () => {
    const m = manualSink();
    const events: boolean[] = [];
    const size = Buffer.byteLength(frame(0, 1000));
    const q = new StdoutQueue(m.sink, { limitBytes: 4 * size, onPressure: (full) => events.push(full) });
    for (let i = 0; i < 4; i++) q.stream.write(frame(i, 1000));
    expect(events).toEqual([]);
    q.stream.write(frame(4, 1000));
    q.stream.write(frame(5, 1000));
    expect(events).toEqual([true]);
    // The first frame goes out: five are left, more than half the limit.
    m.complete();
    expect(q.queuedBytes).toBe(5 * size);
    expect(events).toEqual([true]);
    m.complete();
    expect(q.queuedBytes).toBe(0);
    expect(events).toEqual([true, false]);
    expect(ids(m.writes)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("flush waits for every queued frame, and gives up at its bound when nothing is read", async () => {
    const m = manualSink();
    const q = new StdoutQueue(m.sink);
    q.stream.write(frame(0));
    q.stream.write(frame(1));
    const flushed = q.flush(60_000);
    m.complete();
    m.complete();
    expect(await flushed).toBe(true);
    q.stream.write(frame(2));
    expect(await q.flush(20)).toBe(false);
    expect(q.queuedBytes).toBe(Buffer.byteLength(frame(2)));
  });

  it("a failed sink drops what is queued, says so once, and takes nothing more", async () => {
    const m = manualSink();
    const gone: Error[] = [];
    const q = new StdoutQueue(m.sink, { onGone: (e) => gone.push(e) });
    q.stream.write(frame(0));
    q.stream.write(frame(1));
    const flushed = q.flush(60_000);
    m.complete(new Error("EPIPE"));
    expect(gone.map((e) => e.message)).toEqual(["EPIPE"]);
    expect(q.queuedBytes).toBe(0);
    expect(await flushed).toBe(false);
    q.stream.write(frame(2));
    expect(m.outstanding()).toBe(0);
    expect(m.writes).toHaveLength(1);
  });
});

describe("fdSink", () => {
  it("a blocking fd nobody reads holds a pool thread, not the event loop; all of it arrives", async () => {
    const dir = scratchDir("fdsink");
    const fifo = join(dir, "out.fifo");
    execFileSync("mkfifo", [fifo]);
    // Read-write: opening does not wait for a reader, and the fd stays blocking.
    const fd = openSync(fifo, constants.O_RDWR);
    const data = Buffer.alloc(4 * 1024 * 1024, 0x61);
    let written = false;
    fdSink(fd).write(data, (err) => {
      expect(err).toBeNull();
      written = true;
    });
    // 4 MiB cannot fit in the pipe: the write is blocked, yet the loop keeps turning.
    let turns = 0;
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setImmediate(r));
      turns++;
    }
    expect(turns).toBe(20);
    expect(written).toBe(false);
    let got = 0;
    const reader = createReadStream(fifo);
    reader.on("data", (b: Buffer | string) => {
      got += b.length;
    });
    for (let i = 0; i < 10_000 && !(written && got >= data.length); i++)
      await new Promise((r) => setTimeout(r, 5));
    reader.destroy();
    closeSync(fd);
    expect(written).toBe(true);
    expect(got).toBe(data.length);
  });
});

describe("writesSynchronously", () => {
  const tty = Object.assign(new Socket(), { isTTY: true });
  const pipe = new Socket();
  const file = new Writable({ write: (_c, _e, cb) => cb() });
  it("is true where Node blocks on process.stdout: a terminal or a file on POSIX, a pipe or file on Windows", () => {
    expect(writesSynchronously(tty, "linux")).toBe(true);
    expect(writesSynchronously(file, "linux")).toBe(true);
    expect(writesSynchronously(new PassThrough(), "darwin")).toBe(true);
    expect(writesSynchronously(pipe, "win32")).toBe(true);
    expect(writesSynchronously(file, "win32")).toBe(true);
  });
  it("is false for a pipe or socket on Linux and macOS and for a Windows console", () => {
    expect(writesSynchronously(pipe, "linux")).toBe(false);
    expect(writesSynchronously(pipe, "darwin")).toBe(false);
    expect(writesSynchronously(tty, "win32")).toBe(false);
  });
});
