import { stat } from "node:fs";
import { connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Desk, win } from "../support/consent.js";
import { AUDIENCE, ISSUER, makeIssuer } from "../support/remote.js";
import { type InProcessRemote, remoteOptions, startRemoteInProcess } from "../support/remoteInProcess.js";
import { scratchDir } from "../support/scratch.js";

// An idle keep-alive connection and a request that arrives while the server's loop is busy.
// A client may reuse a connection until the idle time the server advertises (`Keep-Alive:
// timeout=N`, less its own margin). When the server's loop is late (a busy supervisor), the
// request can be in the socket while the server's own idle timer is already overdue: a server
// that closes at exactly N seconds then drops a request it had in hand, and the client sees
// its POST fail with a reset ("fetch failed"). The server has to keep idle connections longer
// than it advertises.

let remote: InProcessRemote;
let port: number;
const sockets: Socket[] = [];

beforeAll(async () => {
  const desk = new Desk([win(1)]);
  const issuer = await makeIssuer(scratchDir("keepalive"));
  const oauth = { issuer: ISSUER, audience: AUDIENCE, jwks: issuer.jwksFile };
  remote = await startRemoteInProcess(
    desk,
    remoteOptions({ oauth: { ...oauth, maxLifetimeSeconds: 3600, clockSkewSeconds: 60 } }),
  );
  port = Number(new URL(remote.url).port);
}, 60_000);

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await remote?.close();
});

const REQUEST = () => `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n\r\n`;

/** Collects what the server sends; `next()` resolves with the next complete response's head and body. */
function rawClient() {
  const socket = netConnect(port, "127.0.0.1");
  sockets.push(socket);
  let buf = "";
  let closed = false;
  const waiters: Array<() => void> = [];
  socket.on("data", (d) => {
    buf += d.toString("latin1");
    for (const w of waiters.splice(0)) w();
  });
  socket.on("error", () => undefined);
  socket.on("close", () => {
    closed = true;
    for (const w of waiters.splice(0)) w();
  });
  const response = (): string | null => {
    const end = buf.indexOf("\r\n\r\n");
    if (end < 0) return null;
    const head = buf.slice(0, end);
    let bodyEnd = end + 4 + Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
    if (/transfer-encoding: chunked/i.test(head)) {
      const last = buf.indexOf("\r\n0\r\n\r\n", end);
      if (last < 0) return null;
      bodyEnd = last + 7;
    }
    if (buf.length < bodyEnd) return null;
    buf = buf.slice(bodyEnd);
    return head;
  };
  const next = async (): Promise<string | null> => {
    for (;;) {
      const r = response();
      if (r !== null) return r;
      if (closed) return null;
      await new Promise<void>((res) => waiters.push(res));
    }
  };
  return { socket, next, connected: new Promise((r) => socket.once("connect", r)) };
}

describe("idle keep-alive connections", () => {
  it("advertises an idle time, and a request sent within it is answered even when the loop is late", async () => {
    const c = rawClient();
    await c.connected;
    c.socket.write(REQUEST());
    const first = await c.next();
    expect(first).toMatch(/^HTTP\/1\.1 401/);
    const hint = /keep-alive: timeout=(\d+)/i.exec(first ?? "")?.[1];
    expect(hint).toBeDefined();
    const advertisedMs = Number(hint) * 1000;
    // Just inside the advertised idle time the client sends its next request; this thread (the
    // server's loop too) then stays busy until well past it, as a loaded supervisor would.
    // The busy stretch is an I/O callback (as a loaded server's are): the request arrives
    // after this turn's poll, so the next turn runs the overdue timers before reading it.
    await new Promise((r) => setTimeout(r, advertisedMs - 300));
    await new Promise<void>((done) =>
      stat(tmpdir(), () => {
        c.socket.write(REQUEST());
        const busyUntil = Date.now() + 1300;
        while (Date.now() < busyUntil) {
          // busy: the server's loop cannot read the request before its idle timer is overdue
        }
        done();
      }),
    );
    const second = await c.next();
    expect(second).toMatch(/^HTTP\/1\.1 401/);
  }, 30_000);
});
