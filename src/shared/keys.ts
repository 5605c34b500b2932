/** The logical keys of docs/spec.md §6. Nothing else can be pressed: no Windows key, no system chords. */
const NAMED_KEYS = [
  "up",
  "down",
  "left",
  "right",
  "space",
  "enter",
  "esc",
  "tab",
  "backspace",
  "delete",
  "home",
  "end",
  "pageup",
  "pagedown",
] as const;

const LETTERS = Array.from({ length: 26 }, (_, i) => String.fromCharCode(97 + i));
const DIGITS = Array.from({ length: 10 }, (_, i) => String(i));
const FUNCTION_KEYS = Array.from({ length: 12 }, (_, i) => `f${i + 1}`);

export const ALLOWED_KEYS: ReadonlySet<string> = new Set<string>([
  ...NAMED_KEYS,
  ...LETTERS,
  ...DIGITS,
  ...FUNCTION_KEYS,
]);

export const MODIFIERS = ["ctrl", "shift", "alt"] as const;
export type Modifier = (typeof MODIFIERS)[number];

/**
 * Chords that reach the system rather than the window (task switching, closing,
 * lock/log-off, task manager, desktop switching). Refused even though each key is allowed.
 */
const SYSTEM_CHORDS: ReadonlyArray<{ mods: Modifier[]; key: string }> = [
  { mods: ["alt"], key: "tab" },
  { mods: ["alt", "shift"], key: "tab" },
  { mods: ["alt"], key: "f4" },
  { mods: ["alt"], key: "esc" },
  { mods: ["alt", "shift"], key: "esc" },
  { mods: ["ctrl"], key: "esc" },
  { mods: ["ctrl", "shift"], key: "esc" },
  { mods: ["ctrl", "alt"], key: "delete" },
  { mods: ["ctrl", "alt"], key: "backspace" },
  { mods: ["alt"], key: "space" },
  { mods: ["ctrl", "alt"], key: "left" },
  { mods: ["ctrl", "alt"], key: "right" },
  { mods: ["ctrl", "alt"], key: "up" },
  { mods: ["ctrl", "alt"], key: "down" },
  { mods: ["ctrl", "alt"], key: "l" },
  { mods: ["ctrl", "alt"], key: "t" },
];

export function isAllowedKey(key: string): boolean {
  return ALLOWED_KEYS.has(key);
}

const ARROWS: ReadonlySet<string> = new Set(["left", "right", "up", "down"]);

export function isSystemChord(mods: readonly Modifier[], key: string): boolean {
  const set = new Set(mods);
  // Ctrl+Alt+F1..F12 switch virtual terminals on Linux.
  if (set.has("ctrl") && set.has("alt") && /^f\d+$/.test(key)) return true;
  // Desktop-shell launchers and run-command dialogs (GNOME/KDE/Xfce/openbox: Alt+F1 menu, Alt+F2
  // run dialog, Alt+F3 app finder), with or without more modifiers: the text typed next would go
  // to a shell prompt, not to the target.
  if (set.has("alt") && (key === "f1" || key === "f2" || key === "f3")) return true;
  // Alt+F7/F8 move/resize the window in most window managers (the pointer then drags it).
  if (set.has("alt") && (key === "f7" || key === "f8")) return true;
  // Shift+Alt+arrows (and Ctrl+Shift+Alt+arrows) move windows between workspaces/monitors.
  if (set.has("alt") && set.has("shift") && ARROWS.has(key)) return true;
  // Windows: Ctrl+Shift+Esc (task manager) is listed below; Win-key chords (Win+R run dialog,
  // Win+X) cannot be expressed at all: the Windows/Super key is not on the allow-list.
  return SYSTEM_CHORDS.some(
    (c) => c.key === key && c.mods.length === set.size && c.mods.every((m) => set.has(m)),
  );
}
