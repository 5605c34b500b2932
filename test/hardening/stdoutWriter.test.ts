import { PassThrough, Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { describe, expect, it } from "vitest";
import { singleDrainWriter } from "../../src/supervisor/mcp/stdoutWriter.js";

/** A stdout whose reader is slow: a tiny buffer, drained only when the test says so. */
function slowStdout() {
  const received: Buffer[] = [];
  const pending: Array<() => void> = [];
  let maxDrainListeners = 0;
  const out = new Writable({
    highWaterMark: 64,
    write(chunk: Buffer, _e, cb) {
      received.push(chunk);
      pending.push(cb);
    },
  });
  const watch = setInterval(() => {
    maxDrainListeners = Math.max(maxDrainListeners, out.listenerCount("drain"));
  }, 1);
  return {
    out,
    received,
    /** Lets the reader catch up on everything written so far. */
    flush: () => {
      while (pending.length > 0) pending.shift()?.();
    },
    maxDrainListeners: () => {
      maxDrainListeners = Math.max(maxDrainListeners, out.listenerCount("drain"));
      return maxDrainListeners;
    },
    stop: () => clearInterval(watch),
  };
}

async function burst(wrap: boolean, n: number) {
  const slow = slowStdout();
  const transport = new StdioServerTransport(
    new PassThrough(),
    wrap ? singleDrainWriter(slow.out) : slow.out,
  );
  const sends = Array.from({ length: n }, (_, i) =>
    transport.send({ jsonrpc: "2.0", id: i, result: { i, pad: "p".repeat(100) } }),
  );
  const peak = slow.maxDrainListeners();
  // The reader catches up, repeatedly, until every answer is through.
  for (let i = 0; i < 10_000 && slow.received.length < n; i++) {
    slow.flush();
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(sends);
  slow.stop();
  const ids = Buffer.concat(slow.received)
    .toString("utf8")
    .trim()
    .split("\n")
    .map((l) => (JSON.parse(l) as { id: number }).id);
  return { peak: Math.max(peak, slow.maxDrainListeners()), ids };
}

describe("stdout under a burst to a slow reader", () => {
  it("the SDK alone piles one drain listener per answer (what the writer prevents)", async () => {
    const { peak, ids } = await burst(false, 50);
    expect(peak).toBeGreaterThan(10);
    expect(ids).toHaveLength(50);
  });

  it("through singleDrainWriter: at most one listener, every answer delivered in order", async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    try {
      const { peak, ids } = await burst(true, 500);
      expect(peak).toBeLessThanOrEqual(1);
      expect(ids).toEqual(Array.from({ length: 500 }, (_, i) => i));
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });
});
