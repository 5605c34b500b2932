import { parentPort, workerData } from "node:worker_threads";
import koffi from "koffi";
import * as w from "../../os/win32/ffi.js";
import type { FromPipeReader, PipeReaderWorkerData, ToPipeReader } from "../linkMessages.js";
import {
  armOverlapped,
  createManualEvent,
  ERROR_IO_PENDING,
  WAIT_OBJECT_0,
  WAIT_TIMEOUT,
} from "./overlapped.js";

/**
 * Reads the lease pipe for the link worker, blocking this thread (never libuv's shared pool):
 * overlapped w.ReadFile, then w.WaitForSingleObject in slices so a closing connection is noticed
 * even if a read slipped past the link's w.CancelIoEx. Posts each chunk, then "eof" when the
 * connection ends, and waits for the next one (the thread lives as long as the link worker).
 *
 * Its only inputs come from its own parent, the link worker, and are checked here by hand:
 * loading zod a second time costs about a second per link under Wine. The link worker checks
 * everything this thread sends with zod (FromPipeReaderSchema).
 */

const SLICE_MS = 250;
const BUF_SIZE = 64 * 1024;

const port = parentPort;
if (!port) throw new Error("windowsPipeReaderWorker runs as a worker thread");
const post = (m: FromPipeReader) => port.postMessage(m);

function isReaderData(v: unknown): v is PipeReaderWorkerData {
  if (typeof v !== "object" || v === null || !("closing" in v)) return false;
  const c = v.closing;
  return c instanceof Int32Array && c.buffer instanceof SharedArrayBuffer && c.length === 1;
}

function isReadRequest(v: unknown): v is ToPipeReader {
  if (typeof v !== "object" || v === null) return false;
  const m = v as Record<string, unknown>;
  return (
    m.t === "read" &&
    Number.isSafeInteger(m.conn) &&
    (m.conn as number) >= 1 &&
    typeof m.pipe === "string" &&
    /^\d{1,15}$/.test(m.pipe)
  );
}

if (!isReaderData(workerData)) throw new Error("windowsPipeReaderWorker: invalid workerData");
const flag = workerData.closing;
const closing = () => Atomics.load(flag, 0) === 1;

const event = createManualEvent();
const ov = koffi.alloc(w.OVERLAPPED, 1);
const buf = koffi.alloc("uint8_t", BUF_SIZE);

/** Waits for the read in flight; false when the connection closes first (the read is then cancelled). */
function awaitRead(pipe: number): boolean {
  for (;;) {
    const r: number = w.WaitForSingleObject(event, SLICE_MS);
    if (r === WAIT_OBJECT_0) return true;
    if (r !== WAIT_TIMEOUT || closing()) {
      w.CancelIoEx(pipe, ov);
      // The kernel must be done with ov and buf before they are reused.
      w.GetOverlappedResult(pipe, ov, [0], 1);
      return false;
    }
  }
}

/** Blocks until the connection ends. */
function readUntilEnd(conn: number, pipe: number): void {
  while (!closing()) {
    armOverlapped(ov, event);
    const ok: number = w.ReadFile(pipe, buf, BUF_SIZE, null, ov);
    if (!ok && w.GetLastError() !== ERROR_IO_PENDING) return;
    if (!awaitRead(pipe)) return;
    const n = [0];
    if (!w.GetOverlappedResult(pipe, ov, n, 0) || n[0] === 0) return;
    post({ t: "data", conn, chunk: new Uint8Array(koffi.view(buf, n[0] ?? 0)).slice() });
  }
}

port.on("message", (raw: unknown) => {
  if (!isReadRequest(raw)) return;
  readUntilEnd(raw.conn, Number(raw.pipe));
  post({ t: "eof", conn: raw.conn });
});
post({ t: "ready" });
