import { renameSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { unixPathOf, verifiedPeerPath } from "../../src/platforms/x11/atspiPeer.js";
import { scratchDir } from "../support/scratch.js";

const listen = (path: string): Promise<Server> =>
  new Promise((resolve) => {
    const s = createServer(() => {});
    s.listen(path, () => resolve(s));
  });
const close = (s: Server): Promise<void> => new Promise((r) => s.close(() => r()));

/**
 * An application's peer address is the target's own claim: only a plain unix socket path is
 * accepted (dbus-next would run the program of a unixexec address, connect out for tcp).
 */
describe("AT-SPI peer addresses", () => {
  it("accepts a unix path (with a guid), unescaping it", () => {
    expect(unixPathOf("unix:path=/run/user/1000/at-spi2-socket-42")).toBe("/run/user/1000/at-spi2-socket-42");
    expect(unixPathOf("unix:path=/tmp/a%2db,guid=0123abcd")).toBe("/tmp/a-b");
  });

  it("refuses every other transport, list, option or unsafe path", () => {
    for (const a of [
      "unixexec:path=/bin/sh,argv1=-c",
      "tcp:host=203.0.113.1,port=4000",
      "nonce-tcp:host=localhost,port=1",
      "unix:abstract=/tmp/dbus-x",
      "unix:socket=/tmp/x",
      "unix:path=/tmp/x;unixexec:path=/bin/sh",
      "unix:path=relative/socket",
      "unix:path=/tmp/../etc/x",
      "unix:path=/tmp/a%2cb",
      "unix:path=/tmp/a:b",
      "unix:path=/tmp/x,runtime=yes",
      "unix:path=/tmp/%zz",
      "",
    ]) {
      expect(unixPathOf(a), a).toBeNull();
    }
  });

  it("refuses a path that is not a socket some process of ours listens on", () => {
    expect(verifiedPeerPath("unix:path=/etc/passwd", process.pid)).toBeNull();
    expect(verifiedPeerPath("unix:path=/nonexistent/socket", process.pid)).toBeNull();
  });

  it("accepts the one socket the process listens on at the path, and not once another is bound there", async () => {
    const dir = scratchDir("peer-path");
    const path = join(dir, "socket");
    const own = await listen(path);
    let other: Server | null = null;
    try {
      expect(verifiedPeerPath(`unix:path=${path}`, process.pid)).toBe(path);
      // The file moved away and another listener bound at the path: the kernel's table lists
      // both under it (here both are this process's, so only the count can tell).
      renameSync(path, `${path}.moved`);
      other = await listen(path);
      expect(verifiedPeerPath(`unix:path=${path}`, process.pid)).toBeNull();
    } finally {
      if (other) await close(other);
      await close(own);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
