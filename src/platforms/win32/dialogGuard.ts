import * as w from "../../os/win32/ffi.js";
import { SECURITY_DELAY_MS } from "../x11/dialog/personInput.js";
import { pointArg } from "./liveCheck.js";

/**
 * The person-only input guard of a consent dialog thread (the Win32 side of what the
 * X11 dialog does with XInput2 source devices):
 * - low-level keyboard and mouse hooks (WH_KEYBOARD_LL / WH_MOUSE_LL) installed on the dialog's
 *   own thread, whose modal loop pumps the messages that run them. An event aimed at the dialog
 *   (the pointer over one of this thread's windows, or this thread's window in the foreground)
 *   is swallowed — returned nonzero, never passed to CallNextHookEx — when the system flags it
 *   injected (LLKHF_INJECTED / LLMHF_INJECTED: SendInput, keybd_event, mouse_event from any
 *   program, ours included), or while the security delay runs. Everything else passes on.
 * - a security delay: for SECURITY_DELAY_MS after the dialog becomes visible, and again after it
 *   regains the foreground, its approving buttons are disabled (EnableWindow, when they are child
 *   windows: MessageBox, Wine's TaskDialog; Windows' own TaskDialog draws its buttons itself, so
 *   there only the hooks hold the delay) and the hooks swallow input aimed at it. The buttons
 *   part holds even where low-level hooks are not delivered.
 * `allowInjected` (the unsafe test setting) turns only the injected filter off; the delay stays.
 */

const WH_KEYBOARD_LL = 13;
const WH_MOUSE_LL = 14;
const HC_ACTION = 0;
const LLKHF_INJECTED = 0x10;
const LLMHF_INJECTED = 0x1;
/** KBDLLHOOKSTRUCT: vkCode@0 scanCode@4 flags@8. MSLLHOOKSTRUCT: pt.x@0 pt.y@4 mouseData@8 flags@12. */
const KBD_FLAGS_OFFSET = 8;
const MOUSE_FLAGS_OFFSET = 12;
const TICK_MS = 50;

/** A registered native callback (what koffi.register returns, koffi.unregister takes). */
type NativeCallback = ReturnType<typeof w.koffi.register>;

export interface DialogGuard {
  stop(): void;
}

/**
 * Guards the dialogs of thread `tid` (the caller's own) until stop(). `approveIds` are the
 * control ids of the buttons that approve, disabled during the delay.
 */
export function guardDialogThread(
  tid: number,
  allowInjected: boolean,
  approveIds: readonly number[],
): DialogGuard {
  /** Input aimed at the dialog counts only from this time on; Infinity until it is visible. */
  let armedAt = Number.POSITIVE_INFINITY;
  let wasForeground = false;
  const ownWindow = (hwnd: number): boolean => hwnd !== 0 && w.GetWindowThreadProcessId(hwnd, null) === tid;
  const setButtons = approveButtons(approveIds);

  // The thread timer runs inside the dialog's modal loop (DispatchMessage calls its TimerProc).
  const tick = w.koffi.register(() => {
    const tops = visibleTops(tid);
    if (tops.length === 0) return;
    const foreground = ownWindow(w.GetForegroundWindow());
    const now = Date.now();
    // First shown, or the foreground came back: the delay (re)starts.
    if (armedAt === Number.POSITIVE_INFINITY || (foreground && !wasForeground))
      armedAt = now + SECURITY_DELAY_MS;
    wasForeground = foreground;
    setButtons(now >= armedAt, tops);
  }, w.koffi.pointer(w.TimerProc));
  const timer = w.SetTimer(0, 0, TICK_MS, tick);

  const swallow = (aimedAtDialog: boolean, injected: boolean): boolean =>
    aimedAtDialog && ((injected && !allowInjected) || Date.now() < armedAt);
  const { keyboard, mouse, hooks } = installHooks(ownWindow, swallow);

  return {
    stop() {
      for (const h of hooks) w.UnhookWindowsHookEx(h);
      if (timer) w.KillTimer(0, timer);
      for (const cb of [tick, keyboard, mouse]) w.koffi.unregister(cb);
    },
  };
}

/**
 * Enables or disables the approving buttons of the dialogs `tops`, only on a change. Only the
 * approving ones: disabling the focused default (Deny) would leave the dialog without keyboard
 * focus once the delay ends.
 */
function approveButtons(approveIds: readonly number[]): (enable: boolean, tops: number[]) => void {
  let buttonsEnabled = true;
  return (enable, tops) => {
    if (buttonsEnabled === enable) return;
    buttonsEnabled = enable;
    for (const top of tops) {
      for (const id of approveIds) {
        const button = w.GetDlgItem(top, id);
        if (button) w.EnableWindow(button, enable ? 1 : 0);
      }
    }
  };
}

/** The visible top-level windows of thread `tid` (its dialogs, once shown). */
function visibleTops(tid: number): number[] {
  const out: number[] = [];
  w.withCallback(
    (hwnd: number) => {
      if (w.IsWindowVisible(hwnd)) out.push(hwnd);
      return 1;
    },
    w.EnumWindowsProc,
    (cb) => w.EnumThreadWindows(tid, cb, 0),
  );
  return out;
}

/**
 * The low-level keyboard and mouse hooks: an event aimed at the dialog (the foreground for a key,
 * the window under the pointer for the mouse) that `swallow` refuses is eaten, the rest passes on.
 */
function installHooks(
  ownWindow: (hwnd: number) => boolean,
  swallow: (aimedAtDialog: boolean, injected: boolean) => boolean,
): { keyboard: NativeCallback; mouse: NativeCallback; hooks: number[] } {
  const keyboard = w.koffi.register((code: number, wp: number, lp: unknown) => {
    if (code === HC_ACTION) {
      const injected = (w.koffi.decode(lp, KBD_FLAGS_OFFSET, "uint32_t") & LLKHF_INJECTED) !== 0;
      if (swallow(ownWindow(w.GetForegroundWindow()), injected)) return 1;
    }
    return w.CallNextHookEx(0, code, wp, lp);
  }, w.koffi.pointer(w.LowLevelHookProc));
  const mouse = w.koffi.register((code: number, wp: number, lp: unknown) => {
    if (code === HC_ACTION) {
      const x = w.koffi.decode(lp, 0, "int32_t") as number;
      const y = w.koffi.decode(lp, 4, "int32_t") as number;
      const injected = (w.koffi.decode(lp, MOUSE_FLAGS_OFFSET, "uint32_t") & LLMHF_INJECTED) !== 0;
      if (swallow(ownWindow(w.WindowFromPoint(pointArg(x, y))), injected)) return 1;
    }
    return w.CallNextHookEx(0, code, wp, lp);
  }, w.koffi.pointer(w.LowLevelHookProc));
  const hooks: number[] = [];
  const hmod = w.GetModuleHandleW(null);
  for (const [id, proc] of [
    [WH_KEYBOARD_LL, keyboard],
    [WH_MOUSE_LL, mouse],
  ] as const) {
    const h = w.SetWindowsHookExW(id, proc, hmod, 0);
    if (h) hooks.push(h);
  }
  return { keyboard, mouse, hooks };
}
