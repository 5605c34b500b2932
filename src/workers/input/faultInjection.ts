import { existsSync, readFileSync, unlinkSync } from "node:fs";
import { triggerFault } from "../../platforms/fake/faults.js";

/** Polling period of the fault file: well inside any gesture's hold or settle time. */
const POLL_MS = 20;

/**
 * A test seam for the release fault battery on a real desktop, armed only when the server was
 * started with UIINSPECT_TEST_INPUT_FAULT_FILE: when that file appears, the input worker reads the
 * fault kind written in it ("throw" or "exit"), removes the file (so the replacement worker does
 * not suffer it too) and suffers that fault there and then, mid gesture, whatever it is doing. It
 * can only end this worker, never make it press anything.
 */
export function armFaultInjection(path: string): void {
  const timer = setInterval(() => {
    if (!existsSync(path)) return;
    let kind: string;
    try {
      kind = readFileSync(path, "utf8").trim();
      unlinkSync(path);
    } catch {
      return;
    }
    if (kind === "throw" || kind === "exit") {
      clearInterval(timer);
      void triggerFault(kind);
    }
  }, POLL_MS);
  timer.unref();
}
