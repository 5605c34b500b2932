import type { DialogGate } from "../../shared/dialogGate.js";
import type { ConsentAnswer, ConsentDialogContent, ConsentPrompter, DialogReport } from "./prompter.js";

/**
 * Holds the dialog gate for as long as a prompter's dialog may be on screen: from the moment it
 * is asked to show one until its promise settles (the X11 and Win32 prompters settle only once
 * their dialog is gone). While held, the input worker refuses every key and button event with
 * consent_pending. The broker never sees the difference.
 */
export class GatedPrompter implements ConsentPrompter {
  constructor(
    private readonly inner: ConsentPrompter,
    private readonly gate: DialogGate,
  ) {}

  get simulated(): boolean {
    return this.inner.simulated;
  }

  async prompt(
    content: ConsentDialogContent,
    signal: AbortSignal,
    onReport?: (r: DialogReport) => void,
  ): Promise<ConsentAnswer> {
    const release = this.gate.hold();
    try {
      return await this.inner.prompt(content, signal, onReport);
    } finally {
      release();
    }
  }
}
