import { buttonFlags, keyEvent, send } from "../platforms/win32/input.js";
import type { HeldEntry } from "../shared/pressLedger.js";
import type { Releaser } from "./guardian.js";

/**
 * Win32: SendInput key-ups and button-ups from the guardian's own process (same desktop as the
 * server). Windows has no keymap we change (text goes out as KEYEVENTF_UNICODE), so there is no
 * remap to restore.
 */
export class Win32Releaser implements Releaser {
  async release(entries: readonly HeldEntry[]): Promise<void> {
    for (const e of entries) {
      try {
        if (e.kind === "key") send([keyEvent(e.key, true)]);
        else if (e.kind === "button")
          send([{ kind: "mouse", dx: 0, dy: 0, data: 0, flags: buttonFlags(e.button, false) }]);
      } catch {
        // one failed release does not stop the others
      }
    }
  }

  close(): void {}
}
