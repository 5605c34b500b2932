import { parentPort, workerData } from "node:worker_threads";
import koffi from "koffi";
import { windowsScope } from "../endpoint.js";
import { type FromPipeLink, PipeLinkWorkerDataSchema, ToPipeLinkSchema } from "../linkMessages.js";
import { currentWindowsIdentity, processSessionId, processUserSid, validHandle } from "./windowsIdentity.js";

/**
 * The client end of the lease pipe, in a worker thread (see link.ts). Opens the scope's pipe,
 * refuses a server that is not this user in this session, then shuttles bytes: one overlapped
 * read waited for on koffi's thread pool, writes bounded by the connect deadline.
 */

type Ptr = bigint | null;

const k32 = koffi.load("kernel32.dll");
const OVERLAPPED = koffi.struct("uiinspect_link_OVERLAPPED", {
  Internal: "uintptr_t",
  InternalHigh: "uintptr_t",
  Offset: "uint32_t",
  OffsetHigh: "uint32_t",
  hEvent: "void *",
});
const CreateFileW = k32.func(
  "void * __stdcall CreateFileW(str16 name, uint32_t access, uint32_t share, void *sa, uint32_t disposition, uint32_t flags, void *template)",
);
const WaitNamedPipeW = k32.func("int __stdcall WaitNamedPipeW(str16 name, uint32_t ms)");
const GetNamedPipeServerProcessId = k32.func(
  "int __stdcall GetNamedPipeServerProcessId(void *h, _Out_ uint32_t *pid)",
);
const ReadFile = k32.func("int __stdcall ReadFile(void *h, void *buf, uint32_t n, void *read, void *ov)");
const WriteFile = k32.func(
  "int __stdcall WriteFile(void *h, void *buf, uint32_t n, void *written, void *ov)",
);
const GetOverlappedResult = k32.func(
  "int __stdcall GetOverlappedResult(void *h, void *ov, _Out_ uint32_t *n, int wait)",
);
const CancelIoEx = k32.func("int __stdcall CancelIoEx(void *h, void *ov)");
const CreateEventW = k32.func("void * __stdcall CreateEventW(void *sa, int manual, int initial, void *name)");
const ResetEvent = k32.func("int __stdcall ResetEvent(void *h)");
const WaitForSingleObject = k32.func("uint32_t __stdcall WaitForSingleObject(void *h, uint32_t ms)");
const CloseHandle = k32.func("int __stdcall CloseHandle(void *h)");
const GetLastError = k32.func("uint32_t __stdcall GetLastError()");

const GENERIC_READ = 0x80000000;
const GENERIC_WRITE = 0x40000000;
const OPEN_EXISTING = 3;
const FILE_FLAG_OVERLAPPED = 0x40000000;
// The server may learn who we are, never act as us (a squatter gains nothing from impersonation).
const SECURITY_SQOS_PRESENT = 0x00100000;
const SECURITY_IDENTIFICATION = 0x00010000;
const ERROR_PIPE_BUSY = 231;
const ERROR_IO_PENDING = 997;
const WAIT_OBJECT_0 = 0;
const INFINITE = 0xffffffff;
const BUF_SIZE = 64 * 1024;

const port = parentPort;
if (!port) throw new Error("windowsPipeLinkWorker runs as a worker thread");
const send = (m: FromPipeLink) => port.postMessage(m);

function refuse(message: string): never {
  send({ t: "refused", message });
  process.exit(0);
}

const data = PipeLinkWorkerDataSchema.safeParse(workerData);
if (!data.success) refuse("The lease link was started without a valid scope.");
const { timeout_ms: timeoutMs } = data.data;
let scope = data.data.scope;
if (!scope) {
  try {
    scope = windowsScope(currentWindowsIdentity(), data.data.env);
  } catch {
    refuse("The Windows user SID or session id could not be determined.");
  }
}

function connect(name: string): bigint {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const h: Ptr = CreateFileW(
      name,
      GENERIC_READ | GENERIC_WRITE,
      0,
      null,
      OPEN_EXISTING,
      FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION,
      null,
    );
    if (validHandle(h)) return h;
    const err: number = GetLastError();
    const left = deadline - Date.now();
    // Every instance busy (the broker is between accepts): wait for one, within the deadline.
    if (err !== ERROR_PIPE_BUSY || left <= 0) refuse("No lease broker is listening in this sign-in session.");
    WaitNamedPipeW(name, Math.max(1, Math.min(left, 500)));
  }
}

const pipe = connect(scope.endpoint);
const serverPid = [0];
const serverOk =
  GetNamedPipeServerProcessId(pipe, serverPid) &&
  serverPid[0]! > 0 &&
  processUserSid(serverPid[0]!) === scope.user &&
  processSessionId(serverPid[0]!) === scope.instance_session;
if (!serverOk) {
  CloseHandle(pipe);
  refuse("The lease pipe is not served by this user's broker in this sign-in session.");
}

const readEvent = CreateEventW(null, 1, 0, null) as bigint;
const writeEvent = CreateEventW(null, 1, 0, null) as bigint;
const readOv = koffi.alloc(OVERLAPPED, 1);
const readBuf = koffi.alloc("uint8_t", BUF_SIZE);
let readPending = false;
let closing = false;
let ended = false;

function cleanup(): void {
  if (ended) return;
  ended = true;
  CloseHandle(pipe);
  CloseHandle(readEvent);
  CloseHandle(writeEvent);
  koffi.free(readOv);
  koffi.free(readBuf);
  send({ t: "closed" });
  process.exit(0);
}

/** Starts closing; the buffers are freed once no read is in flight. */
function finish(): void {
  closing = true;
  if (readPending) CancelIoEx(pipe, null);
  else cleanup();
}

function startRead(): void {
  if (closing) {
    cleanup();
    return;
  }
  ResetEvent(readEvent);
  koffi.encode(readOv, OVERLAPPED, {
    Internal: 0,
    InternalHigh: 0,
    Offset: 0,
    OffsetHigh: 0,
    hEvent: readEvent,
  });
  const ok: number = ReadFile(pipe, readBuf, BUF_SIZE, null, readOv);
  if (!ok && GetLastError() !== ERROR_IO_PENDING) {
    finish();
    return;
  }
  readPending = true;
  // Also when ReadFile completed at once: the event is set then and the wait returns at once.
  WaitForSingleObject.async(readEvent, INFINITE, () => {
    readPending = false;
    const n = [0];
    if (closing || !GetOverlappedResult(pipe, readOv, n, 0) || n[0] === 0) {
      finish();
      return;
    }
    send({ t: "data", chunk: new Uint8Array(koffi.view(readBuf, n[0]!)).slice() });
    startRead();
  });
}

function write(frame: Uint8Array): void {
  if (closing) return;
  const mem = koffi.alloc("uint8_t", frame.length);
  const ov = koffi.alloc(OVERLAPPED, 1);
  try {
    koffi.encode(mem, "uint8_t", Array.from(frame), frame.length);
    ResetEvent(writeEvent);
    koffi.encode(ov, OVERLAPPED, {
      Internal: 0,
      InternalHigh: 0,
      Offset: 0,
      OffsetHigh: 0,
      hEvent: writeEvent,
    });
    const ok: number = WriteFile(pipe, mem, frame.length, null, ov);
    if (!ok && GetLastError() !== ERROR_IO_PENDING) {
      finish();
      return;
    }
    const n = [0];
    if (WaitForSingleObject(writeEvent, timeoutMs) !== WAIT_OBJECT_0) {
      // A broker that stopped reading: give up on it rather than block this link forever.
      CancelIoEx(pipe, ov);
      GetOverlappedResult(pipe, ov, n, 1);
      finish();
      return;
    }
    if (!GetOverlappedResult(pipe, ov, n, 0) || n[0] !== frame.length) finish();
  } finally {
    koffi.free(ov);
    koffi.free(mem);
  }
}

port.on("message", (raw: unknown) => {
  const m = ToPipeLinkSchema.safeParse(raw);
  if (!m.success || m.data.t === "close") finish();
  else write(m.data.frame);
});

send({ t: "open", scope });
startRead();
