import { selfGuard } from "../../os/win32/identity.js";
import type { Platform } from "../../shared/platform.js";
import { Win32Capture } from "./capture.js";
import { showConsentDialog } from "./consentDialog.js";
import { Win32Desktop } from "./desktop.js";
import { ensurePerMonitorV2 } from "./dpi.js";
import { Win32Input } from "./input.js";
import { UiaAccessibility, type UiaOptions } from "./uia/adapter.js";

/** Upper bound for one dialog even if nobody aborts it (the consent timeout is enforced by the caller). */
const DIALOG_GUARD_MS = 10 * 60_000;

export interface Win32PlatformOptions {
  workerKind: "capture" | "input" | "uia" | "other";
  /** Test seam for the UIA adapter (an in-process COM double); production leaves it unset. */
  uia?: UiaOptions;
}

/**
 * The Win32 backend (koffi → user32, kernel32, advapi32, gdi32, dwmapi, ole32/oleaut32).
 * Called once per worker thread: it sets that thread's DPI awareness to per-monitor v2 (and
 * the process's, which succeeds only for the first caller or is already set by node.exe's
 * manifest) and records what the OS answered for health(). COM is initialized lazily on the
 * uia worker's thread only, when the first session opens.
 */
export async function createWin32Platform(opts: Win32PlatformOptions): Promise<Platform> {
  if (process.platform !== "win32" || process.arch !== "x64") {
    const { uiError } = await import("../../shared/errors.js");
    throw uiError("platform_unavailable", "The Win32 backend needs Windows on x64.");
  }
  const dpi = ensurePerMonitorV2();
  const guard = selfGuard();
  const accessibility = new UiaAccessibility(opts.uia);
  const desktop = new Win32Desktop(guard, dpi);
  const capture = new Win32Capture();
  let disposed = false;
  const dispose = async () => {
    if (disposed) return;
    disposed = true;
    await accessibility.dispose();
    capture.dispose();
    await desktop.dispose();
  };
  // The consent dialog runs on its own thread; the supervisor's consent broker owns the
  // timeout and aborts `signal` (UIINSPECT_CONSENT_TIMEOUT_MS, target exit); the local guard
  // only bounds a dialog whose caller vanished.
  const dialog = {
    consent: (text: string, signal: AbortSignal) => showConsentDialog(text, DIALOG_GUARD_MS, signal),
  };
  return { desktop, capture, input: new Win32Input(guard), accessibility, dialog, dispose };
}
