import type { Ptr, X11Native } from "../../os/linux/xlib.js";

/**
 * One key's auto-repeat in the X server's keyboard control (core protocol, global to the
 * server: any client may read or change it). The input port turns it off for a held key; the
 * release guardian turns it back on when the worker that held the key died.
 */

/** XKeyboardControl (8 ints) and the masks for one key's auto-repeat mode. */
const KEYBOARD_CONTROL_SIZE = 32;
const KBC_KEY_OFFSET = 24;
const KBC_AUTO_REPEAT_MODE_OFFSET = 28;
const KB_KEY = 1 << 6;
const KB_AUTO_REPEAT_MODE = 1 << 7;
const AUTO_REPEAT_OFF = 0;
const AUTO_REPEAT_ON = 1;
/** XKeyboardState on LP64: 4 ints, unsigned long led_mask, int global_auto_repeat, char[32]. */
const KEYBOARD_STATE_SIZE = 64;
const AUTO_REPEATS_OFFSET = 28;

/** The keycodes that auto-repeat now (XGetKeyboardControl's auto_repeats bit vector). */
export function autoRepeatingKeys(n: X11Native, dpy: Ptr): number[] {
  const state = Buffer.alloc(KEYBOARD_STATE_SIZE);
  n.XGetKeyboardControl(dpy, state);
  const out: number[] = [];
  for (let kc = 0; kc < 256; kc++)
    if ((((state[AUTO_REPEATS_OFFSET + (kc >> 3)] ?? 0) >> (kc & 7)) & 1) === 1) out.push(kc);
  return out;
}

/** Whether keycode `kc` auto-repeats now. */
export function keyAutoRepeats(n: X11Native, dpy: Ptr, kc: number): boolean {
  return autoRepeatingKeys(n, dpy).includes(kc);
}

/** Turns keycode `kc`'s auto-repeat on or off (XChangeKeyboardControl KBKey | KBAutoRepeatMode). */
export function setKeyAutoRepeat(n: X11Native, dpy: Ptr, kc: number, on: boolean): void {
  const values = Buffer.alloc(KEYBOARD_CONTROL_SIZE);
  values.writeInt32LE(kc, KBC_KEY_OFFSET);
  values.writeInt32LE(on ? AUTO_REPEAT_ON : AUTO_REPEAT_OFF, KBC_AUTO_REPEAT_MODE_OFFSET);
  n.XChangeKeyboardControl(dpy, KB_KEY | KB_AUTO_REPEAT_MODE, values);
}
