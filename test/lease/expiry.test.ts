import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { createConnection } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryLeaseAudit } from "../../src/lease/audit.js";
import { type BrokerHandle, startBroker } from "../../src/lease/broker.js";
import { LeaseClient } from "../../src/lease/client.js";
import { resolveLinuxScope } from "../../src/lease/endpoint.js";
import { encodeFrame, FrameDecoder, MAX_MESSAGE_BYTES } from "../../src/lease/protocol.js";
import { HOUR_MS } from "../../src/lease/state.js";
import { answerDialog, instanceOf, type Sandbox, sandbox, startXvfb, type Xvfb } from "./helpers.js";

// The broker in this process with an injected clock, spoken to over its real socket; the real
// zenity dialog is answered with a click.
let x: Xvfb;
let sb: Sandbox;
let broker: BrokerHandle;
let client: LeaseClient;
const target = spawn("sleep", ["300"], { stdio: "ignore" });
let now = Date.parse("2026-11-30T10:00:00Z");
const audit = new MemoryLeaseAudit();

beforeAll(async () => {
  x = await startXvfb();
  sb = sandbox(x.display);
  const scope = resolveLinuxScope(sb.env);
  broker = await startBroker({ env: sb.env, scope, clock: () => now, audit });
  client = new LeaseClient({ env: sb.env, scope, timeoutMs: 3000 });
});

afterAll(async () => {
  client?.close();
  await broker?.stop();
  target.kill("SIGKILL");
  x?.stop();
  if (sb) rmSync(sb.root, { recursive: true, force: true });
});

describe("lease expiry with an injected clock (real socket, real dialog)", () => {
  it("a lease approved for 1 h ends exactly at the shown expiry", async () => {
    const pending = client.request({ op: "activate", hours: 1, capabilities: ["inspect", "key"] }, 30_000);
    await answerDialog(x.display, "approve");
    expect(await pending).toMatchObject({ active: true, expires_at: "2026-11-30T11:00:00.000Z" });
    const inst = instanceOf(target.pid!, broker.scope.instance_session);
    expect(await client.validate("inspect", inst)).toBe("ok");
    await expect(client.validate("click", inst)).rejects.toMatchObject({ code: "action_not_allowed" });
    now += HOUR_MS - 1;
    expect(await client.validate("key", inst)).toBe("ok");
    now += 1;
    await expect(client.validate("inspect", inst)).rejects.toMatchObject({ code: "lease_revoked" });
    expect(await client.status()).toEqual({
      reachable: true,
      active: false,
      expires_at: null,
      capabilities: [],
    });
    const events = audit.events.map((e) => e.event);
    expect(events).toEqual(["broker_start", "activate", "validation_denied", "expire", "validation_denied"]);
    expect(audit.events.find((e) => e.event === "expire")).toMatchObject({
      expires_at: "2026-11-30T11:00:00.000Z",
    });
  });

  it("a dialog that nobody answers before the request's deadline is a timeout, not an approval", async () => {
    await expect(
      client.request({ op: "activate", hours: 2, capabilities: ["inspect"] }, 2000),
    ).rejects.toMatchObject({ code: "consent_timeout" });
    expect((await client.status()).active).toBe(false);
  });

  it("answers a wrong version or a malformed request with invalid_argument and drops oversized frames", async () => {
    const talk = (frames: Buffer[]) =>
      new Promise<{ replies: unknown[]; closed: boolean }>((resolve) => {
        const sock = createConnection(broker.scope.endpoint);
        const dec = new FrameDecoder();
        const replies: unknown[] = [];
        sock.on("connect", () => {
          for (const f of frames) sock.write(f);
        });
        sock.on("data", (c: Buffer) => replies.push(...dec.push(c)));
        sock.on("error", () => {});
        sock.on("close", () => resolve({ replies, closed: true }));
        setTimeout(() => {
          sock.destroy();
          resolve({ replies, closed: false });
        }, 1500);
      });
    const r1 = await talk([
      encodeFrame({ v: 2, id: "x1", timeout_ms: 1000, op: "status" }),
      encodeFrame({ v: 1, id: "x2", timeout_ms: 1000, op: "activate", hours: 3, capabilities: ["inspect"] }),
      encodeFrame({ v: 1, id: "x3", op: "status" }),
    ]);
    expect(r1.replies).toEqual([
      {
        v: 1,
        id: "x1",
        ok: false,
        error: { code: "invalid_argument", message: "Unsupported lease protocol version." },
      },
      {
        v: 1,
        id: "x2",
        ok: false,
        error: { code: "invalid_argument", message: "The lease request is invalid." },
      },
      {
        v: 1,
        id: "x3",
        ok: false,
        error: { code: "invalid_argument", message: "The lease request is invalid." },
      },
    ]);
    const head = Buffer.alloc(4);
    head.writeUInt32BE(MAX_MESSAGE_BYTES + 1, 0);
    const r2 = await talk([head]);
    expect(r2).toEqual({ replies: [], closed: true });
    expect(audit.events.at(-1)).toMatchObject({ event: "protocol_error", reason: "bad_frame" });
  });

  it("drops a client that never reads its answers; every other client is still answered", async () => {
    const sock = createConnection(broker.scope.endpoint);
    sock.on("error", () => {});
    const closed = new Promise<boolean>((resolve) => sock.on("close", () => resolve(true)));
    await new Promise((resolve) => sock.once("connect", resolve));
    sock.pause();
    // ~5000 answers of ~200 bytes: far past the kernel's socket buffer and MAX_PENDING_OUTPUT.
    const frames: Buffer[] = [];
    for (let i = 0; i < 5000; i++)
      frames.push(encodeFrame({ v: 1, id: `f${i}`, timeout_ms: 5000, op: "status" }));
    sock.write(Buffer.concat(frames));
    const dropped = await Promise.race([
      closed,
      new Promise<boolean>((r) => setTimeout(() => r(false), 10_000)),
    ]);
    sock.destroy();
    expect(dropped).toBe(true);
    expect((await client.status()).reachable).toBe(true);
  });
});
