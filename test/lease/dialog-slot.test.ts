import { describe, expect, it } from "vitest";
import { DialogSlot } from "../../src/lease/broker.js";
import type { LeaseDialog, LeaseDialogAnswer, LeaseDialogContent } from "../../src/lease/dialog.js";
import { codeOf } from "../support/codes.js";

/**
 * The lease dialog slot answers a timeout at once, even while the dialog's window is still
 * closing (a dialog process can take seconds to exit on a loaded machine, past the request's
 * deadline, which then answered broker_unavailable instead of consent_timeout), and opens no
 * second dialog until the first has closed.
 */

/** A dialog that is shown until the test closes it, whatever its signal says. */
class SlowToClose implements LeaseDialog {
  readonly kind = "test";
  shown = 0;
  aborted = false;
  private closeIt: (() => void) | null = null;
  prompt(_content: LeaseDialogContent, signal: AbortSignal): Promise<LeaseDialogAnswer> {
    this.shown++;
    return new Promise((_, reject) => {
      signal.addEventListener("abort", () => {
        this.aborted = true;
      });
      this.closeIt = () => reject(new Error("closed"));
    });
  }
  close(): void {
    this.closeIt?.();
  }
}

describe("lease dialog slot", () => {
  it("a dialog nobody answers is consent_timeout at the deadline, before its window has closed; no second dialog meanwhile", async () => {
    const dialog = new SlowToClose();
    const slot = new DialogSlot(dialog, 60_000);
    const ask = () =>
      slot.ask("activate", 1, ["inspect"], Date.now() + 3_600_000, 700, new AbortController().signal);
    // The request's 700 ms leave the dialog 200 ms (the broker's margin is 500 ms).
    expect(await codeOf(ask())).toBe("consent_timeout");
    expect(dialog.aborted).toBe(true);
    // Still closing: the slot stays taken.
    expect(await codeOf(ask())).toBe("rate_limited");
    expect(dialog.shown).toBe(1);
    dialog.close();
    await new Promise((r) => setTimeout(r, 0));
    // Closed: the next request shows a dialog again.
    const third = codeOf(ask());
    expect(dialog.shown).toBe(2);
    expect(await third).toBe("consent_timeout");
    dialog.close();
  });

  it("the caller leaving (its request ends) is consent_timeout at once as well", async () => {
    const dialog = new SlowToClose();
    const slot = new DialogSlot(dialog, 60_000);
    const ac = new AbortController();
    const pending = codeOf(slot.ask("extend", 1, ["inspect"], Date.now() + 3_600_000, 30_000, ac.signal));
    ac.abort();
    expect(await pending).toBe("consent_timeout");
    dialog.close();
  });
});
