// "Another process" for the Win32 runner's grab tests, run under Wine as its
// own Windows node.exe:   node.exe --import loader.mjs grabber.mjs
// It owns one top-level window and counts every input message that window receives, plus every
// keyboard and mouse event the system delivers at all (WH_KEYBOARD_LL / WH_MOUSE_LL hooks on its
// thread see injected input aimed at ANY window). The runner drives it with window messages sent
// to that window (SendMessageTimeout across processes), so no pipe is needed while it sits in a
// modal loop (TrackPopupMenu blocks this thread and its event loop; the menu loop still
// dispatches sent and posted messages to the window procedure below):
//   GRAB_ATTACH_CAPTURE (wParam = a thread id): AttachThreadInput to that thread, SetCapture(own)
//   GRAB_RELEASE: ReleaseCapture, detach again
//   GRAB_MENU (posted; wParam = thread id to attach to first, 0 for none): TrackPopupMenu
//   GRAB_END_MENU: EndMenu, detach
//   GRAB_COUNT (wParam 0: window input messages, 1: low-level events, 2: reset both)
//   GRAB_FOREGROUND: SetForegroundWindow(own window)
//   GRAB_STEAL_AFTER (wParam = n): take the foreground once the hooks have seen n more key events
//     (from outside the sender's thread, as a chat window popping up mid-text would)
// It exits when its stdin closes (the runner ends it) or after 5 minutes.
import koffi from "koffi";

export const GRAB_ATTACH_CAPTURE = 0x8001;
export const GRAB_RELEASE = 0x8002;
export const GRAB_MENU = 0x8003;
export const GRAB_END_MENU = 0x8004;
export const GRAB_COUNT = 0x8005;
export const GRAB_FOREGROUND = 0x8006;
export const GRAB_STEAL_AFTER = 0x8007;
export const GRABBER_CLASS = "UiinspectGrabber";

const isMain = process.argv[1]?.toLowerCase().endsWith("grabber.mjs");
if (isMain) runGrabber(process.argv.slice(2).map(Number));

function runGrabber([x = 900, y = 520, cx = 300, cy = 200]) {
  const user32 = koffi.load("user32.dll");
  const kernel32 = koffi.load("kernel32.dll");
  const WndProc = koffi.proto(
    "intptr_t __stdcall GrabberWndProc(intptr_t h, uint32_t m, uintptr_t w, intptr_t l)",
  );
  const HookProc = koffi.proto("intptr_t __stdcall GrabberHookProc(int code, uintptr_t w, intptr_t l)");
  const WndClass = koffi.struct("GrabberWndClass", {
    cbSize: "uint32_t",
    style: "uint32_t",
    lpfnWndProc: "GrabberWndProc *",
    cbClsExtra: "int",
    cbWndExtra: "int",
    hInstance: "intptr_t",
    hIcon: "intptr_t",
    hCursor: "intptr_t",
    hbrBackground: "intptr_t",
    lpszMenuName: "str16",
    lpszClassName: "str16",
    hIconSm: "intptr_t",
  });
  const f = {
    RegisterClassExW: user32.func("uint16_t __stdcall RegisterClassExW(const GrabberWndClass *wc)"),
    CreateWindowExW: user32.func(
      "intptr_t __stdcall CreateWindowExW(uint32_t ex, str16 cls, str16 title, uint32_t style, int x, int y, int cx, int cy, intptr_t parent, intptr_t menu, intptr_t inst, intptr_t param)",
    ),
    DefWindowProcW: user32.func(
      "intptr_t __stdcall DefWindowProcW(intptr_t h, uint32_t m, uintptr_t w, intptr_t l)",
    ),
    PeekMessageW: user32.func(
      "int __stdcall PeekMessageW(_Out_ void *msg, intptr_t h, uint32_t a, uint32_t b, uint32_t rm)",
    ),
    TranslateMessage: user32.func("int __stdcall TranslateMessage(void *msg)"),
    DispatchMessageW: user32.func("intptr_t __stdcall DispatchMessageW(void *msg)"),
    SetWindowsHookExW: user32.func(
      "intptr_t __stdcall SetWindowsHookExW(int id, GrabberHookProc *p, intptr_t m, uint32_t t)",
    ),
    CallNextHookEx: user32.func(
      "intptr_t __stdcall CallNextHookEx(intptr_t h, int code, uintptr_t w, intptr_t l)",
    ),
    AttachThreadInput: user32.func("int __stdcall AttachThreadInput(uint32_t a, uint32_t b, int attach)"),
    SetCapture: user32.func("intptr_t __stdcall SetCapture(intptr_t h)"),
    GetCapture: user32.func("intptr_t __stdcall GetCapture()"),
    ReleaseCapture: user32.func("int __stdcall ReleaseCapture()"),
    CreatePopupMenu: user32.func("intptr_t __stdcall CreatePopupMenu()"),
    AppendMenuW: user32.func(
      "int __stdcall AppendMenuW(intptr_t m, uint32_t flags, uintptr_t id, str16 item)",
    ),
    TrackPopupMenu: user32.func(
      "int __stdcall TrackPopupMenu(intptr_t m, uint32_t flags, int x, int y, int r, intptr_t h, void *rect)",
    ),
    EndMenu: user32.func("int __stdcall EndMenu()"),
    DestroyMenu: user32.func("int __stdcall DestroyMenu(intptr_t m)"),
    SetForegroundWindow: user32.func("int __stdcall SetForegroundWindow(intptr_t h)"),
    GetForegroundWindow: user32.func("intptr_t __stdcall GetForegroundWindow()"),
    PostMessageW: user32.func("int __stdcall PostMessageW(intptr_t h, uint32_t m, uintptr_t w, intptr_t l)"),
    GetCurrentThreadId: kernel32.func("uint32_t __stdcall GetCurrentThreadId()"),
    GetModuleHandleW: kernel32.func("intptr_t __stdcall GetModuleHandleW(str16 name)"),
  };
  const me = f.GetCurrentThreadId();
  const inst = f.GetModuleHandleW(null);
  let windowInput = 0;
  let lowLevel = 0;
  let attachedTo = 0;
  let stealIn = 0;
  const detach = () => {
    if (attachedTo) f.AttachThreadInput(me, attachedTo, 0);
    attachedTo = 0;
  };
  const attach = (tid) => {
    detach();
    if (tid && f.AttachThreadInput(me, tid, 1)) attachedTo = tid;
    return attachedTo !== 0;
  };
  let hwnd = 0;
  const proc = koffi.register((h, m, wp, lp) => {
    // WM_KEYFIRST…WM_KEYLAST, WM_MOUSEFIRST…WM_MOUSELAST: anything a key or a click produces here.
    if ((m >= 0x100 && m <= 0x109) || (m >= 0x200 && m <= 0x20e)) windowInput += 1;
    switch (m) {
      case GRAB_ATTACH_CAPTURE:
        if (!attach(Number(wp))) return 0;
        f.SetCapture(h);
        return f.GetCapture() === h ? 1 : 0;
      case GRAB_RELEASE:
        f.ReleaseCapture();
        detach();
        return 1;
      case GRAB_MENU: {
        if (Number(wp)) attach(Number(wp));
        const menu = f.CreatePopupMenu();
        f.AppendMenuW(menu, 0, 1, "Grabber item one");
        f.AppendMenuW(menu, 0, 2, "Grabber item two");
        // TPM_RETURNCMD | TPM_NONOTIFY: blocks in the menu's modal loop until EndMenu.
        f.TrackPopupMenu(menu, 0x0100 | 0x0080, x + 10, y + 10, 0, h, null);
        f.DestroyMenu(menu);
        detach();
        return 0;
      }
      case GRAB_END_MENU:
        f.EndMenu();
        return 1;
      case GRAB_COUNT: {
        const which = Number(wp);
        if (which === 2) {
          windowInput = 0;
          lowLevel = 0;
          return 1;
        }
        return which === 1 ? lowLevel : windowInput;
      }
      case GRAB_FOREGROUND:
        f.SetForegroundWindow(h);
        return f.GetForegroundWindow() === h ? 1 : 0;
      case GRAB_STEAL_AFTER:
        stealIn = Number(wp);
        return 1;
    }
    return f.DefWindowProcW(h, m, wp, lp);
  }, koffi.pointer(WndProc));
  const mouseHook = koffi.register((code, wp, lp) => {
    if (code === 0) lowLevel += 1;
    return f.CallNextHookEx(0, code, wp, lp);
  }, koffi.pointer(HookProc));
  const keyHook = koffi.register((code, wp, lp) => {
    if (code === 0) {
      lowLevel += 1;
      // Posted, so the foreground changes after this event went on to its window.
      if (stealIn > 0 && --stealIn === 0) f.PostMessageW(hwnd, GRAB_FOREGROUND, 0, 0);
    }
    return f.CallNextHookEx(0, code, wp, lp);
  }, koffi.pointer(HookProc));

  const wc = {
    cbSize: koffi.sizeof(WndClass),
    style: 0,
    lpfnWndProc: proc,
    cbClsExtra: 0,
    cbWndExtra: 0,
    hInstance: inst,
    hIcon: 0,
    hCursor: 0,
    hbrBackground: 6, // COLOR_WINDOW + 1
    lpszMenuName: null,
    lpszClassName: GRABBER_CLASS,
    hIconSm: 0,
  };
  if (!f.RegisterClassExW(wc)) process.exit(3);
  // WS_OVERLAPPEDWINDOW | WS_VISIBLE
  hwnd = f.CreateWindowExW(0, GRABBER_CLASS, "uiinspect grabber", 0x10cf0000, x, y, cx, cy, 0, 0, inst, 0);
  if (!hwnd) process.exit(4);
  f.SetWindowsHookExW(13, keyHook, inst, 0);
  f.SetWindowsHookExW(14, mouseHook, inst, 0);

  const msg = Buffer.alloc(48);
  const pump = () => {
    while (f.PeekMessageW(msg, 0, 0, 0, 1)) {
      f.TranslateMessage(msg);
      f.DispatchMessageW(msg);
    }
  };
  const timer = setInterval(pump, 5);
  const stop = () => {
    clearInterval(timer);
    process.exit(0);
  };
  process.stdin.on("end", stop);
  process.stdin.on("error", stop);
  process.stdin.resume();
  setTimeout(stop, 5 * 60_000).unref();
}
