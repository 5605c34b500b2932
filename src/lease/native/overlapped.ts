import koffi from "koffi";
import * as w from "../../os/win32/ffi.js";

/**
 * Overlapped I/O on the lease pipe (broker transport, client link and its reader thread), on
 * the bindings of os/win32/ffi.ts: events, a fresh OVERLAPPED per operation, and the
 * bounded wait after a cancellation before its memory may be freed.
 */

export const ERROR_IO_PENDING = 997;
export const ERROR_IO_INCOMPLETE = 996;
export const WAIT_OBJECT_0 = 0;
export const WAIT_TIMEOUT = 258;
export const FILE_FLAG_OVERLAPPED = 0x40000000;

/** A handle a Create* call returned, unless it is NULL or INVALID_HANDLE_VALUE. */
export function validHandle(h: number): boolean {
  return h !== 0 && h !== -1;
}

/** A manual-reset event, initially clear. */
export function createManualEvent(): number {
  const h = w.CreateEventW(null, 1, 0, null);
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
export function settleCancelled(h: number, ov: w.Mem, event: number, ms = 1000): boolean {
  const o = koffi.decode(ov, w.OVERLAPPED) as { Internal: number | bigint };
  if (Number(o.Internal) !== STATUS_PENDING) return true;
  if (w.WaitForSingleObject(event, ms) !== WAIT_OBJECT_0) return false;
  w.GetOverlappedResult(h, ov, [0], 0);
  return true;
}

/** Clears `event` and writes a fresh OVERLAPPED (offset 0) signalling it into `ov`. */
export function armOverlapped(ov: w.Mem, event: number): void {
  w.ResetEvent(event);
  koffi.encode(ov, w.OVERLAPPED, { Internal: 0, InternalHigh: 0, Offset: 0, OffsetHigh: 0, hEvent: event });
}
