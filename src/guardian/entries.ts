import type { MouseButton } from "../shared/platform.js";

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

const BUTTONS: ReadonlySet<string> = new Set(["left", "right", "middle"]);
const KEY_NAME = /^[a-z0-9]{1,9}$/;

/**
 * One entry as a line field: `k ctrl`, `b left`, `c 38`, `r 247 16777537`, `a 38`. Names only,
 * never text.
 */
export function encodeEntry(e: HeldEntry): string {
  switch (e.kind) {
    case "key":
      return `k ${e.key}`;
    case "button":
      return `b ${e.button}`;
    case "keycode":
      return `c ${e.code}`;
    case "remap":
      return `r ${e.code} ${e.keysym}`;
    case "repeat":
      return `a ${e.code}`;
  }
}

const int = (s: string | undefined, max: number): number | null =>
  s !== undefined && /^\d{1,10}$/.test(s) && Number(s) <= max ? Number(s) : null;

/** The entry of `encodeEntry`, or null for anything else (the guardian drops malformed lines). */
export function decodeEntry(fields: readonly string[]): HeldEntry | null {
  const [kind, a, b, extra] = fields;
  if (extra !== undefined) return null;
  if (kind === "k" && a !== undefined && KEY_NAME.test(a) && b === undefined) return { kind: "key", key: a };
  if (kind === "b" && a !== undefined && BUTTONS.has(a) && b === undefined)
    return { kind: "button", button: a as MouseButton };
  if ((kind === "c" || kind === "a") && b === undefined) {
    const code = int(a, 255);
    if (code === null) return null;
    return kind === "c" ? { kind: "keycode", code } : { kind: "repeat", code };
  }
  if (kind === "r") {
    const code = int(a, 255);
    const keysym = int(b, 0x1ffffff);
    return code === null || keysym === null ? null : { kind: "remap", code, keysym };
  }
  return null;
}

/** Identity of an entry in a held set (a remap is identified by its keycode alone). */
export function entryKey(e: HeldEntry): string {
  return e.kind === "remap" ? `r ${e.code}` : encodeEntry(e);
}
