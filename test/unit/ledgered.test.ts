import { describe, expect, it } from "vitest";
import type { InputPort } from "../../src/shared/platform.js";
import { NO_LEDGER } from "../../src/shared/pressLedger.js";
import { withLedger } from "../../src/workers/input/ledgered.js";

describe("the ledgered input port", () => {
  it("passes typeText's per-character check on to the platform port", async () => {
    const seen: string[] = [];
    const port: InputPort = {
      moveTo: async () => undefined,
      wheel: async () => undefined,
      buttonDown: async () => null,
      buttonUp: async () => undefined,
      keyDown: async () => undefined,
      keyUp: async () => undefined,
      async typeText(_hwnd, text, _mode, beforeEachKey) {
        for (const ch of text) {
          await beforeEachKey?.();
          seen.push(ch);
        }
      },
    };
    let checks = 0;
    await withLedger(port, NO_LEDGER).typeText("1", "abc", "sendinput", async () => {
      checks += 1;
      return null;
    });
    expect(seen).toEqual(["a", "b", "c"]);
    expect(checks).toBe(3);
    // A refusing check stops the text at the next character.
    seen.length = 0;
    await expect(
      withLedger(port, NO_LEDGER).typeText("1", "abc", "sendinput", async () => {
        if (seen.length === 1) throw new Error("not_foreground");
        return null;
      }),
    ).rejects.toThrow("not_foreground");
    expect(seen).toEqual(["a"]);
  });
});
