import { Writable } from "node:stream";

/**
 * The MCP SDK's stdio transport adds `stdout.once("drain")` for every message it sends while
 * stdout is backed up, so a burst of answers to a slow reader piles one listener per answer
 * onto process.stdout (MaxListenersExceededWarning past ten; stdout is asynchronous on Windows
 * pipes and on sockets). This writer sits in between: the transport's writes always succeed
 * at once and queue here, in order, and at most one write to the real stdout is waiting for
 * 'drain' at any time, so there is exactly one listener however many requests are in flight.
 * What is queued is what the transport would otherwise have handed to stdout's own buffer.
 */
export function singleDrainWriter(target: NodeJS.WritableStream & { destroyed?: boolean }): Writable {
  return new Writable({
    // Never report backpressure to the transport: the queue below is the only one.
    highWaterMark: Number.MAX_SAFE_INTEGER,
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, callback) {
      forward(target, chunk, callback);
    },
    writev(chunks, callback) {
      // Everything queued while the last write waited goes out as one write.
      const parts = chunks.map((c) => (typeof c.chunk === "string" ? Buffer.from(c.chunk, "utf8") : c.chunk));
      forward(target, Buffer.concat(parts), callback);
    },
  });
}

function forward(
  target: NodeJS.WritableStream & { destroyed?: boolean },
  data: string | Buffer,
  callback: () => void,
): void {
  // A closed stdout is the shutdown path's business; what is still queued is dropped quietly.
  if (target.destroyed) {
    callback();
    return;
  }
  if (target.write(data)) {
    callback();
    return;
  }
  const go = () => {
    target.removeListener("drain", go);
    target.removeListener("close", go);
    callback();
  };
  target.once("drain", go);
  target.once("close", go);
}
