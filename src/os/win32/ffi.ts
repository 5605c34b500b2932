import koffi, { type LibraryHandle, type TypeObject } from "koffi";

/**
 * koffi bindings for the Win32 calls the backend uses (x64 only). Handles (HWND, HANDLE,
 * HDC, HBITMAP…) are declared as intptr_t so they arrive as plain numbers; COM interface
 * pointers are `void *` (koffi 3: BigInt). Optional exports (missing on old systems or under
 * Wine) are bound lazily through `optional()` and reported as absent, never guessed.
 */

// biome-ignore lint/suspicious/noExplicitAny: koffi's own call signature; every binding below is re-typed.
type AnyFn = (...args: any[]) => any;
type Fn<A extends unknown[], R> = (...args: A) => R;

const libs = new Map<string, LibraryHandle | null>();
function lib(name: string): LibraryHandle | null {
  if (!libs.has(name)) {
    try {
      libs.set(name, koffi.load(name));
    } catch {
      libs.set(name, null);
    }
  }
  return libs.get(name) ?? null;
}

/**
 * A binding of an export every supported system has. The DLL is loaded at once (a missing one
 * fails the import); the prototype is parsed on the first call, since every thread that imports
 * this module (workers, dialog threads, the lease's pipe threads) uses only a few of them and
 * parsing them all costs about 0.3 s per thread under Wine.
 */
function bind<A extends unknown[], R>(dll: string, decl: string): Fn<A, R> {
  const l = lib(dll);
  if (!l) throw new Error(`${dll} unavailable`);
  let f: AnyFn | null = null;
  return (...args: A): R => {
    f ??= l.func(decl) as AnyFn;
    return f(...args) as R;
  };
}

/** A binding that may be absent: null when the DLL or export does not exist (checked at once). */
function optional<A extends unknown[], R>(dll: string, decl: string): Fn<A, R> | null {
  try {
    const l = lib(dll);
    if (!l) return null;
    const f: AnyFn = l.func(decl);
    return f as Fn<A, R>;
  } catch {
    return null;
  }
}

type H = number; // HWND / HANDLE / HDC / HGDIOBJ as intptr_t
type Ptr = bigint | null; // raw pointer

// Callback prototypes -------------------------------------------------------------
export const EnumWindowsProc = koffi.proto("int __stdcall EnumWindowsProc(intptr_t hwnd, intptr_t lParam)");

// user32 ---------------------------------------------------------------------------
const U = "user32.dll";
export const EnumWindows = bind<[bigint, number], number>(
  U,
  "int __stdcall EnumWindows(void *cb, intptr_t lParam)",
);
export const EnumThreadWindows = bind<[number, bigint, number], number>(
  U,
  "int __stdcall EnumThreadWindows(uint32_t tid, void *cb, intptr_t lParam)",
);
export const EnumChildWindows = bind<[H, bigint, number], number>(
  U,
  "int __stdcall EnumChildWindows(intptr_t parent, void *cb, intptr_t lParam)",
);
export const GetWindowTextW = bind<[H, Buffer, number], number>(
  U,
  "int __stdcall GetWindowTextW(intptr_t hwnd, _Out_ void *buf, int max)",
);
export const GetWindowTextLengthW = bind<[H], number>(U, "int __stdcall GetWindowTextLengthW(intptr_t hwnd)");
export const GetClassNameW = bind<[H, Buffer, number], number>(
  U,
  "int __stdcall GetClassNameW(intptr_t hwnd, _Out_ void *buf, int max)",
);
export const GetWindowThreadProcessId = bind<[H, Buffer | null], number>(
  U,
  "uint32_t __stdcall GetWindowThreadProcessId(intptr_t hwnd, _Out_ void *pid)",
);
export const IsWindow = bind<[H], number>(U, "int __stdcall IsWindow(intptr_t hwnd)");
export const IsWindowVisible = bind<[H], number>(U, "int __stdcall IsWindowVisible(intptr_t hwnd)");
export const IsIconic = bind<[H], number>(U, "int __stdcall IsIconic(intptr_t hwnd)");
export const GetWindowRect = bind<[H, Buffer], number>(
  U,
  "int __stdcall GetWindowRect(intptr_t hwnd, _Out_ void *rect)",
);
export const GetClientRect = bind<[H, Buffer], number>(
  U,
  "int __stdcall GetClientRect(intptr_t hwnd, _Out_ void *rect)",
);
export const GetWindowLongPtrW = bind<[H, number], number>(
  U,
  "intptr_t __stdcall GetWindowLongPtrW(intptr_t hwnd, int index)",
);
export const GetAncestor = bind<[H, number], H>(
  U,
  "intptr_t __stdcall GetAncestor(intptr_t hwnd, uint32_t flags)",
);
export const GetForegroundWindow = bind<[], H>(U, "intptr_t __stdcall GetForegroundWindow()");
/** POINT by value is one 8-byte register on x64: pass (y << 32) | x as an int64 (see pointArg). */
export const WindowFromPoint = bind<[bigint], H>(U, "intptr_t __stdcall WindowFromPoint(int64_t pt)");
export const GetDlgItem = bind<[H, number], H>(U, "intptr_t __stdcall GetDlgItem(intptr_t dlg, int id)");
export const EnableWindow = bind<[H, number], number>(
  U,
  "int __stdcall EnableWindow(intptr_t hwnd, int enable)",
);
/** Low-level hook and thread-timer callbacks (the consent dialog's input guard). */
export const LowLevelHookProc = koffi.proto(
  "intptr_t __stdcall LowLevelHookProc(int code, uintptr_t wp, void *lp)",
);
export const TimerProc = koffi.proto(
  "void __stdcall TimerProc(intptr_t hwnd, uint32_t msg, uintptr_t id, uint32_t time)",
);
export const SetWindowsHookExW = bind<[number, bigint, H, number], H>(
  U,
  "intptr_t __stdcall SetWindowsHookExW(int idHook, void *proc, intptr_t hmod, uint32_t tid)",
);
export const UnhookWindowsHookEx = bind<[H], number>(U, "int __stdcall UnhookWindowsHookEx(intptr_t hhk)");
export const CallNextHookEx = bind<[H, number, number, unknown], number>(
  U,
  "intptr_t __stdcall CallNextHookEx(intptr_t hhk, int code, uintptr_t wp, void *lp)",
);
export const SetTimer = bind<[H, number, number, bigint], number>(
  U,
  "uintptr_t __stdcall SetTimer(intptr_t hwnd, uintptr_t id, uint32_t ms, void *proc)",
);
export const KillTimer = bind<[H, number], number>(U, "int __stdcall KillTimer(intptr_t hwnd, uintptr_t id)");
export const SetForegroundWindow = bind<[H], number>(U, "int __stdcall SetForegroundWindow(intptr_t hwnd)");
export const AllowSetForegroundWindow = bind<[number], number>(
  U,
  "int __stdcall AllowSetForegroundWindow(uint32_t pid)",
);
export const AttachThreadInput = bind<[number, number, number], number>(
  U,
  "int __stdcall AttachThreadInput(uint32_t from, uint32_t to, int attach)",
);
export const BringWindowToTop = bind<[H], number>(U, "int __stdcall BringWindowToTop(intptr_t hwnd)");
export const ShowWindow = bind<[H, number], number>(U, "int __stdcall ShowWindow(intptr_t hwnd, int cmd)");
export const PostMessageW = bind<[H, number, number, number], number>(
  U,
  "int __stdcall PostMessageW(intptr_t hwnd, uint32_t msg, uintptr_t wp, intptr_t lp)",
);
export const SendMessageTimeoutW = bind<[H, number, number, number, number, number, Buffer | null], number>(
  U,
  "intptr_t __stdcall SendMessageTimeoutW(intptr_t hwnd, uint32_t msg, uintptr_t wp, intptr_t lp, uint32_t flags, uint32_t timeout, _Out_ void *result)",
);
/** SendMessageTimeoutW with a pointer lParam (our own buffer: only valid for messages the system marshals, e.g. WM_GETTEXT). */
export const SendMessageTimeoutBufW = bind<
  [H, number, number, Buffer, number, number, Buffer | null],
  number
>(
  U,
  "intptr_t __stdcall SendMessageTimeoutW(intptr_t hwnd, uint32_t msg, uintptr_t wp, _Inout_ void *lp, uint32_t flags, uint32_t timeout, _Out_ void *result)",
);
export const GetGUIThreadInfo = bind<[number, Buffer], number>(
  U,
  "int __stdcall GetGUIThreadInfo(uint32_t tid, _Inout_ void *info)",
);
export const GetSystemMetrics = bind<[number], number>(U, "int __stdcall GetSystemMetrics(int index)");
export const SendInput = bind<[number, Buffer, number], number>(
  U,
  "uint32_t __stdcall SendInput(uint32_t n, void *inputs, int cb)",
);
export const MapVirtualKeyW = bind<[number, number], number>(
  U,
  "uint32_t __stdcall MapVirtualKeyW(uint32_t code, uint32_t type)",
);
export const GetDC = bind<[H], H>(U, "intptr_t __stdcall GetDC(intptr_t hwnd)");
export const ReleaseDC = bind<[H, H], number>(U, "int __stdcall ReleaseDC(intptr_t hwnd, intptr_t hdc)");
export const MessageBoxW = bind<[H, string, string, number], number>(
  U,
  "int __stdcall MessageBoxW(intptr_t owner, const char16_t *text, const char16_t *caption, uint32_t type)",
);
export const FindWindowExW = bind<[H, H, string | null, string | null], H>(
  U,
  "intptr_t __stdcall FindWindowExW(intptr_t parent, intptr_t after, const char16_t *cls, const char16_t *title)",
);
export const GetCursorPos = bind<[Buffer], number>(U, "int __stdcall GetCursorPos(_Out_ void *pt)");
export const SetThreadDpiAwarenessContext = optional<[number], number>(
  U,
  "intptr_t __stdcall SetThreadDpiAwarenessContext(intptr_t ctx)",
);
export const GetThreadDpiAwarenessContext = optional<[], number>(
  U,
  "intptr_t __stdcall GetThreadDpiAwarenessContext()",
);
export const AreDpiAwarenessContextsEqual = optional<[number, number], number>(
  U,
  "int __stdcall AreDpiAwarenessContextsEqual(intptr_t a, intptr_t b)",
);
export const SetProcessDpiAwarenessContext = optional<[number], number>(
  U,
  "int __stdcall SetProcessDpiAwarenessContext(intptr_t ctx)",
);
export const GetDpiForWindow = optional<[H], number>(U, "uint32_t __stdcall GetDpiForWindow(intptr_t hwnd)");

// kernel32 -------------------------------------------------------------------------
const K = "kernel32.dll";
export const GetCurrentProcessId = bind<[], number>(K, "uint32_t __stdcall GetCurrentProcessId()");
export const GetModuleHandleW = bind<[null], H>(K, "intptr_t __stdcall GetModuleHandleW(void *name)");
export const GetCurrentThreadId = bind<[], number>(K, "uint32_t __stdcall GetCurrentThreadId()");
export const GetCurrentProcess = bind<[], H>(K, "intptr_t __stdcall GetCurrentProcess()");
export const GetLastError = bind<[], number>(K, "uint32_t __stdcall GetLastError()");
export const OpenProcess = bind<[number, number, number], H>(
  K,
  "intptr_t __stdcall OpenProcess(uint32_t access, int inherit, uint32_t pid)",
);
export const CloseHandle = bind<[H], number>(K, "int __stdcall CloseHandle(intptr_t h)");
export const QueryFullProcessImageNameW = bind<[H, number, Buffer, Buffer], number>(
  K,
  "int __stdcall QueryFullProcessImageNameW(intptr_t h, uint32_t flags, _Out_ void *buf, _Inout_ void *size)",
);
export const GetProcessTimes = bind<[H, Buffer, Buffer, Buffer, Buffer], number>(
  K,
  "int __stdcall GetProcessTimes(intptr_t h, _Out_ void *creation, _Out_ void *exit, _Out_ void *kernel, _Out_ void *user)",
);
export const GetExitCodeProcess = bind<[H, Buffer], number>(
  K,
  "int __stdcall GetExitCodeProcess(intptr_t h, _Out_ void *code)",
);
export const ProcessIdToSessionId = bind<[number, Buffer], number>(
  K,
  "int __stdcall ProcessIdToSessionId(uint32_t pid, _Out_ void *session)",
);
export const CreateToolhelp32Snapshot = bind<[number, number], H>(
  K,
  "intptr_t __stdcall CreateToolhelp32Snapshot(uint32_t flags, uint32_t pid)",
);
export const Process32FirstW = bind<[H, Buffer], number>(
  K,
  "int __stdcall Process32FirstW(intptr_t snap, _Inout_ void *entry)",
);
export const Process32NextW = bind<[H, Buffer], number>(
  K,
  "int __stdcall Process32NextW(intptr_t snap, _Inout_ void *entry)",
);

// advapi32 -------------------------------------------------------------------------
const A = "advapi32.dll";
export const OpenProcessToken = bind<[H, number, Buffer], number>(
  A,
  "int __stdcall OpenProcessToken(intptr_t process, uint32_t access, _Out_ void *token)",
);
export const GetTokenInformation = bind<[H, number, Buffer, number, Buffer], number>(
  A,
  "int __stdcall GetTokenInformation(intptr_t token, int cls, _Out_ void *info, uint32_t len, _Out_ void *retLen)",
);
export const GetSidSubAuthorityCount = bind<[Ptr], Ptr>(
  A,
  "void * __stdcall GetSidSubAuthorityCount(void *sid)",
);
export const GetSidSubAuthority = bind<[Ptr, number], Ptr>(
  A,
  "void * __stdcall GetSidSubAuthority(void *sid, uint32_t i)",
);

// Pipes, events and mutexes (the lease broker, its pipe link and reader threads) --------
// Handles are intptr_t like every other handle here; buffers and OVERLAPPEDs are koffi.alloc'd
// memory (`void *`), so the kernel may keep using them after the call returns.

export const OVERLAPPED = koffi.struct("uiinspect_OVERLAPPED", {
  Internal: "uintptr_t",
  InternalHigh: "uintptr_t",
  Offset: "uint32_t",
  OffsetHigh: "uint32_t",
  hEvent: "intptr_t",
});
export const SECURITY_ATTRIBUTES = koffi.struct("uiinspect_SECURITY_ATTRIBUTES", {
  nLength: "uint32_t",
  lpSecurityDescriptor: "void *",
  bInheritHandle: "int",
});

/** koffi.alloc'd memory, or a pointer koffi handed back (an out parameter). */
export type Mem = unknown;

export const ReadFile = bind<[H, Mem, number, null, Mem], number>(
  K,
  "int __stdcall ReadFile(intptr_t h, void *buf, uint32_t n, void *read, void *ov)",
);
export const WriteFile = bind<[H, Mem, number, null, Mem], number>(
  K,
  "int __stdcall WriteFile(intptr_t h, void *buf, uint32_t n, void *written, void *ov)",
);
export const GetOverlappedResult = bind<[H, Mem, number[], number], number>(
  K,
  "int __stdcall GetOverlappedResult(intptr_t h, void *ov, _Out_ uint32_t *n, int wait)",
);
export const CancelIoEx = bind<[H, Mem | null], number>(K, "int __stdcall CancelIoEx(intptr_t h, void *ov)");
export const CreateEventW = bind<[null, number, number, null], H>(
  K,
  "intptr_t __stdcall CreateEventW(void *sa, int manual, int initial, void *name)",
);
export const SetEvent = bind<[H], number>(K, "int __stdcall SetEvent(intptr_t h)");
export const ResetEvent = bind<[H], number>(K, "int __stdcall ResetEvent(intptr_t h)");
export const WaitForSingleObject = bind<[H, number], number>(
  K,
  "uint32_t __stdcall WaitForSingleObject(intptr_t h, uint32_t ms)",
);
let waitForMultipleObjects: { async: AnyFn } | null = null;
/** WaitForMultipleObjects on koffi's worker pool (the broker's loop must not block its thread). */
export function waitForMultipleObjectsAsync(
  handles: H[],
  ms: number,
  done: (err: unknown, r: number) => void,
): void {
  const l = lib(K);
  if (!l) throw new Error(`${K} unavailable`);
  waitForMultipleObjects ??= l.func(
    "uint32_t __stdcall WaitForMultipleObjects(uint32_t n, intptr_t *handles, int all, uint32_t ms)",
  ) as { async: AnyFn };
  waitForMultipleObjects.async(handles.length, handles, 0, ms, done);
}
export const LocalFree = bind<[Mem], Mem>(K, "void * __stdcall LocalFree(void *p)");
export const CreateNamedPipeW = bind<
  [string, number, number, number, number, number, number, Record<string, unknown>],
  H
>(
  K,
  "intptr_t __stdcall CreateNamedPipeW(const char16_t *name, uint32_t openMode, uint32_t pipeMode, uint32_t maxInstances, uint32_t outSize, uint32_t inSize, uint32_t timeout, uiinspect_SECURITY_ATTRIBUTES *sa)",
);
export const ConnectNamedPipe = bind<[H, Mem], number>(
  K,
  "int __stdcall ConnectNamedPipe(intptr_t h, void *ov)",
);
export const DisconnectNamedPipe = bind<[H], number>(K, "int __stdcall DisconnectNamedPipe(intptr_t h)");
export const GetNamedPipeClientProcessId = bind<[H, number[]], number>(
  K,
  "int __stdcall GetNamedPipeClientProcessId(intptr_t h, _Out_ uint32_t *pid)",
);
export const GetNamedPipeServerProcessId = bind<[H, number[]], number>(
  K,
  "int __stdcall GetNamedPipeServerProcessId(intptr_t h, _Out_ uint32_t *pid)",
);
export const CreateFileW = bind<[string, number, number, null, number, number, H], H>(
  K,
  "intptr_t __stdcall CreateFileW(const char16_t *name, uint32_t access, uint32_t share, void *sa, uint32_t disposition, uint32_t flags, intptr_t template)",
);
export const WaitNamedPipeW = bind<[string, number], number>(
  K,
  "int __stdcall WaitNamedPipeW(const char16_t *name, uint32_t ms)",
);
export const CreateMutexW = bind<[null, number, string], H>(
  K,
  "intptr_t __stdcall CreateMutexW(void *sa, int owner, const char16_t *name)",
);
export const ReleaseMutex = bind<[H], number>(K, "int __stdcall ReleaseMutex(intptr_t h)");
export const ConvertStringSecurityDescriptorToSecurityDescriptorW = bind<
  [string, number, Mem[], null],
  number
>(
  A,
  "int __stdcall ConvertStringSecurityDescriptorToSecurityDescriptorW(const char16_t *sddl, uint32_t rev, _Out_ void **sd, void *size)",
);
export const ConvertSidToStringSidW = bind<[Mem, Mem[]], number>(
  A,
  "int __stdcall ConvertSidToStringSidW(void *sid, _Out_ void **str)",
);
export const GetSecurityInfo = bind<[H, number, number, Mem[], null, null, null, Mem[]], number>(
  A,
  "uint32_t __stdcall GetSecurityInfo(intptr_t h, int type, uint32_t info, _Out_ void **owner, void *group, void *dacl, void *sacl, _Out_ void **sd)",
);

// gdi32 ----------------------------------------------------------------------------
const G = "gdi32.dll";
export const CreateCompatibleDC = bind<[H], H>(G, "intptr_t __stdcall CreateCompatibleDC(intptr_t hdc)");
export const CreateCompatibleBitmap = bind<[H, number, number], H>(
  G,
  "intptr_t __stdcall CreateCompatibleBitmap(intptr_t hdc, int w, int h)",
);
export const SelectObject = bind<[H, H], H>(G, "intptr_t __stdcall SelectObject(intptr_t hdc, intptr_t obj)");
export const DeleteObject = bind<[H], number>(G, "int __stdcall DeleteObject(intptr_t obj)");
export const DeleteDC = bind<[H], number>(G, "int __stdcall DeleteDC(intptr_t hdc)");
export const BitBlt = bind<[H, number, number, number, number, H, number, number, number], number>(
  G,
  "int __stdcall BitBlt(intptr_t dst, int x, int y, int w, int h, intptr_t src, int sx, int sy, uint32_t rop)",
);
export const GetDIBits = bind<[H, H, number, number, Buffer, Buffer, number], number>(
  G,
  "int __stdcall GetDIBits(intptr_t hdc, intptr_t bmp, uint32_t start, uint32_t lines, _Out_ void *bits, _Inout_ void *bmi, uint32_t usage)",
);

// dwmapi (may be missing or unimplemented: callers fall back explicitly) -------------
export const DwmGetWindowAttribute = optional<[H, number, Buffer, number], number>(
  "dwmapi.dll",
  "int __stdcall DwmGetWindowAttribute(intptr_t hwnd, uint32_t attr, _Out_ void *value, uint32_t size)",
);

// ole32 / oleaut32 (COM) -----------------------------------------------------------
export const CoInitializeEx = optional<[Ptr, number], number>(
  "ole32.dll",
  "int __stdcall CoInitializeEx(void *res, uint32_t flags)",
);
export const CoUninitialize = optional<[], void>("ole32.dll", "void __stdcall CoUninitialize()");
export const CoCreateInstance = optional<[Buffer, Ptr, number, Buffer, Buffer], number>(
  "ole32.dll",
  "int __stdcall CoCreateInstance(void *clsid, void *outer, uint32_t ctx, void *iid, _Out_ void *out)",
);
export const SysAllocString = optional<[string], Ptr>(
  "oleaut32.dll",
  "void * __stdcall SysAllocString(const char16_t *s)",
);
export const SysFreeString = optional<[Ptr], void>(
  "oleaut32.dll",
  "void __stdcall SysFreeString(void *bstr)",
);
export const SysStringLen = optional<[Ptr], number>(
  "oleaut32.dll",
  "uint32_t __stdcall SysStringLen(void *bstr)",
);
export const VariantClear = optional<[Buffer], number>(
  "oleaut32.dll",
  "int __stdcall VariantClear(_Inout_ void *v)",
);

// Helpers --------------------------------------------------------------------------

/** Reads a NUL-terminated or length-limited UTF-16LE string out of a buffer. */
export function utf16(buf: Buffer, chars: number): string {
  return buf.toString("utf16le", 0, Math.max(0, chars) * 2);
}

/** A RECT out-buffer → [l, t, r, b]. */
export function readRect(buf: Buffer, offset = 0): [number, number, number, number] {
  return [
    buf.readInt32LE(offset),
    buf.readInt32LE(offset + 4),
    buf.readInt32LE(offset + 8),
    buf.readInt32LE(offset + 12),
  ];
}

/** Packs a GUID string into its 16-byte binary layout. */
export function guid(s: string): Buffer {
  const h = s.replace(/[{}-]/g, "");
  const b = Buffer.alloc(16);
  b.writeUInt32LE(Number.parseInt(h.slice(0, 8), 16), 0);
  b.writeUInt16LE(Number.parseInt(h.slice(8, 12), 16), 4);
  b.writeUInt16LE(Number.parseInt(h.slice(12, 16), 16), 6);
  for (let i = 0; i < 8; i++) b[8 + i] = Number.parseInt(h.slice(16 + i * 2, 18 + i * 2), 16);
  return b;
}

/** Registers a JS function as a native callback for the duration of `body`, then unregisters it. */
export function withCallback<T>(
  fn: (...args: number[]) => number,
  proto: TypeObject,
  body: (ptr: bigint) => T,
): T {
  const ptr = koffi.register(fn, koffi.pointer(proto));
  try {
    return body(ptr);
  } finally {
    koffi.unregister(ptr);
  }
}

export { koffi };
