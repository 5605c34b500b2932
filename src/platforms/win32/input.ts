import * as w from "../../os/win32/ffi.js";
import { assertTargetable, type SelfGuard, windowPid } from "../../os/win32/identity.js";
import { dialogGate } from "../../shared/dialogGate.js";
import { uiError } from "../../shared/errors.js";
import type {
  InputPort,
  LiveProof,
  LogicalKey,
  MouseButton,
  PressReceipt,
  TextMode,
} from "../../shared/platform.js";
import { parseHwnd, virtualScreenRect } from "./desktop.js";
import { vkFor } from "./keys.js";

const INPUT_MOUSE = 0;
const INPUT_KEYBOARD = 1;
/** sizeof(INPUT) on x64: DWORD type, 4 bytes padding, 32-byte union. */
const INPUT_SIZE = 40;

const MOUSEEVENTF_MOVE = 0x0001;
const MOUSEEVENTF_LEFTDOWN = 0x0002;
const MOUSEEVENTF_LEFTUP = 0x0004;
const MOUSEEVENTF_RIGHTDOWN = 0x0008;
const MOUSEEVENTF_RIGHTUP = 0x0010;
const MOUSEEVENTF_MIDDLEDOWN = 0x0020;
const MOUSEEVENTF_MIDDLEUP = 0x0040;
const MOUSEEVENTF_WHEEL = 0x0800;
const MOUSEEVENTF_VIRTUALDESK = 0x4000;
const MOUSEEVENTF_ABSOLUTE = 0x8000;
const WHEEL_DELTA = 120;

const KEYEVENTF_EXTENDEDKEY = 0x1;
const KEYEVENTF_KEYUP = 0x2;
const KEYEVENTF_UNICODE = 0x4;
const MAPVK_VK_TO_VSC = 0;
const VK_RETURN = 0x0d;

const WM_CHAR = 0x0102;
const SMTO_ABORTIFHUNG = 0x2;
const SMTO_BLOCK = 0x1;

export interface MouseEvent {
  kind: "mouse";
  dx: number;
  dy: number;
  data: number;
  flags: number;
}
export interface KeyEvent {
  kind: "key";
  vk: number;
  scan: number;
  flags: number;
}
export type InputEvent = MouseEvent | KeyEvent;

/** Packs INPUT structures (x64 layout) for SendInput. */
export function packInputs(events: readonly InputEvent[]): Buffer {
  const buf = Buffer.alloc(events.length * INPUT_SIZE);
  events.forEach((e, i) => {
    const o = i * INPUT_SIZE;
    if (e.kind === "mouse") {
      buf.writeUInt32LE(INPUT_MOUSE, o);
      buf.writeInt32LE(e.dx, o + 8);
      buf.writeInt32LE(e.dy, o + 12);
      buf.writeInt32LE(e.data, o + 16); // mouseData is a DWORD; wheel deltas are signed
      buf.writeUInt32LE(e.flags, o + 20);
    } else {
      buf.writeUInt32LE(INPUT_KEYBOARD, o);
      buf.writeUInt16LE(e.vk, o + 8);
      buf.writeUInt16LE(e.scan, o + 10);
      buf.writeUInt32LE(e.flags, o + 12);
    }
  });
  return buf;
}

export function send(events: readonly InputEvent[]): void {
  if (events.length === 0) return;
  const n = w.SendInput(events.length, packInputs(events), INPUT_SIZE);
  // SendInput returns how many events it inserted; fewer means UIPI or a desktop switch blocked it.
  if (n !== events.length) throw uiError("platform_unavailable", "The system refused the synthetic input.");
}

/**
 * Absolute coordinates for MOUSEEVENTF_ABSOLUTE | MOUSEEVENTF_VIRTUALDESK: 0…65535 spans the
 * virtual desktop (all monitors), so a point maps to round((p - origin) * 65535 / (size - 1)).
 */
export function normalizeToVirtualDesk(
  x: number,
  y: number,
  vs = virtualScreenRect(),
): { dx: number; dy: number } {
  const wdt = Math.max(2, vs[2] - vs[0]);
  const hgt = Math.max(2, vs[3] - vs[1]);
  return {
    dx: Math.round(((x - vs[0]) * 65535) / (wdt - 1)),
    dy: Math.round(((y - vs[1]) * 65535) / (hgt - 1)),
  };
}

export function buttonFlags(b: MouseButton, down: boolean): number {
  switch (b) {
    case "left":
      return down ? MOUSEEVENTF_LEFTDOWN : MOUSEEVENTF_LEFTUP;
    case "right":
      return down ? MOUSEEVENTF_RIGHTDOWN : MOUSEEVENTF_RIGHTUP;
    case "middle":
      return down ? MOUSEEVENTF_MIDDLEDOWN : MOUSEEVENTF_MIDDLEUP;
  }
}

export function keyEvent(key: LogicalKey, up: boolean): KeyEvent {
  const info = vkFor(key);
  if (!info) throw uiError("invalid_argument", "That key is not allowed.");
  const scan = w.MapVirtualKeyW(info.vk, MAPVK_VK_TO_VSC) & 0xffff;
  let flags = up ? KEYEVENTF_KEYUP : 0;
  if (info.extended) flags |= KEYEVENTF_EXTENDEDKEY;
  return { kind: "key", vk: info.vk, scan, flags };
}

/**
 * Text as KEYEVENTF_UNICODE events: one down/up pair per UTF-16 code unit, so an astral
 * character goes out as its surrogate pair (high then low), which the receiving thread's
 * TranslateMessage turns into the two WM_CHARs an edit control expects. Line breaks are
 * pressed as the Enter key (a bare LF is not what a person types).
 */
export function unicodeEvents(text: string): KeyEvent[] {
  const out: KeyEvent[] = [];
  const t = text.replace(/\r\n?/g, "\n");
  for (let i = 0; i < t.length; i++) {
    const unit = t.charCodeAt(i);
    if (unit === 0x0a) {
      const scan = w.MapVirtualKeyW(VK_RETURN, MAPVK_VK_TO_VSC) & 0xffff;
      out.push({ kind: "key", vk: VK_RETURN, scan, flags: 0 });
      out.push({ kind: "key", vk: VK_RETURN, scan, flags: KEYEVENTF_KEYUP });
      continue;
    }
    out.push({ kind: "key", vk: 0, scan: unit, flags: KEYEVENTF_UNICODE });
    out.push({ kind: "key", vk: 0, scan: unit, flags: KEYEVENTF_UNICODE | KEYEVENTF_KEYUP });
  }
  return out;
}

/** The focused control of the window's GUI thread (GetGUIThreadInfo), or the window itself. */
export function focusedControl(hwnd: number): number {
  const { tid } = windowPid(hwnd);
  // GUITHREADINFO (x64): cbSize@0 (72 bytes), hwndActive@8, hwndFocus@16.
  const info = Buffer.alloc(72);
  info.writeUInt32LE(72, 0);
  if (tid && w.GetGUIThreadInfo(tid, info)) {
    const focus = Number(info.readBigInt64LE(16));
    if (focus) return focus;
  }
  return hwnd;
}

export class Win32Input implements InputPort {
  constructor(private readonly guard: SelfGuard) {}

  async moveTo(x: number, y: number): Promise<void> {
    const { dx, dy } = normalizeToVirtualDesk(x, y);
    send([
      {
        kind: "mouse",
        dx,
        dy,
        data: 0,
        flags: MOUSEEVENTF_MOVE | MOUSEEVENTF_ABSOLUTE | MOUSEEVENTF_VIRTUALDESK,
      },
    ]);
  }

  async buttonDown(button: MouseButton): Promise<PressReceipt | null> {
    send([{ kind: "mouse", dx: 0, dy: 0, data: 0, flags: buttonFlags(button, true) }]);
    // SendInput does not say which window the press reached.
    return null;
  }

  async buttonUp(button: MouseButton): Promise<void> {
    send([{ kind: "mouse", dx: 0, dy: 0, data: 0, flags: buttonFlags(button, false) }]);
  }

  async wheel(notches: number): Promise<void> {
    if (!Number.isInteger(notches) || notches === 0) return;
    send([{ kind: "mouse", dx: 0, dy: 0, data: notches * WHEEL_DELTA, flags: MOUSEEVENTF_WHEEL }]);
  }

  async keyDown(key: LogicalKey): Promise<void> {
    send([keyEvent(key, false)]);
  }

  async keyUp(key: LogicalKey): Promise<void> {
    send([keyEvent(key, true)]);
  }

  async typeText(
    hwnd: string,
    text: string,
    mode: TextMode,
    beforeEachKey?: () => Promise<LiveProof | null | undefined>,
  ): Promise<void> {
    const h = parseHwnd(hwnd);
    const { pid } = windowPid(h);
    assertTargetable(pid, this.guard);
    if (mode === "sendinput") {
      // Focus and identity are verified before every character, not once per text.
      for (const ch of text) {
        await beforeEachKey?.();
        dialogGate.assertNoDialog();
        send(unicodeEvents(ch));
      }
      return;
    }
    // wm_char: characters straight to the focused control of the target's thread, which must
    // belong to the target process (never to whatever else has focus). A bounded send (not a
    // post) keeps order and cannot hang this worker on a stuck target.
    const focus = focusedControl(h);
    if (windowPid(focus).pid !== pid)
      throw uiError("not_foreground", "The focused control is not the target's.");
    const t = text.replace(/\r\n?|\n/g, "\r");
    for (let i = 0; i < t.length; i++) {
      await beforeEachKey?.();
      dialogGate.assertNoDialog();
      const r = w.SendMessageTimeoutW(
        focus,
        WM_CHAR,
        t.charCodeAt(i),
        1,
        SMTO_ABORTIFHUNG | SMTO_BLOCK,
        2000,
        null,
      );
      if (!r) throw uiError("worker_timeout", "The target did not accept the characters in time.");
    }
  }
}
