import { request as httpRequest } from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollWindows } from "../../src/supervisor/access/liveWindows.js";
import { Desk, until, win } from "../support/consent.js";
import { AUDIENCE, ISSUER, makeIssuer, RemoteClient } from "../support/remote.js";
import { type InProcessRemote, remoteOptions, startRemoteInProcess } from "../support/remoteInProcess.js";
import { scratchDir } from "../support/scratch.js";

// Fair admission: one identity holding 256 slow request bodies and as many long waits as it can
// starts while 31 other identities work. Slow bodies count as nothing until they arrive (and
// are cut off at the body deadline), waits count against their own identity's share, the
// attacker's connections are capped: every call of the 31 others is answered, none refused.
// (Their latency against a run without the attacker is in bench/remote.mjs, not here.)

const BODY_TIMEOUT_MS = 3000;
const HEADER_TIMEOUT_MS = 2000;
const SHARE = 32;
const CONNECTIONS = 64;

let sign: Awaited<ReturnType<typeof makeIssuer>>["sign"];
let remote: InProcessRemote;
let port: number;
const sockets: Socket[] = [];

beforeAll(async () => {
  const dir = scratchDir("fairness");
  const issuer = await makeIssuer(dir);
  sign = issuer.sign;
  const desk = new Desk([win(1), win(2)]);
  remote = await startRemoteInProcess(
    desk,
    remoteOptions({
      oauth: {
        issuer: ISSUER,
        audience: AUDIENCE,
        jwks: issuer.jwksFile,
        maxLifetimeSeconds: 3600,
        clockSkewSeconds: 60,
      },
      maxSessions: 128,
      maxInFlight: 256,
      maxInFlightPerIdentity: SHARE,
      maxConnectionsPerIdentity: CONNECTIONS,
      bodyTimeoutMs: BODY_TIMEOUT_MS,
      headerTimeoutMs: HEADER_TIMEOUT_MS,
    }),
  );
  port = Number(new URL(remote.url).port);
}, 60_000);

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await remote?.close();
});

/** A POST whose headers arrive at once and whose body trickles (one byte every 500 ms). */
function slowBody(token: string): { socket: Socket; answer: Promise<string> } {
  const socket = netConnect(port, "127.0.0.1");
  sockets.push(socket);
  let got = "";
  const answer = new Promise<string>((resolve) => {
    socket.on("data", (d) => {
      got += d.toString("latin1");
    });
    socket.once("close", () => resolve(got));
    socket.once("error", () => undefined);
  });
  socket.once("connect", () => {
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\n` +
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 4096\r\n\r\n{",
    );
    const t = setInterval(() => {
      if (socket.destroyed) clearInterval(t);
      else socket.write(" ");
    }, 500);
    socket.once("close", () => clearInterval(t));
  });
  return { socket, answer };
}

/** A tools/call on its own connection; resolves with the HTTP status once the answer has begun. */
function rawCall(token: string, sid: string, name: string, args: Record<string, unknown>): Promise<number> {
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: Math.floor(Math.random() * 1e9),
    method: "tools/call",
    params: { name, arguments: args },
  });
  return new Promise((resolve) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        path: "/mcp",
        method: "POST",
        agent: false,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": sid,
          "mcp-protocol-version": "2025-06-18",
          "content-length": Buffer.byteLength(body),
        },
      },
      (res) => {
        resolve(res.statusCode ?? 0);
        res.resume();
      },
    );
    req.on("socket", (s) => sockets.push(s));
    req.on("error", () => resolve(-1));
    req.end(body);
  });
}

describe("fair admission", () => {
  it("one identity with 256 slow bodies and long waits does not starve 31 others", async () => {
    const attackerToken = await sign({ sub: "attacker", scope: "uiinspect:observe uiinspect:inspect" });
    const attacker = await RemoteClient.connect(remote.url, { token: attackerToken });
    const sid = attacker.sessionId ?? "";
    // Long waits first: each on its own connection, more than the identity's share.
    const waits = Array.from({ length: SHARE + 8 }, () =>
      rawCall(attackerToken, sid, "wait_for_window", {
        title_contains: "never there",
        timeout_ms: 15_000,
        poll_interval_ms: 5000,
      }),
    );
    const overShare = Promise.all(waits.slice(SHARE));
    await new Promise((r) => setTimeout(r, 300));
    // Then 256 slow bodies.
    const slow = Array.from({ length: 256 }, () => slowBody(attackerToken));
    await new Promise((r) => setTimeout(r, 500));

    // 31 others, each its own identity, each a few calls in a row, all at once.
    const others = await Promise.all(
      Array.from({ length: 31 }, async (_, i) =>
        RemoteClient.connect(remote.url, {
          token: await sign({ sub: `agent-${i}`, scope: "uiinspect:observe" }),
        }),
      ),
    );
    const results = await Promise.all(
      others.map(async (c) => {
        const codes: (string | undefined)[] = [];
        for (let k = 0; k < 4; k++) {
          codes.push((await c.call("list_windows")).code);
          codes.push((await c.call("health_check")).code);
        }
        return codes;
      }),
    );
    expect(results.flat().filter((c) => c !== undefined)).toEqual([]);
    // Over its share, the attacker's own waits are refused; its admitted ones held their slots.
    expect(await overShare).toEqual(Array.from({ length: 8 }, () => 429));

    // The slow bodies: beyond the connection share refused at once (429), the rest cut off at
    // the body deadline (408); none of them ever answered as a request.
    const answers = await Promise.all(slow.map((s) => s.answer));
    const statuses = answers.map((a) => /^HTTP\/1\.1 (\d{3})/.exec(a)?.[1] ?? "none");
    expect(new Set(statuses)).toEqual(new Set(["429", "408"]));
    expect(statuses.filter((s) => s === "408").length).toBeLessThanOrEqual(CONNECTIONS);
    await Promise.all([...others.map((c) => c.close()), attacker.close()]);
  }, 90_000);

  it("overlapping polls of waits share one listing: one identity's waits cannot fill the capture queue", async () => {
    const capture = remote.sup.workers.capture;
    const original = capture.call.bind(capture);
    let lists = 0;
    capture.call = ((op: string, ...rest: unknown[]) => {
      if (op === "desktop.list") lists++;
      return (original as (...a: unknown[]) => unknown)(op, ...rest);
    }) as typeof capture.call;
    try {
      const polls = Array.from({ length: 32 }, () => pollWindows(remote.sup, new AbortController().signal));
      const results = await Promise.all(polls);
      expect(results.every((w) => w.length === results[0]?.length)).toBe(true);
      expect(lists).toBe(1);
      // A poll that gives up gets its own answer at once, without ending the shared one.
      const gone = new AbortController();
      const mine = pollWindows(remote.sup, gone.signal);
      const other = pollWindows(remote.sup, new AbortController().signal);
      gone.abort();
      await expect(mine).rejects.toMatchObject({ code: "cancelled" });
      expect((await other).length).toBe(results[0]?.length);
    } finally {
      capture.call = original;
    }
  });

  it("a connection that never finishes its headers is closed at the header deadline", async () => {
    const socket = netConnect(port, "127.0.0.1");
    sockets.push(socket);
    let closed = false;
    socket.once("close", () => {
      closed = true;
    });
    socket.once("error", () => undefined);
    let answer = "";
    socket.on("data", (d) => {
      answer += d.toString("latin1");
    });
    socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`);
    // Generous against a loaded machine: the property is that it ends, not how fast.
    await until(() => closed, "the server to close a connection with unfinished headers", 20_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  }, 30_000);

  it("an identity's own slow bodies do not count against its share: it still works past them", async () => {
    const token = await sign({ sub: "slow-opener", scope: "uiinspect:observe" });
    const held = Array.from({ length: 40 }, () => slowBody(token));
    // The same identity still opens a session and calls while its slow bodies hang.
    const c = await RemoteClient.connect(remote.url, { token });
    expect((await c.call("list_windows")).code).toBeUndefined();
    await c.close();
    for (const h of held) h.socket.destroy();
  }, 30_000);
});
