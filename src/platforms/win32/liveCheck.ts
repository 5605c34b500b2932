import * as w from "../../os/win32/ffi.js";
import { windowPid } from "../../os/win32/identity.js";
import { uiError } from "../../shared/errors.js";
import type { LiveCheck, WindowInfo } from "../../shared/platform.js";

/**
 * The Win32 last-moment checks from what the window manager (win32k) itself knows, the same
 * principles as on X11 (docs/win32.md, "Server truth"):
 *
 * - hit test: `WindowFromPoint` at each exact point; its root window (`GetAncestor(GA_ROOT)`)
 *   must belong to the target's process (a popup or menu of the target is part of it);
 * - focus: `GetForegroundWindow` belongs to the target's process, and so does the focused
 *   window of the foreground thread (`GetGUIThreadInfo(0).hwndFocus`), when there is one;
 * - grabs: the foreground thread is not in another process's menu mode, move/size loop or mouse
 *   capture (`GetGUIThreadInfo(0)` flags, `hwndMenuOwner`, `hwndCapture`) → input_grabbed.
 *
 * Win32 never clamps here: points outside the virtual screen were already refused.
 */

const GA_ROOT = 2;
/** GUITHREADINFO (x64): cbSize@0, flags@4, hwndActive@8, hwndFocus@16, hwndCapture@24, hwndMenuOwner@32. */
const GUI_INFO_SIZE = 72;
const GUI_INMOVESIZE = 0x2;
const GUI_INMENUMODE = 0x4;
const GUI_SYSTEMMENUMODE = 0x8;
const GUI_POPUPMENUMODE = 0x10;

/** POINT by value (x64): x in the low half, y in the high half. */
export function pointArg(x: number, y: number): bigint {
  return (BigInt.asUintN(32, BigInt(y)) << 32n) | BigInt.asUintN(32, BigInt(x));
}

function foregroundThreadInfo(): { flags: number; focus: number; capture: number; menuOwner: number } | null {
  const info = Buffer.alloc(GUI_INFO_SIZE);
  info.writeUInt32LE(GUI_INFO_SIZE, 0);
  if (!w.GetGUIThreadInfo(0, info)) return null;
  return {
    flags: info.readUInt32LE(4),
    focus: Number(info.readBigInt64LE(16)),
    capture: Number(info.readBigInt64LE(24)),
    menuOwner: Number(info.readBigInt64LE(32)),
  };
}

export function confirmLiveWin32(target: WindowInfo, check: LiveCheck): void {
  const ours = (hwnd: number) => hwnd !== 0 && target.pid > 0 && windowPid(hwnd).pid === target.pid;
  const info = check.focus || check.grabs.keyboard || check.grabs.pointer ? foregroundThreadInfo() : null;
  if (info && (check.grabs.keyboard || check.grabs.pointer)) {
    const modal =
      (info.flags & (GUI_INMENUMODE | GUI_SYSTEMMENUMODE | GUI_POPUPMENUMODE | GUI_INMOVESIZE)) !== 0;
    if (modal && !ours(info.menuOwner)) throw uiError("input_grabbed");
    if (info.capture !== 0 && !ours(info.capture)) throw uiError("input_grabbed");
  }
  for (const p of check.points) {
    const hit = w.WindowFromPoint(pointArg(p.x, p.y));
    if (!ours(hit === 0 ? 0 : w.GetAncestor(hit, GA_ROOT))) throw uiError("occluded");
  }
  if (check.focus) {
    if (!ours(w.GetForegroundWindow())) throw uiError("not_foreground");
    if (info && info.focus !== 0 && !ours(info.focus))
      throw uiError("not_foreground", "The focused window is not the target's.");
  }
}
