// The test side of grabber.mjs (the "other process" of the Win32 grab tests): starts it, talks
// to its window, and reads what win32k says (GetGUIThreadInfo of the foreground thread, the
// cursor) with the test's own bindings. Used by the Wine runner (grabs.mjs) and by
// `npm run smoke:windows` on real Windows.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import koffi from "koffi";
import { GRAB_COUNT, GRABBER_CLASS } from "./grabber.mjs";

export * from "./grabber.mjs";

const grabberEntry = fileURLToPath(new URL("./grabber.mjs", import.meta.url));

const user32 = koffi.load("user32.dll");
export const win32 = {
  SendMessageTimeoutW: user32.func(
    "intptr_t __stdcall SendMessageTimeoutW(intptr_t h, uint32_t m, uintptr_t wp, intptr_t lp, uint32_t f, uint32_t ms, _Out_ uintptr_t *r)",
  ),
  PostMessageW: user32.func("int __stdcall PostMessageW(intptr_t h, uint32_t m, uintptr_t wp, intptr_t lp)"),
  GetWindowThreadProcessId: user32.func(
    "uint32_t __stdcall GetWindowThreadProcessId(intptr_t h, _Out_ uint32_t *pid)",
  ),
  GetGUIThreadInfo: user32.func("int __stdcall GetGUIThreadInfo(uint32_t tid, _Inout_ void *info)"),
  GetCursorPos: user32.func("int __stdcall GetCursorPos(_Out_ void *p)"),
  GetForegroundWindow: user32.func("intptr_t __stdcall GetForegroundWindow()"),
  GetClassNameW: user32.func("int __stdcall GetClassNameW(intptr_t h, _Out_ void *b, int n)"),
};
export function className(hwnd) {
  const b = Buffer.alloc(512);
  const n = win32.GetClassNameW(hwnd, b, 256);
  return b.toString("utf16le", 0, n * 2);
}
const SMTO_ABORTIFHUNG = 0x2;
export const GUI_INMENUMODE = 0x4;
export const GUI_SYSTEMMENUMODE = 0x8;
export const GUI_POPUPMENUMODE = 0x10;

/** The foreground thread's GUITHREADINFO as the test reads it itself (x64 layout). */
export function foregroundGui() {
  const b = Buffer.alloc(72);
  b.writeUInt32LE(72, 0);
  if (!win32.GetGUIThreadInfo(0, b)) return null;
  return {
    flags: b.readUInt32LE(4),
    active: Number(b.readBigInt64LE(8)),
    focus: Number(b.readBigInt64LE(16)),
    capture: Number(b.readBigInt64LE(24)),
    menuOwner: Number(b.readBigInt64LE(32)),
  };
}

export function pidOf(hwnd) {
  const pid = [0];
  win32.GetWindowThreadProcessId(hwnd, pid);
  return pid[0];
}

export function cursor() {
  const p = Buffer.alloc(8);
  win32.GetCursorPos(p);
  return [p.readInt32LE(0), p.readInt32LE(4)];
}

export async function startGrabber({
  listWindows,
  waitFor,
  assert,
  nodeArgs = [],
  x,
  y,
  cx = 300,
  cy = 200,
}) {
  // windowsHide: false — a console-less node.exe aborts in libuv under Wine 8 (see e2e.mjs).
  const child = spawn(
    process.execPath,
    [...nodeArgs, grabberEntry, String(x), String(y), String(cx), String(cy)],
    {
      stdio: ["pipe", "ignore", "ignore"],
      windowsHide: false,
    },
  );
  const win = await waitFor(async () => {
    const ws = await listWindows();
    return ws.find((w) => w.pid === child.pid && w.window_class === GRABBER_CLASS && w.visible) ?? null;
  }, 20000);
  if (!win) child.kill();
  assert(win, "the grabber's window appeared");
  const hwnd = Number(win.hwnd);
  const send = (msg, wp = 0) => {
    const out = [0];
    const ok = win32.SendMessageTimeoutW(hwnd, msg, wp, 0, SMTO_ABORTIFHUNG, 5000, out);
    assert(ok !== 0, `the grabber answered message 0x${msg.toString(16)}`);
    return Number(out[0]);
  };
  return {
    child,
    hwnd,
    send,
    post: (msg, wp = 0) => win32.PostMessageW(hwnd, msg, wp, 0),
    windowInput: () => send(GRAB_COUNT, 0),
    lowLevel: () => send(GRAB_COUNT, 1),
    reset: () => send(GRAB_COUNT, 2),
    stop: () => {
      child.stdin.end();
      setTimeout(() => child.kill(), 2000).unref?.();
    },
  };
}
