/**
 * Logical keys of docs/spec.md §6 (+ modifiers) → Windows virtual-key codes. Keys marked extended
 * are sent with KEYEVENTF_EXTENDEDKEY (the navigation block and arrows), as a keyboard would.
 */
export interface VkInfo {
  vk: number;
  extended: boolean;
}

const NAMED: Record<string, VkInfo> = {
  up: { vk: 0x26, extended: true },
  down: { vk: 0x28, extended: true },
  left: { vk: 0x25, extended: true },
  right: { vk: 0x27, extended: true },
  space: { vk: 0x20, extended: false },
  enter: { vk: 0x0d, extended: false },
  esc: { vk: 0x1b, extended: false },
  tab: { vk: 0x09, extended: false },
  backspace: { vk: 0x08, extended: false },
  delete: { vk: 0x2e, extended: true },
  home: { vk: 0x24, extended: true },
  end: { vk: 0x23, extended: true },
  pageup: { vk: 0x21, extended: true },
  pagedown: { vk: 0x22, extended: true },
  ctrl: { vk: 0x11, extended: false },
  shift: { vk: 0x10, extended: false },
  alt: { vk: 0x12, extended: false },
};

/** The VK for a logical key, or null when it is not one we may press. */
export function vkFor(key: string): VkInfo | null {
  const k = key.toLowerCase();
  const named = NAMED[k];
  if (named) return named;
  if (/^[a-z]$/.test(k)) return { vk: k.toUpperCase().charCodeAt(0), extended: false };
  if (/^[0-9]$/.test(k)) return { vk: k.charCodeAt(0), extended: false };
  const f = /^f([1-9]|1[0-2])$/.exec(k);
  if (f) return { vk: 0x70 + Number(f[1]) - 1, extended: false };
  return null;
}
