import { describe, expect, it } from "vitest";
import { vkFor } from "../../src/platforms/win32/keys.js";
import { roleForControlType } from "../../src/platforms/win32/uia/roles.js";
import { IUIAutomationElement as El, IUIAutomation2 } from "../../src/platforms/win32/uia/vtables.js";
import { ALLOWED_KEYS, MODIFIERS } from "../../src/shared/keys.js";
import { ROLES } from "../../src/shared/roles.js";

// Pure tables of the Win32 backend (no native code): they run on any OS. The native code is
// tested inside Wine by .ci/wine-run.sh.

describe("win32 key table", () => {
  it("maps every allowed key and modifier to a distinct virtual key", () => {
    const all = [...ALLOWED_KEYS, ...MODIFIERS];
    const vks = all.map((k) => vkFor(k));
    expect(vks.every((v) => v !== null)).toBe(true);
    expect(new Set(vks.map((v) => v?.vk)).size).toBe(all.length);
  });
  it("uses the documented codes and extended flags", () => {
    expect(vkFor("a")).toEqual({ vk: 0x41, extended: false });
    expect(vkFor("0")).toEqual({ vk: 0x30, extended: false });
    expect(vkFor("f12")).toEqual({ vk: 0x7b, extended: false });
    expect(vkFor("left")).toEqual({ vk: 0x25, extended: true });
    expect(vkFor("delete")?.extended).toBe(true);
    expect(vkFor("enter")?.extended).toBe(false);
  });
  it("refuses anything else (no Windows key, no system keys)", () => {
    for (const k of ["lwin", "rwin", "win", "capslock", "printscreen", "f13", "f0", "ctrl+a", ""]) {
      expect(vkFor(k)).toBeNull();
    }
  });
});

describe("win32 UIA tables", () => {
  it("maps every control type id 50000–50040 into the role vocabulary", () => {
    const roles: ReadonlySet<string> = new Set(ROLES);
    for (let id = 50000; id <= 50040; id++) expect(roles.has(roleForControlType(id))).toBe(true);
    expect(roleForControlType(50000)).toBe("button");
    expect(roleForControlType(50004)).toBe("edit");
    expect(roleForControlType(50032)).toBe("window");
    expect(roleForControlType(12345)).toBe("unknown");
  });
  it("keeps Cached* getters exactly 32 slots after their Current* twins", () => {
    expect(El.get_CachedProcessId - El.get_CurrentProcessId).toBe(32);
    expect(El.get_CachedControlType - El.get_CurrentControlType).toBe(32);
    expect(El.get_CachedName - El.get_CurrentName).toBe(32);
    expect(El.get_CachedBoundingRectangle - El.get_CurrentBoundingRectangle).toBe(32);
    expect(El.GetClickablePoint).toBe(84);
    expect(IUIAutomation2.get_AutoSetFocus).toBe(58);
  });
});
