import type { MouseButton } from "../shared/platform.js";
import type { HeldEntry } from "../shared/pressLedger.js";

// The X11 input port still takes these from here; their home is src/shared/pressLedger.ts.
export { type HeldEntry, NO_LEDGER, type PressLedger } from "../shared/pressLedger.js";

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
