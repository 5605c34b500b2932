import type { InputPort, LiveProof, LogicalKey, MouseButton } from "../../shared/platform.js";
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
    wheel: (n, proof) => input.wheel(n, proof),
    // beforeEachKey carries the per-character verification and the dialog gate: always passed on.
    typeText: (hwnd, text, mode, beforeEachKey) => input.typeText(hwnd, text, mode, beforeEachKey),
    async buttonDown(button: MouseButton, proof?: LiveProof | null, proveDelivery?: boolean) {
      await ledger.hold([{ kind: "button", button }]);
      return input.buttonDown(button, proof, proveDelivery);
    },
    async buttonUp(button: MouseButton) {
      await input.buttonUp(button);
      ledger.release([{ kind: "button", button }]);
    },
    async keyDown(key: LogicalKey, proof?: LiveProof | null) {
      await ledger.hold([{ kind: "key", key }]);
      await input.keyDown(key, proof);
    },
    async keyUp(key: LogicalKey) {
      await input.keyUp(key);
      ledger.release([{ kind: "key", key }]);
    },
  };
}
