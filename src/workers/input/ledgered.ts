import type { InputPort, LogicalKey, MouseButton } from "../../shared/platform.js";
import type { PressLedger } from "../../shared/pressLedger.js";

/**
 * An input port whose every press is recorded in the ledger first (and forgotten after its
 * release), so whatever ends this worker mid gesture, the guardian can let go of it. A release
 * that fails stays recorded: the guardian retries it when this worker's source is released.
 * Text is left to the platform port, which records the keycodes and remaps it uses itself.
 */
export function withLedger(input: InputPort, ledger: PressLedger): InputPort {
  return {
    moveTo: (x, y) => input.moveTo(x, y),
    wheel: (n) => input.wheel(n),
    // beforeEachKey carries the per-character verification and the dialog gate: always passed on.
    typeText: (hwnd, text, mode, beforeEachKey) => input.typeText(hwnd, text, mode, beforeEachKey),
    async buttonDown(button: MouseButton) {
      await ledger.hold([{ kind: "button", button }]);
      await input.buttonDown(button);
    },
    async buttonUp(button: MouseButton) {
      await input.buttonUp(button);
      ledger.release([{ kind: "button", button }]);
    },
    async keyDown(key: LogicalKey) {
      await ledger.hold([{ kind: "key", key }]);
      await input.keyDown(key);
    },
    async keyUp(key: LogicalKey) {
      await input.keyUp(key);
      ledger.release([{ kind: "key", key }]);
    },
  };
}
