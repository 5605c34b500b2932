import * as w from "../../os/win32/ffi.js";
import {
  assertTargetable,
  isAlive,
  ourIntegrity,
  type SelfGuard,
  targetableInstance,
  windowPid,
} from "../../os/win32/identity.js";
import { uiError } from "../../shared/errors.js";
import { intersect, offset, type Rect } from "../../shared/geometry.js";
import type { ProcessInstance } from "../../shared/identity.js";
import {
  type DesktopPort,
  type LiveCheck,
  type LiveProof,
  NO_PROOF,
  type WindowInfo,
} from "../../shared/platform.js";
import type { DpiReport } from "./dpi.js";
import { confirmLiveWin32 } from "./liveCheck.js";

const GWL_EXSTYLE = -20;
const WS_EX_TOPMOST = 0x8;
const DWMWA_EXTENDED_FRAME_BOUNDS = 9;
const DWMWA_CLOAKED = 14;
const SM_XVIRTUALSCREEN = 76;
const SM_YVIRTUALSCREEN = 77;
const SM_CXVIRTUALSCREEN = 78;
const SM_CYVIRTUALSCREEN = 79;
const SW_SHOWNOACTIVATE = 4;
const WM_CLOSE = 0x0010;
const SMTO_ABORTIFHUNG = 0x2;
const E_NOTIMPL = 0x80004001 | 0;

/** What DWM last answered (for health): per window, never a permanent switch. */
const dwmState = {
  /** Set once DWM answered E_NOTIMPL (Wine): a property of the system, so DWM is not asked again. */
  notImplemented: false,
  frameBounds: "untried" as "untried" | "ok" | "failed",
  cloaked: "untried" as "untried" | "ok" | "failed",
  lastHr: 0,
};

/** HWND (intptr) → decimal string; HWND values are 32-bit significant and non-negative in practice. */
export const hwndString = (h: number): string => String(h >>> 0);
export function parseHwnd(s: string): number {
  if (!/^\d+$/.test(s)) throw uiError("invalid_argument", "hwnd must be a decimal integer.");
  const n = Number(s);
  if (!Number.isSafeInteger(n) || n <= 0 || n > 0xffffffff)
    throw uiError("invalid_argument", "hwnd is out of range.");
  return n;
}

/** Top-level windows in EnumWindows order, which is the z-order, topmost first. */
export function enumTopLevel(): number[] {
  const out: number[] = [];
  w.withCallback(
    (hwnd: number) => {
      out.push(hwnd);
      return 1;
    },
    w.EnumWindowsProc,
    (cb) => w.EnumWindows(cb, 0),
  );
  return out;
}

/**
 * The top-level windows above `target` (EnumWindows order, topmost first), the enumeration
 * stopped at the target; null when the target is not among the top-level windows any more.
 */
function enumAbove(target: number): number[] | null {
  const above: number[] = [];
  let found = false;
  w.withCallback(
    (hwnd: number) => {
      if (hwnd >>> 0 === target) {
        found = true;
        return 0;
      }
      above.push(hwnd);
      return 1;
    },
    w.EnumWindowsProc,
    (cb) => w.EnumWindows(cb, 0),
  );
  return found ? above : null;
}

export function windowText(hwnd: number): string {
  const len = w.GetWindowTextLengthW(hwnd);
  if (len <= 0) return "";
  const buf = Buffer.alloc((len + 1) * 2);
  const n = w.GetWindowTextW(hwnd, buf, len + 1);
  return w.utf16(buf, n);
}

export function className(hwnd: number): string {
  const buf = Buffer.alloc(512);
  const n = w.GetClassNameW(hwnd, buf, 256);
  return w.utf16(buf, n);
}

/**
 * What the user sees as the window. On Windows 10/11 GetWindowRect includes the invisible
 * resize borders (about 7 px left/right/bottom at 100 %); DWMWA_EXTENDED_FRAME_BOUNDS is the
 * visible frame, in physical pixels for a per-monitor-aware caller. We use the DWM frame when
 * DWM answers and GetWindowRect otherwise (DWM off, or Wine, whose dwmapi does not implement
 * the attribute): one explicit rule, reported in health() as rect_source.
 */
export function visibleRect(hwnd: number): Rect | null {
  if (w.DwmGetWindowAttribute && !dwmState.notImplemented) {
    const b = Buffer.alloc(16);
    let hr = -1;
    try {
      hr = w.DwmGetWindowAttribute(hwnd, DWMWA_EXTENDED_FRAME_BOUNDS, b, 16);
    } catch {
      hr = -1;
    }
    dwmState.lastHr = hr;
    if (hr === E_NOTIMPL) dwmState.notImplemented = true;
    if (hr === 0) {
      dwmState.frameBounds = "ok";
      const r = w.readRect(b);
      if (r[2] > r[0] && r[3] > r[1]) return r;
    } else if (dwmState.frameBounds === "untried") {
      dwmState.frameBounds = "failed";
    }
  }
  const b = Buffer.alloc(16);
  if (!w.GetWindowRect(hwnd, b)) return null;
  return w.readRect(b);
}

/** Cloaked windows (other virtual desktop, suspended UWP apps) are not visible; without DWM nothing is cloaked. */
export function isCloaked(hwnd: number): boolean {
  if (!w.DwmGetWindowAttribute || dwmState.notImplemented) return false;
  const b = Buffer.alloc(4);
  let hr = -1;
  try {
    hr = w.DwmGetWindowAttribute(hwnd, DWMWA_CLOAKED, b, 4);
  } catch {
    hr = -1;
  }
  if (hr !== 0) {
    if (dwmState.cloaked !== "ok") dwmState.cloaked = "failed";
    return false;
  }
  dwmState.cloaked = "ok";
  return b.readUInt32LE(0) !== 0;
}

export function virtualScreenRect(): Rect {
  const x = w.GetSystemMetrics(SM_XVIRTUALSCREEN);
  const y = w.GetSystemMetrics(SM_YVIRTUALSCREEN);
  const cx = w.GetSystemMetrics(SM_CXVIRTUALSCREEN);
  const cy = w.GetSystemMetrics(SM_CYVIRTUALSCREEN);
  return [x, y, x + cx, y + cy];
}

function describe(
  hwnd: number,
  z: number,
  fg: number,
  instances: Map<number, ProcessInstance | null>,
  guard: SelfGuard,
): WindowInfo | null {
  const rect = visibleRect(hwnd);
  if (!rect) return null;
  const { pid } = windowPid(hwnd);
  let instance = instances.get(pid);
  if (instance === undefined) {
    // Our own process, its host, and higher-integrity processes are never targets: no instance.
    instance = targetableInstance(pid, guard);
    instances.set(pid, instance);
  }
  // A process that exited after its window was enumerated leaves no instance: the window went
  // with it, so it is gone, not an instance-less window (which a call reports as not allowed).
  if (instance === null && !w.IsWindow(hwnd)) return null;
  const visible = w.IsWindowVisible(hwnd) !== 0 && !isCloaked(hwnd);
  return {
    hwnd: hwndString(hwnd),
    title: windowText(hwnd),
    window_class: className(hwnd),
    pid,
    instance,
    rect,
    visible,
    iconic: w.IsIconic(hwnd) !== 0,
    foreground: hwnd === fg,
    on_top: (w.GetWindowLongPtrW(hwnd, GWL_EXSTYLE) & WS_EX_TOPMOST) !== 0,
    z,
  };
}

export class Win32Desktop implements DesktopPort {
  readonly platform = "win32" as const;

  constructor(
    private readonly guard: SelfGuard,
    private readonly dpi: DpiReport,
  ) {}

  async listWindows(): Promise<WindowInfo[]> {
    const fg = w.GetForegroundWindow();
    const instances = new Map<number, ProcessInstance | null>();
    const out: WindowInfo[] = [];
    const all = enumTopLevel();
    for (let i = 0; i < all.length; i++) {
      const info = describe(all[i], i, fg, instances, this.guard);
      if (info) out.push(info);
    }
    return out;
  }

  /**
   * The capture's check after the read (DesktopPort.targetAndCovers): the enumeration stops at
   * the target; of the windows above it only the visible, not minimized ones whose rect meets
   * the region are described (identity included: the target's own popups do not cover it). z
   * is what listWindows would give. The target's identity is resolved afresh.
   */
  async targetAndCovers(hwnd: string, region: Rect): Promise<WindowInfo[]> {
    const h = parseHwnd(hwnd);
    const above = enumAbove(h);
    if (above === null) return [];
    const fg = w.GetForegroundWindow();
    const instances = new Map<number, ProcessInstance | null>();
    const target = describe(h, above.length, fg, instances, this.guard);
    if (!target) return [];
    const onScreen = offset(region, target.rect[0], target.rect[1]);
    const out: WindowInfo[] = [];
    for (let i = 0; i < above.length; i++) {
      const a = above[i];
      // Cheapest facts first: most top-level windows are hidden.
      if (w.IsWindowVisible(a) === 0 || w.IsIconic(a) !== 0) continue;
      const r = visibleRect(a);
      if (!r || intersect(r, onScreen) === null) continue;
      const info = describe(a, i, fg, instances, this.guard);
      if (info) out.push(info);
    }
    out.push(target);
    return out;
  }

  async getWindow(hwnd: string): Promise<WindowInfo | null> {
    // z needs the whole order, so this is a full enumeration filtered to one window.
    const h = parseHwnd(hwnd);
    if (!w.IsWindow(h)) return null;
    const all = await this.listWindows();
    return all.find((x) => x.hwnd === hwnd) ?? null;
  }

  async isInstanceAlive(instance: ProcessInstance): Promise<boolean> {
    return isAlive(instance);
  }

  async virtualScreen(): Promise<Rect> {
    return virtualScreenRect();
  }

  async health(): Promise<Record<string, string | number | boolean | null>> {
    // Settle the DWM question once (the first top-level window answers or not).
    if (dwmState.frameBounds === "untried") {
      const first = enumTopLevel()[0];
      if (first) visibleRect(first);
    }
    const integ = ourIntegrity();
    return {
      win32_dpi_process: this.dpi.process,
      win32_dpi_thread: this.dpi.thread,
      win32_dpi_thread_verified: this.dpi.threadVerified,
      win32_rect_source:
        dwmState.frameBounds === "ok"
          ? "dwm_extended_frame_bounds (GetWindowRect where DWM fails)"
          : "get_window_rect",
      win32_dwm: w.DwmGetWindowAttribute ? dwmState.frameBounds : "absent",
      win32_dwm_cloaked: dwmState.cloaked,
      win32_dwm_last_hresult: `0x${(dwmState.lastHr >>> 0).toString(16)}`,
      win32_integrity_rid: integ,
      win32_parent_guard: this.guard.parent !== null,
    };
  }

  async restoreWindow(hwnd: string): Promise<void> {
    const h = this.target(hwnd);
    // SW_SHOWNOACTIVATE restores a minimized window to its last size without activating it (SW_RESTORE would).
    if (w.IsIconic(h)) w.ShowWindow(h, SW_SHOWNOACTIVATE);
  }

  async activateWindow(hwnd: string): Promise<void> {
    const h = this.target(hwnd);
    if (w.SetForegroundWindow(h) && w.GetForegroundWindow() === h) return;
    // The foreground lock refuses a process that did not receive the last input. Attaching our
    // input queue to the current foreground thread for the call is the documented way around it.
    const fg = w.GetForegroundWindow();
    const me = w.GetCurrentThreadId();
    const theirs = fg ? windowPid(fg).tid : 0;
    const attached = theirs !== 0 && theirs !== me && w.AttachThreadInput(me, theirs, 1) !== 0;
    try {
      w.BringWindowToTop(h);
      w.SetForegroundWindow(h);
    } finally {
      if (attached) w.AttachThreadInput(me, theirs, 0);
    }
  }

  /** WindowFromPoint, GetForegroundWindow and GetGUIThreadInfo at the last moment (liveCheck.ts). */
  async confirmLive(target: WindowInfo, check: LiveCheck): Promise<LiveProof> {
    confirmLiveWin32(target, check);
    // SendInput has no atomic re-check to hold an event to: nothing to hand the port.
    return NO_PROOF;
  }

  async closeWindow(hwnd: string): Promise<void> {
    const h = this.target(hwnd);
    // Posted, never sent: a target that opens a "save changes?" box inside WM_CLOSE must not
    // block this worker. If posting fails (queue full), a bounded send is the fallback.
    if (w.PostMessageW(h, WM_CLOSE, 0, 0)) return;
    w.SendMessageTimeoutW(h, WM_CLOSE, 0, 0, SMTO_ABORTIFHUNG, 1000, null);
  }

  async dispose(): Promise<void> {}

  /** The window handle, refused for our own process, its host, or a higher integrity level. */
  private target(hwnd: string): number {
    const h = parseHwnd(hwnd);
    if (!w.IsWindow(h)) throw uiError("target_gone");
    assertTargetable(windowPid(h).pid, this.guard);
    return h;
  }
}
