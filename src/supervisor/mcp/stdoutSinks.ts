import { write as fsWrite } from "node:fs";
import { Socket } from "node:net";

/** Where the MCP frames finally go: one write at a time, `done` called once when all of it is out. */
export interface StdoutSink {
  write(data: Buffer, done: (err: Error | null) => void): void;
}

/** How long a non-blocking fd that answered EAGAIN waits before the write is tried again. */
const EAGAIN_RETRY_MS = 5;

/**
 * An asynchronous stream (a pipe or socket stdout on Linux and macOS, a Windows console):
 * libuv writes what the kernel takes and polls for the rest, so the event loop never waits.
 * Completion is the write's callback, so no 'drain' listener is ever added.
 */
export function streamSink(target: NodeJS.WritableStream & { destroyed?: boolean }): StdoutSink {
  return {
    write(data, done) {
      let settled = false;
      const finish = (err: Error | null) => {
        if (settled) return;
        settled = true;
        target.removeListener("close", onClose);
        done(err);
      };
      const onClose = () => finish(new Error("stdout closed"));
      if (target.destroyed) {
        finish(new Error("stdout closed"));
        return;
      }
      target.once("close", onClose);
      target.write(data, (err?: Error | null) => finish(err ?? null));
    },
  };
}

/**
 * A file descriptor written on libuv's thread pool (fs.write): a write that would block (a
 * terminal or a Windows pipe nobody reads, a slow file) holds one pool thread, never the event
 * loop. Partial writes continue where they stopped; EAGAIN (an fd someone else made
 * non-blocking) is tried again shortly.
 */
export function fdSink(fd: number): StdoutSink {
  return {
    write(data, done) {
      const step = (offset: number) => {
        fsWrite(fd, data, offset, data.length - offset, null, (err, n) => {
          if (err) {
            if (err.code === "EAGAIN") setTimeout(() => step(offset), EAGAIN_RETRY_MS);
            else done(err);
            return;
          }
          if (offset + n < data.length) step(offset + n);
          else done(null);
        });
      };
      step(0);
    },
  };
}

/** What `stdoutSink` needs of process.stdout. */
export type StdoutStream = NodeJS.WritableStream & { destroyed?: boolean; isTTY?: boolean; fd?: number };

/**
 * Whether Node writes this stdout synchronously: a terminal on Linux and macOS (tty.js makes it
 * blocking), a file (a SyncWriteStream, not a socket), and any pipe or file on Windows (lib/net.js
 * makes fd 1 and 2 blocking there). A client that stops reading then stops the whole event loop.
 * A pipe or socket on Linux and macOS is asynchronous (libuv sets O_NONBLOCK), and so is a
 * Windows console.
 */
export function writesSynchronously(stdout: StdoutStream, platform: NodeJS.Platform): boolean {
  if (platform === "win32") return stdout.isTTY !== true;
  return stdout.isTTY === true || !(stdout instanceof Socket);
}

/**
 * The sink for process.stdout: the thread pool where Node would write synchronously, else the
 * stream itself, which also keeps its EPIPE and 'close' events for the shutdown path.
 */
export function stdoutSink(stdout: StdoutStream, platform: NodeJS.Platform = process.platform): StdoutSink {
  const fd = typeof stdout.fd === "number" ? stdout.fd : 1;
  return writesSynchronously(stdout, platform) ? fdSink(fd) : streamSink(stdout);
}
