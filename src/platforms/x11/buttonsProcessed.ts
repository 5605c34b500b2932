import { uiError } from "../../shared/errors.js";
import { sleep } from "../../shared/sleep.js";
import type { XConnection } from "./xconn.js";

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
 */

/** Button1Mask … Button5Mask. */
const BUTTON_MASK = (button: number): number => 1 << (7 + button);
/** A WM on a loaded machine may take seconds to replay a press: a wait, not a deadline of the click. */
const PROCESSED_WAIT_MS = 10_000;
const POLL_MS = 5;

export async function awaitButtonsProcessed(
  x: XConnection,
  buttons: readonly number[],
  waitMs = PROCESSED_WAIT_MS,
): Promise<void> {
  const want = buttons.reduce((m, b) => m | BUTTON_MASK(b), 0);
  const until = Date.now() + waitMs;
  for (;;) {
    const mask = [0];
    x.n.XQueryPointer(x.dpy, x.root, [0], [0], [0], [0], [0], [0], mask);
    if (((mask[0] ?? 0) & want) === 0) return;
    // Still down: another client keeps the pointer frozen (or a physical button is held).
    if (Date.now() > until)
      throw uiError("input_grabbed", "The X server has not yet delivered the button's release.");
    await sleep(POLL_MS);
  }
}
