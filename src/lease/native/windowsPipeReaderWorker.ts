import { parentPort, workerData } from "node:worker_threads";
import koffi from "koffi";
import type { FromPipeReader, PipeReaderWorkerData, ToPipeReader } from "../linkMessages.js";

/**
 * Reads the lease pipe for the link worker, blocking this thread (never libuv's shared pool):
 * overlapped ReadFile, then WaitForSingleObject in slices so a closing connection is noticed
 * even if a read slipped past the link's CancelIoEx. Posts each chunk, then "eof" when the
 * connection ends, and waits for the next one (the thread lives as long as the link worker).
 *
 * Its only inputs come from its own parent, the link worker, and are checked here by hand:
 * loading zod a second time costs about a second per link under Wine. The link worker checks
 * everything this thread sends with zod (FromPipeReaderSchema).
 */

const k32 = koffi.load("kernel32.dll");
const OVERLAPPED = koffi.struct("uiinspect_reader_OVERLAPPED", {
  Internal: "uintptr_t",
  InternalHigh: "uintptr_t",
  Offset: "uint32_t",
  OffsetHigh: "uint32_t",
  hEvent: "void *",
});
const ReadFile = k32.func("int __stdcall ReadFile(void *h, void *buf, uint32_t n, void *read, void *ov)");
const GetOverlappedResult = k32.func(
  "int __stdcall GetOverlappedResult(void *h, void *ov, _Out_ uint32_t *n, int wait)",
);
const CancelIoEx = k32.func("int __stdcall CancelIoEx(void *h, void *ov)");
const CreateEventW = k32.func("void * __stdcall CreateEventW(void *sa, int manual, int initial, void *name)");
const ResetEvent = k32.func("int __stdcall ResetEvent(void *h)");
const WaitForSingleObject = k32.func("uint32_t __stdcall WaitForSingleObject(void *h, uint32_t ms)");
const GetLastError = k32.func("uint32_t __stdcall GetLastError()");

const ERROR_IO_PENDING = 997;
const WAIT_OBJECT_0 = 0;
const WAIT_TIMEOUT = 258;
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
    /^\d{1,20}$/.test(m.pipe)
  );
}

if (!isReaderData(workerData)) throw new Error("windowsPipeReaderWorker: invalid workerData");
const flag = workerData.closing;
const closing = () => Atomics.load(flag, 0) === 1;

const event = CreateEventW(null, 1, 0, null) as bigint;
const ov = koffi.alloc(OVERLAPPED, 1);
const buf = koffi.alloc("uint8_t", BUF_SIZE);

/** Waits for the read in flight; false when the connection closes first (the read is then cancelled). */
function awaitRead(pipe: bigint): boolean {
  for (;;) {
    const r: number = WaitForSingleObject(event, SLICE_MS);
    if (r === WAIT_OBJECT_0) return true;
    if (r !== WAIT_TIMEOUT || closing()) {
      CancelIoEx(pipe, ov);
      // The kernel must be done with ov and buf before they are reused.
      GetOverlappedResult(pipe, ov, [0], 1);
      return false;
    }
  }
}

/** Blocks until the connection ends. */
function readUntilEnd(conn: number, pipe: bigint): void {
  while (!closing()) {
    ResetEvent(event);
    koffi.encode(ov, OVERLAPPED, { Internal: 0, InternalHigh: 0, Offset: 0, OffsetHigh: 0, hEvent: event });
    const ok: number = ReadFile(pipe, buf, BUF_SIZE, null, ov);
    if (!ok && GetLastError() !== ERROR_IO_PENDING) return;
    if (!awaitRead(pipe)) return;
    const n = [0];
    if (!GetOverlappedResult(pipe, ov, n, 0) || n[0] === 0) return;
    post({ t: "data", conn, chunk: new Uint8Array(koffi.view(buf, n[0]!)).slice() });
  }
}

port.on("message", (raw: unknown) => {
  if (!isReadRequest(raw)) return;
  readUntilEnd(raw.conn, BigInt(raw.pipe));
  post({ t: "eof", conn: raw.conn });
});
post({ t: "ready" });
