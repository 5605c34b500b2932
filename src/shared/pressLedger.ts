import type { MouseButton } from "./platform.js";

/**
 * What an input worker may leave behind if it dies mid gesture, as the guardian records it:
 * a logical key or mouse button held down, a raw X keycode pressed while typing text, a
 * spare X keycode remapped to a character's keysym, or an X keycode whose auto-repeat we turned
 * off for a hold (to be turned back on).
 */
export type HeldEntry =
  | { kind: "key"; key: string }
  | { kind: "button"; button: MouseButton }
  | { kind: "keycode"; code: number }
  | { kind: "remap"; code: number; keysym: number }
  | { kind: "repeat"; code: number };

/** The entries that change the keyboard's configuration rather than press something. */
export type KeyboardStateEntry = Extract<HeldEntry, { kind: "remap" | "repeat" }>;
export const isKeyboardState = (e: HeldEntry): e is KeyboardStateEntry =>
  e.kind === "remap" || e.kind === "repeat";

/**
 * Where an input port records what it is about to hold and what it let go of. `hold` resolves
 * only once the record is safe outside the worker (the guardian acknowledged it): a press is
 * emitted after that, so whatever kills the worker afterwards, the guardian knows to undo it.
 */
export interface PressLedger {
  hold(entries: readonly HeldEntry[]): Promise<void>;
  release(entries: readonly HeldEntry[]): void;
}

/** The ledger of a worker without a guardian (tests of a bare port): records nothing. */
export const NO_LEDGER: PressLedger = {
  hold: async () => undefined,
  release: () => undefined,
};
