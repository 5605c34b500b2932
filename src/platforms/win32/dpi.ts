import * as w from "./ffi.js";

/** DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2 (a pseudo-handle). */
const PER_MONITOR_AWARE_V2 = -4;

export interface DpiReport {
  /** "per_monitor_v2" when SetProcessDpiAwarenessContext succeeded; "already_set" when it failed with ERROR_ACCESS_DENIED (a manifest or an earlier call set it); "failed" otherwise; "unavailable" if the export is missing. */
  process: string;
  /** "per_monitor_v2" when this thread's context is PMv2 after our call; "failed" / "unavailable" otherwise. */
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
    const prev = w.SetThreadDpiAwarenessContext(PER_MONITOR_AWARE_V2);
    thread = prev ? "per_monitor_v2" : "failed";
    if (w.GetThreadDpiAwarenessContext && w.AreDpiAwarenessContextsEqual) {
      verified = w.AreDpiAwarenessContextsEqual(w.GetThreadDpiAwarenessContext(), PER_MONITOR_AWARE_V2) !== 0;
      if (!verified) thread = "failed";
    }
  }
  return { process: proc, thread, threadVerified: verified };
}
