/**
 * Logical key names (docs/spec.md §6 plus modifiers) and characters → X keysyms. Printable ASCII and
 * Latin-1 keysyms equal their code points; everything else uses the Unicode keysym range
 * (0x01000000 + code point), which covers astral characters too.
 */

const NAMED: Record<string, number> = {
  up: 0xff52,
  down: 0xff54,
  left: 0xff51,
  right: 0xff53,
  space: 0x0020,
  enter: 0xff0d,
  esc: 0xff1b,
  tab: 0xff09,
  backspace: 0xff08,
  delete: 0xffff,
  home: 0xff50,
  end: 0xff57,
  pageup: 0xff55,
  pagedown: 0xff56,
  ctrl: 0xffe3,
  shift: 0xffe1,
  alt: 0xffe9,
};

export const SHIFT_KEYSYM = 0xffe1;

/** The keysym of a logical key name, or null when the name is not allow-listed. */
export function keysymForKey(name: string): number | null {
  const k = name.toLowerCase();
  const named = NAMED[k];
  if (named !== undefined) return named;
  if (/^[a-z0-9]$/.test(k)) return k.charCodeAt(0);
  const f = /^f([1-9]|1[0-2])$/.exec(k);
  if (f) return 0xffbe + Number(f[1]) - 1;
  return null;
}

/** The keysym that types one character (a code point). */
export function keysymForChar(cp: number): number {
  if (cp === 0x0a || cp === 0x0d) return 0xff0d;
  if (cp === 0x09) return 0xff09;
  if (cp === 0x08) return 0xff08;
  if ((cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xff)) return cp;
  return 0x01000000 + cp;
}
