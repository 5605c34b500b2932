import { parentPort, Worker } from "node:worker_threads";
import koffi from "koffi";
import { currentWindowsIdentity, objectOwnerSid, processIdentity } from "../../os/win32/account.js";
import * as w from "../../os/win32/ffi.js";
import type { LeaseScope } from "../endpoint.js";
import { windowsScope } from "../endpoint.js";
import {
  type FromPipeLink,
  FromPipeReaderSchema,
  type PipeReaderWorkerData,
  type ToPipeLink,
  ToPipeLinkSchema,
  type ToPipeReader,
} from "../linkMessages.js";
import {
  armOverlapped,
  createManualEvent,
  ERROR_IO_PENDING,
  FILE_FLAG_OVERLAPPED,
  validHandle,
  WAIT_OBJECT_0,
} from "./overlapped.js";

/**
 * The client end of the lease pipe, in a worker thread that lives as long as its LeaseClient
 * (see windowsPipeLink.ts), so its start-up is paid once. Per connection: opens the scope's
 * pipe, refuses a server that is not this user in this session, then writes what the client
 * sends (each write bounded by the connect deadline). Reads block in a thread of their own
 * (windowsPipeReaderWorker.ts): a wait parked on koffi's async pool would hold one of libuv's
 * four shared threads for the life of the connection (measured under Wine: four links starved
 * everything else in the process, the broker included).
 */

const GENERIC_READ = 0x80000000;
const GENERIC_WRITE = 0x40000000;
const OPEN_EXISTING = 3;
// The server may learn who we are, never act as us (a squatter gains nothing from impersonation).
const SECURITY_SQOS_PRESENT = 0x00100000;
const SECURITY_IDENTIFICATION = 0x00010000;
const ERROR_PIPE_BUSY = 231;
const WRITE_WAIT_MS = 2000;

const port = parentPort;
if (!port) throw new Error("windowsPipeLinkWorker runs as a worker thread");
const send = (m: FromPipeLink) => port.postMessage(m);

type ConnectRequest = Extract<ToPipeLink, { t: "connect" }>;

interface Connection {
  id: number;
  pipe: number;
  timeoutMs: number;
  closing: boolean;
}

class Refused extends Error {}

/** Opens the pipe, waiting for a free instance within the deadline. */
function openPipe(name: string, timeoutMs: number): number {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const h = w.CreateFileW(
      name,
      GENERIC_READ | GENERIC_WRITE,
      0,
      null,
      OPEN_EXISTING,
      FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION,
      0,
    );
    if (validHandle(h)) return h;
    const err: number = w.GetLastError();
    const left = deadline - Date.now();
    // Every instance busy (the broker is between accepts): wait for one, within the deadline.
    if (err !== ERROR_PIPE_BUSY || left <= 0)
      throw new Refused("No lease broker is listening in this sign-in session.");
    w.WaitNamedPipeW(name, Math.max(1, Math.min(left, 500)));
  }
}

/** The server end must be a process of the scope's user in the scope's session. */
function servedByScope(pipe: number, scope: LeaseScope): boolean {
  // The pipe's owner: the broker sets it to its user's SID, and nobody else can (a process id,
  // by contrast, can be reused by another user's process after a squatter's creator exited).
  if (objectOwnerSid(pipe) !== scope.user) return false;
  // And the process recorded as its server: this user in this session, read from one handle.
  const pid = [0];
  if (!w.GetNamedPipeServerProcessId(pipe, pid)) return false;
  const serverPid = pid[0] ?? 0;
  if (!(serverPid > 0)) return false;
  const server = processIdentity(serverPid);
  return server?.sid === scope.user && server.session === scope.instance_session;
}

const writeEvent = createManualEvent();
// 1 while the connection being read is closing: the reader stops at its next wait slice even
// if a read it issued after our w.CancelIoEx escaped the cancellation.
const closingFlag = new Int32Array(new SharedArrayBuffer(4));
let conn: Connection | null = null;
let deferred: ConnectRequest | null = null;
let shuttingDown = false;

const readerData: PipeReaderWorkerData = { closing: closingFlag };
const reader = new Worker(new URL("./windowsPipeReaderWorker.js", import.meta.url), {
  workerData: readerData,
  stdout: true,
  stderr: true,
});

function connect(m: ConnectRequest): void {
  let pipe: number | null = null;
  try {
    let scope = m.scope;
    if (!scope) {
      try {
        scope = windowsScope(currentWindowsIdentity(), m.env);
      } catch {
        throw new Refused("The Windows user SID or session id could not be determined.");
      }
    }
    pipe = openPipe(scope.endpoint, m.timeout_ms);
    if (!servedByScope(pipe, scope))
      throw new Refused("The lease pipe is not served by this user's broker in this sign-in session.");
    conn = { id: m.conn, pipe, timeoutMs: m.timeout_ms, closing: false };
    Atomics.store(closingFlag, 0, 0);
    const read: ToPipeReader = { t: "read", conn: m.conn, pipe: pipe.toString() };
    reader.postMessage(read);
    send({ t: "open", conn: m.conn, scope });
  } catch (e) {
    if (pipe !== null && conn?.pipe !== pipe) w.CloseHandle(pipe);
    send({
      t: "refused",
      conn: m.conn,
      message: e instanceof Refused ? e.message : "The lease pipe could not be opened.",
    });
  }
}

/** Starts closing the connection; it ends when the reader has let go of the pipe. */
function close(c: Connection): void {
  if (c.closing) return;
  c.closing = true;
  Atomics.store(closingFlag, 0, 1);
  w.CancelIoEx(c.pipe, null);
}

function ended(id: number): void {
  if (!conn || conn.id !== id) return;
  w.CloseHandle(conn.pipe);
  send({ t: "closed", conn: id });
  conn = null;
  if (shuttingDown) process.exit(0);
  const next = deferred;
  deferred = null;
  if (next) connect(next);
}

function write(c: Connection, frame: Uint8Array): void {
  if (c.closing) return;
  const mem = koffi.alloc("uint8_t", frame.length);
  const ov = koffi.alloc(w.OVERLAPPED, 1);
  try {
    koffi.encode(mem, "uint8_t", Array.from(frame), frame.length);
    armOverlapped(ov, writeEvent);
    const ok: number = w.WriteFile(c.pipe, mem, frame.length, null, ov);
    if (!ok && w.GetLastError() !== ERROR_IO_PENDING) {
      close(c);
      return;
    }
    const n = [0];
    // A small frame into a 64 KiB pipe completes at once unless the broker stopped reading;
    // bounded well below the client's close grace, so shutdown never has to terminate us.
    if (w.WaitForSingleObject(writeEvent, Math.min(c.timeoutMs, WRITE_WAIT_MS)) !== WAIT_OBJECT_0) {
      // A broker that stopped reading: give up on it rather than block this link.
      w.CancelIoEx(c.pipe, ov);
      w.GetOverlappedResult(c.pipe, ov, n, 1);
      close(c);
      return;
    }
    if (!w.GetOverlappedResult(c.pipe, ov, n, 0) || n[0] !== frame.length) close(c);
  } finally {
    koffi.free(ov);
    koffi.free(mem);
  }
}

reader.on("message", (raw: unknown) => {
  const m = FromPipeReaderSchema.safeParse(raw);
  if (!m.success) return;
  const r = m.data;
  if (r.t === "ready") send({ t: "ready" });
  else if (r.t === "data" && conn?.id === r.conn && !conn.closing)
    send({ t: "data", conn: r.conn, chunk: r.chunk });
  else if (r.t === "eof") ended(r.conn);
});
// Without its reader the link is useless: end, and the next connect starts a new worker.
reader.on("exit", () => {
  if (conn) {
    w.CloseHandle(conn.pipe);
    send({ t: "closed", conn: conn.id });
  }
  process.exit(1);
});

port.on("message", (raw: unknown) => {
  const m = ToPipeLinkSchema.safeParse(raw);
  if (!m.success) return;
  const msg = m.data;
  if (msg.t === "shutdown") {
    shuttingDown = true;
    deferred = null;
    if (conn) close(conn);
    else process.exit(0);
  } else if (shuttingDown) {
    // Nothing new once shutting down.
  } else if (msg.t === "connect") {
    if (conn) {
      // The previous connection first lets go of its pipe.
      close(conn);
      deferred = msg;
    } else connect(msg);
  } else if (conn?.id === msg.conn) {
    if (msg.t === "write") write(conn, msg.frame);
    else close(conn);
  }
});
