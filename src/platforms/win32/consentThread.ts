import { parentPort, workerData } from "node:worker_threads";
import * as w from "../../os/win32/ffi.js";
import { SETTINGS } from "../../shared/settings.js";
import { readSetting } from "../../shared/settingsReader.js";
import { guardDialogThread } from "./dialogGuard.js";
import { type DialogThreadInit, IDYES, yesNoBox } from "./yesNoBox.js";

/**
 * The consent dialog's own thread (a worker_thread = its own OS thread and message loop).
 * It reports its thread id first, so the caller can find and close the dialog by thread,
 * then blocks in TaskDialogIndirect (comctl32 v6, activated through shell32's manifest) or,
 * when that is unavailable, MessageBoxW. Deny is the default button in both. While either is up,
 * guardDialogThread's hooks and timer (run by the dialog's modal loop) keep injected input and
 * input during the security delay away from it.
 */

const ID_APPROVE = 1001;
const ID_DENY = 1002;
const TDF_ALLOW_DIALOG_CANCELLATION = 0x8;
const TDF_SIZE_TO_CONTENT = 0x01000000;
const TDN_CREATED = 0;
const HWND_TOPMOST = -1;
const SWP_NOMOVE = 0x2;
const SWP_NOSIZE = 0x1;
const ACTCTX_FLAG_RESOURCE_NAME_VALID = 0x8;

function wstr(s: string): Buffer {
  return Buffer.from(`${s}\u0000`, "utf16le");
}

/** Activates comctl32 v6 through shell32.dll's manifest (resource 124); returns a deactivator. */
function activateCommonControlsV6(): (() => void) | null {
  try {
    const k = w.koffi.load("kernel32.dll");
    const CreateActCtxW = k.func("intptr_t __stdcall CreateActCtxW(void *ctx)");
    const ActivateActCtx = k.func("int __stdcall ActivateActCtx(intptr_t h, _Out_ void *cookie)");
    const DeactivateActCtx = k.func("int __stdcall DeactivateActCtx(uint32_t flags, uintptr_t cookie)");
    const ReleaseActCtx = k.func("void __stdcall ReleaseActCtx(intptr_t h)");
    const GetSystemDirectoryW = k.func("uint32_t __stdcall GetSystemDirectoryW(_Out_ void *buf, uint32_t n)");
    const dir = Buffer.alloc(520);
    const n = GetSystemDirectoryW(dir, 260) as number;
    const source = wstr(`${w.utf16(dir, n)}\\shell32.dll`);
    // ACTCTXW (x64): cbSize@0 dwFlags@4 lpSource@8 wProcessorArchitecture@16 wLangId@18
    // lpAssemblyDirectory@24 lpResourceName@32 lpApplicationName@40 hModule@48; size 56.
    const ctx = Buffer.alloc(56);
    ctx.writeUInt32LE(56, 0);
    ctx.writeUInt32LE(ACTCTX_FLAG_RESOURCE_NAME_VALID, 4);
    ctx.writeBigUInt64LE(w.koffi.address(source), 8);
    ctx.writeBigUInt64LE(124n, 32);
    const h = CreateActCtxW(ctx) as number;
    if (!h || h === -1) return null;
    const cookie = Buffer.alloc(8);
    if (!ActivateActCtx(h, cookie)) {
      ReleaseActCtx(h);
      return null;
    }
    return () => {
      DeactivateActCtx(0, cookie.readBigUInt64LE(0));
      ReleaseActCtx(h);
    };
  } catch {
    return null;
  }
}

function taskDialog(text: string, title: string): "approve" | "deny" | null {
  const deactivate = activateCommonControlsV6();
  try {
    type TaskDialogFn = (cfg: Buffer, btn: Buffer, radio: null, verify: null) => number;
    let TaskDialogIndirect: TaskDialogFn;
    try {
      const c = w.koffi.load("comctl32.dll");
      TaskDialogIndirect = c.func(
        "int __stdcall TaskDialogIndirect(void *cfg, _Out_ void *button, void *radio, void *verify)",
      ) as unknown as TaskDialogFn;
    } catch {
      return null;
    }
    const u = w.koffi.load("user32.dll");
    const SetWindowPos = u.func(
      "int __stdcall SetWindowPos(intptr_t h, intptr_t after, int x, int y, int cx, int cy, uint32_t flags)",
    );
    const CallbackProto = w.koffi.proto(
      "intptr_t __stdcall TaskDialogCallback(intptr_t hwnd, uint32_t msg, uintptr_t wp, intptr_t lp, intptr_t data)",
    );
    const strings = [wstr(title), wstr(text), wstr("Approve"), wstr("Deny")];
    const [tTitle, tText, tApprove, tDeny] = strings;
    // TASKDIALOG_BUTTON is packed (commctrl.h pshpack1): int id @0, PCWSTR text @4; 12 bytes.
    const buttons = Buffer.alloc(24);
    buttons.writeInt32LE(ID_APPROVE, 0);
    buttons.writeBigUInt64LE(w.koffi.address(tApprove), 4);
    buttons.writeInt32LE(ID_DENY, 12);
    buttons.writeBigUInt64LE(w.koffi.address(tDeny), 16);
    const cb = w.koffi.register((hwnd: number, msg: number) => {
      if (msg === TDN_CREATED) SetWindowPos(hwnd, HWND_TOPMOST, 0, 0, 0, 0, SWP_NOMOVE | SWP_NOSIZE);
      return 0;
    }, w.koffi.pointer(CallbackProto));
    try {
      // TASKDIALOGCONFIG is packed too (x64 size 160); offsets from commctrl.h.
      const cfg = Buffer.alloc(160);
      cfg.writeUInt32LE(160, 0);
      cfg.writeUInt32LE(TDF_ALLOW_DIALOG_CANCELLATION | TDF_SIZE_TO_CONTENT, 20);
      cfg.writeBigUInt64LE(w.koffi.address(tTitle), 28);
      cfg.writeBigUInt64LE(w.koffi.address(tText), 52);
      cfg.writeUInt32LE(2, 60);
      cfg.writeBigUInt64LE(w.koffi.address(buttons), 64);
      cfg.writeInt32LE(ID_DENY, 72);
      cfg.writeBigUInt64LE(cb, 140);
      const pressed = Buffer.alloc(4);
      const hr = TaskDialogIndirect(cfg, pressed, null, null);
      void strings;
      if (hr < 0) return null;
      return pressed.readInt32LE(0) === ID_APPROVE ? "approve" : "deny";
    } finally {
      w.koffi.unregister(cb);
    }
  } finally {
    deactivate?.();
  }
}

function messageBox(text: string, title: string): "approve" | "deny" {
  return yesNoBox(`${text}\n\nYes = approve, No = deny.`, title) ? "approve" : "deny";
}

const init = workerData as DialogThreadInit;
const port = parentPort;
if (port) {
  const tid = w.GetCurrentThreadId();
  // UIINSPECT_WIN32_DIALOG=messagebox skips the TaskDialog; taskdialog, unset or anything else tries it first.
  const useTaskDialog = readSetting(process.env, SETTINGS.win32Dialog) === "taskdialog";
  const guard = guardDialogThread(tid, init.allowInjected === true, [ID_APPROVE, IDYES]);
  port.postMessage({ type: "thread", tid, kind: useTaskDialog ? "taskdialog" : "messagebox" });
  let answer: "approve" | "deny" | null;
  try {
    answer = useTaskDialog ? taskDialog(init.text, init.title) : null;
    if (answer === null) {
      port.postMessage({ type: "thread", tid, kind: "messagebox" });
      answer = messageBox(init.text, init.title);
    }
  } finally {
    guard.stop();
  }
  port.postMessage({ type: "answer", answer });
}
