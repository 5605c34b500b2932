import * as w from "../../os/win32/ffi.js";

/** DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2 (a pseudo-handle). */
const PER_MONITOR_AWARE_V2 = -4;
/** DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE (v1): the fallback where v2 is refused (Wine 8). */
const PER_MONITOR_AWARE = -3;

export interface DpiReport {
  /** "per_monitor_v2" when SetProcessDpiAwarenessContext succeeded; "already_set" when it failed with ERROR_ACCESS_DENIED (a manifest or an earlier call set it); "failed" otherwise; "unavailable" if the export is missing. */
  process: string;
  /**
   * "per_monitor_v2" when this thread's context is PMv2 after our call; "per_monitor_v1" when v2
   * was refused and v1 was set instead (still physical pixels per monitor, without v2's
   * non-client scaling); "failed" / "unavailable" otherwise.
   */
  thread: string;
  threadVerified: boolean;
}

const ERROR_ACCESS_DENIED = 5;

/**
 * Per-monitor-v2 awareness for the process (best effort, idempotent) and for the calling
 * thread (each worker calls this on its own thread). Reports exactly what the OS said.
 */
export function ensurePerMonitorV2(): DpiReport {
  let proc = "unavailable";
  if (w.SetProcessDpiAwarenessContext) {
    if (w.SetProcessDpiAwarenessContext(PER_MONITOR_AWARE_V2)) proc = "per_monitor_v2";
    else proc = w.GetLastError() === ERROR_ACCESS_DENIED ? "already_set" : "failed";
  }
  let thread = "unavailable";
  let verified = false;
  if (w.SetThreadDpiAwarenessContext) {
    const is = (ctx: number): boolean =>
      !!w.GetThreadDpiAwarenessContext &&
      !!w.AreDpiAwarenessContextsEqual &&
      w.AreDpiAwarenessContextsEqual(w.GetThreadDpiAwarenessContext(), ctx) !== 0;
    w.SetThreadDpiAwarenessContext(PER_MONITOR_AWARE_V2);
    if (is(PER_MONITOR_AWARE_V2)) {
      thread = "per_monitor_v2";
      verified = true;
    } else {
      // Wine 8 answers ERROR_INVALID_PARAMETER for the v2 context (measured) but accepts v1.
      w.SetThreadDpiAwarenessContext(PER_MONITOR_AWARE);
      if (is(PER_MONITOR_AWARE)) {
        thread = "per_monitor_v1";
        verified = true;
      } else thread = "failed";
    }
  }
  return { process: proc, thread, threadVerified: verified };
}
