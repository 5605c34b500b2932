import koffi from "koffi";

/**
 * The kernel32 calls the lease's Windows code shares (broker transport, client link and reader
 * threads, identity): one declaration each, loaded once per thread that imports this module.
 */

export type Ptr = bigint | null;

const k32 = koffi.load("kernel32.dll");

export const OVERLAPPED = koffi.struct("uiinspect_lease_OVERLAPPED", {
  Internal: "uintptr_t",
  InternalHigh: "uintptr_t",
  Offset: "uint32_t",
  OffsetHigh: "uint32_t",
  hEvent: "void *",
});

export const ReadFile = k32.func(
  "int __stdcall ReadFile(void *h, void *buf, uint32_t n, void *read, void *ov)",
);
export const WriteFile = k32.func(
  "int __stdcall WriteFile(void *h, void *buf, uint32_t n, void *written, void *ov)",
);
export const GetOverlappedResult = k32.func(
  "int __stdcall GetOverlappedResult(void *h, void *ov, _Out_ uint32_t *n, int wait)",
);
export const CancelIoEx = k32.func("int __stdcall CancelIoEx(void *h, void *ov)");
export const CreateEventW = k32.func(
  "void * __stdcall CreateEventW(void *sa, int manual, int initial, void *name)",
);
export const SetEvent = k32.func("int __stdcall SetEvent(void *h)");
export const ResetEvent = k32.func("int __stdcall ResetEvent(void *h)");
export const WaitForSingleObject = k32.func("uint32_t __stdcall WaitForSingleObject(void *h, uint32_t ms)");
export const WaitForMultipleObjects = k32.func(
  "uint32_t __stdcall WaitForMultipleObjects(uint32_t n, void **handles, int all, uint32_t ms)",
);
export const CloseHandle = k32.func("int __stdcall CloseHandle(void *h)");
export const GetLastError = k32.func("uint32_t __stdcall GetLastError()");
export const LocalFree = k32.func("void * __stdcall LocalFree(void *p)");
export const GetCurrentProcess = k32.func("void * __stdcall GetCurrentProcess()");
export const OpenProcess = k32.func(
  "void * __stdcall OpenProcess(uint32_t access, int inherit, uint32_t pid)",
);
export const ProcessIdToSessionId = k32.func(
  "int __stdcall ProcessIdToSessionId(uint32_t pid, _Out_ uint32_t *session)",
);

export const ERROR_IO_PENDING = 997;
export const ERROR_IO_INCOMPLETE = 996;
export const WAIT_OBJECT_0 = 0;
export const WAIT_TIMEOUT = 258;
export const PROCESS_QUERY_LIMITED_INFORMATION = 0x1000;
export const FILE_FLAG_OVERLAPPED = 0x40000000;

export function validHandle(h: Ptr): h is bigint {
  return h !== null && h !== 0n && h !== -1n && h !== 0xffffffffffffffffn;
}

/** A manual-reset event, initially clear. */
export function createManualEvent(): bigint {
  const h: Ptr = CreateEventW(null, 1, 0, null);
  if (!validHandle(h)) throw new Error("CreateEventW failed");
  return h;
}

const STATUS_PENDING = 0x103;

/**
 * After CancelIoEx: waits (at most `ms`) until the operation on `ov`, if one is still in flight,
 * has completed, so its OVERLAPPED and buffer may be freed. Returns false when it is still in
 * flight: the caller must then never free that memory (measured: Wine 8 does not cancel a
 * pending pipe write, and waiting for it without a bound hung the broker).
 */
export function settleCancelled(h: bigint, ov: unknown, event: bigint, ms = 1000): boolean {
  const o = koffi.decode(ov, OVERLAPPED) as { Internal: number | bigint };
  if (Number(o.Internal) !== STATUS_PENDING) return true;
  if (WaitForSingleObject(event, ms) !== WAIT_OBJECT_0) return false;
  GetOverlappedResult(h, ov, [0], 0);
  return true;
}

/** Clears `event` and writes a fresh OVERLAPPED (offset 0) signalling it into `ov`. */
export function armOverlapped(ov: unknown, event: bigint): void {
  ResetEvent(event);
  koffi.encode(ov, OVERLAPPED, { Internal: 0, InternalHigh: 0, Offset: 0, OffsetHigh: 0, hEvent: event });
}
