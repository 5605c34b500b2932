import koffi from "koffi";
import type { Ptr } from "../../os/linux/xlib.js";
import { uiError } from "../../shared/errors.js";
import { sleep } from "../../shared/sleep.js";
import type { XConnection } from "./xconn.js";
import { announce } from "./xtestRoute.js";

/**
 * Waits until the X server has processed the release of our buttons. A WM (openbox, and most
 * others) takes a press on a client window through a synchronous passive grab: the pointer is
 * frozen and its events queue in the server until the WM replays the press (XAllowEvents
 * ReplayPointer), while key events go on to the focused window unfrozen. Keys sent right after a
 * click can so reach the application before the press that moves its caret or focus (seen on a
 * loaded machine as typed text split around the click point). The core button state that
 * XQueryPointer reports changes only as the server processes the queued events, in order: once
 * the released buttons read up, the press and release were delivered, and anything sent after
 * reaches every client behind them.
 *
 * That state is the virtual core pointer's, the union of its slave devices: while another slave
 * (a physical mouse) holds the same button down, it stays down whatever our XTEST slave did, and
 * the server does not deliver our press or release of it at all (the master takes a press of a
 * button it holds down as none, xserver dix/exevents.c UpdateDeviceState), so there is nothing of
 * ours to wait for. Such a button counts as processed: each slave's own button state
 * (XIQueryDevice button class) says which slave holds it.
 */

/** Button1Mask … Button5Mask. */
const BUTTON_MASK = (button: number): number => 1 << (7 + button);
/** A WM on a loaded machine may take seconds to replay a press: a wait, not a deadline of the click. */
const PROCESSED_WAIT_MS = 10_000;
const POLL_MS = 5;
const VCP = 2;
const XI_SLAVE_POINTER = 3;
const XI_ALL_DEVICES = 0;
const XI_BUTTON_CLASS = 1;
/** sizeof(XIDeviceInfo) on LP64. */
const DEVICE_INFO_SIZE = 40;
/** XIButtonClassInfo on LP64: type, sourceid, num_buttons, labels (8), state.mask_len, state.mask (8). */
const MASK_LEN_AT = 24;
const MASK_AT = 32;
const OUR_SLAVE = "Virtual core XTEST pointer";

interface DeviceInfo {
  name: string | null;
  use: number;
  attachment: number;
  num_classes: number;
  classes: Ptr | null;
}

/** Whether a button class (an XIButtonClassInfo) shows `button` down. */
function classHolds(cls: Ptr, button: number): boolean {
  if ((koffi.decode(cls, 0, "int") as number) !== XI_BUTTON_CLASS) return false;
  const len = koffi.decode(cls, MASK_LEN_AT, "int") as number;
  const mask = koffi.decode(cls, MASK_AT, "void *") as Ptr | null;
  if (mask === null || mask === 0n || button >> 3 >= len) return false;
  const bytes = koffi.decode(mask, "uint8", len) as ArrayLike<number>;
  return ((bytes[button >> 3] ?? 0) & (1 << (button & 7))) !== 0;
}

/** The buttons of `buttons` another slave of the virtual core pointer than ours holds down. */
function heldByOtherSlaves(x: XConnection, buttons: readonly number[]): Set<number> {
  const held = new Set<number>();
  const xi = x.n.xi;
  if (!xi || buttons.length === 0) return held;
  announce(x);
  const count = [0];
  const list = xi.XIQueryDevice(x.dpy, XI_ALL_DEVICES, count);
  if (list === null || list === 0n) return held;
  try {
    for (let i = 0; i < (count[0] ?? 0); i++) {
      const d = koffi.decode(list, i * DEVICE_INFO_SIZE, xi.DeviceInfo) as DeviceInfo;
      if (d.use !== XI_SLAVE_POINTER || d.attachment !== VCP || d.name === OUR_SLAVE) continue;
      if (d.classes === null || d.classes === 0n || d.num_classes <= 0) continue;
      const classes = koffi.decode(d.classes, "void *", d.num_classes) as Ptr[];
      for (const b of buttons) if (classes.some((c) => classHolds(c, b))) held.add(b);
    }
  } finally {
    xi.XIFreeDeviceInfo(list);
  }
  return held;
}

export async function awaitButtonsProcessed(
  x: XConnection,
  buttons: readonly number[],
  waitMs = PROCESSED_WAIT_MS,
): Promise<void> {
  const until = Date.now() + waitMs;
  for (;;) {
    const mask = [0];
    x.n.XQueryPointer(x.dpy, x.root, [0], [0], [0], [0], [0], [0], mask);
    const down = buttons.filter((b) => ((mask[0] ?? 0) & BUTTON_MASK(b)) !== 0);
    if (down.length === 0) return;
    // Down only through another device's hold: nothing of ours is queued for it.
    const elsewhere = heldByOtherSlaves(x, down);
    if (down.every((b) => elsewhere.has(b))) return;
    // Still down: another client keeps the pointer frozen.
    if (Date.now() > until)
      throw uiError("input_grabbed", "The X server has not yet delivered the button's release.");
    await sleep(POLL_MS);
  }
}
