import { rmSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { expect, it } from "vitest";
import { readLines } from "../../src/guardian/wire.js";
import { scratchDir } from "../support/scratch.js";

/**
 * A worker that dies with the guardian's answers still unread resets the connection: the
 * guardian's read fails with ECONNRESET. readline re-emits that on its interface; the line reader
 * must absorb it (the socket's own error and close listeners decide), never crash the guardian.
 */
it("a peer that resets the connection with answers unread is a close, not a crash", async () => {
  const dir = scratchDir("wire");
  const path = join(dir, "s.sock");
  const errors: string[] = [];
  try {
    const closed = await new Promise<boolean>((resolve, reject) => {
      const server = createServer((sock: Socket) => {
        sock.on("error", (e: NodeJS.ErrnoException) => errors.push(e.code ?? "error"));
        sock.on("close", () => {
          server.close();
          resolve(true);
        });
        readLines(
          sock,
          () => undefined,
          () => undefined,
        );
        // Answers the peer never reads.
        sock.write("ok\n".repeat(64));
      });
      server.on("error", reject);
      server.listen(path, () => {
        const peer = connect(path);
        peer.pause();
        peer.on("error", () => undefined);
        peer.once("connect", () => setTimeout(() => peer.destroy(), 50));
      });
    });
    expect(closed).toBe(true);
    expect(errors).toContain("ECONNRESET");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
