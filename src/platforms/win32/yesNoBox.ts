import * as w from "../../os/win32/ffi.js";

/**
 * The Yes/No MessageBox that both dialog threads show (the consent dialog's fallback and the
 * lease broker's dialog): No is the default button, topmost, brought to the foreground, no owner.
 * Call it on a thread guarded by guardDialogThread (its modal loop pumps the guard's hooks).
 */

/** What a dialog thread gets from the thread that starts it. */
export interface DialogThreadInit {
  text: string;
  title: string;
  /** The unsafe test setting: injected (SendInput) input may answer; the security delay stays. */
  allowInjected: boolean;
}

export const IDYES = 6;
const MB_YESNO = 0x4;
const MB_ICONWARNING = 0x30;
const MB_DEFBUTTON2 = 0x100;
const MB_SETFOREGROUND = 0x10000;
const MB_TOPMOST = 0x40000;

/** True when the person pressed Yes; No, closing the box or a failure is false. */
export function yesNoBox(text: string, title: string): boolean {
  const r = w.MessageBoxW(
    0,
    text,
    title,
    MB_YESNO | MB_ICONWARNING | MB_DEFBUTTON2 | MB_TOPMOST | MB_SETFOREGROUND,
  );
  return r === IDYES;
}
