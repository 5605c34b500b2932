import { describe, expect, it } from "vitest";
import { keysymForChar, keysymForKey } from "../../src/platforms/x11/keys.js";
import { ATSPI_ROLE_MAP, COMMON_ROLES, mapAtspiRole } from "../../src/platforms/x11/roles.js";

/** Pure tables of the X11 backend: run everywhere, no X server needed. */

describe("x11 key tables", () => {
  it("maps every docs/spec.md §6 key name and the modifiers to a keysym", () => {
    const names = [
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
      "ctrl",
      "shift",
      "alt",
      ..."abcdefghijklmnopqrstuvwxyz0123456789".split(""),
      ...Array.from({ length: 12 }, (_, i) => `f${i + 1}`),
    ];
    for (const n of names) expect(keysymForKey(n), n).not.toBeNull();
    expect(keysymForKey("enter")).toBe(0xff0d);
    expect(keysymForKey("f12")).toBe(0xffc9);
    expect(keysymForKey("a")).toBe(0x61);
  });

  it("refuses anything else (system keys, f13, chords as names)", () => {
    for (const n of ["super", "win", "meta", "f13", "f0", "ctrl+a", "", "print", "A1"]) {
      expect(keysymForKey(n), n).toBeNull();
    }
  });

  it("maps characters: ASCII/Latin-1 to themselves, controls to keys, the rest to Unicode keysyms", () => {
    expect(keysymForChar(">".codePointAt(0)!)).toBe(0x3e);
    expect(keysymForChar("é".codePointAt(0)!)).toBe(0xe9);
    expect(keysymForChar("\n".codePointAt(0)!)).toBe(0xff0d);
    expect(keysymForChar("\t".codePointAt(0)!)).toBe(0xff09);
    expect(keysymForChar("€".codePointAt(0)!)).toBe(0x010020ac);
    expect(keysymForChar("😀".codePointAt(0)!)).toBe(0x0101f600);
  });
});

describe("x11 AT-SPI role map", () => {
  it("maps only into the common vocabulary", () => {
    for (const r of Object.values(ATSPI_ROLE_MAP)) expect(COMMON_ROLES).toContain(r);
  });

  it("decides text vs edit by EditableText and falls back to unknown", () => {
    expect(mapAtspiRole("text", true)).toBe("edit");
    expect(mapAtspiRole("text", false)).toBe("text");
    expect(mapAtspiRole("password text", true)).toBe("edit");
    expect(mapAtspiRole("push button", false)).toBe("button");
    expect(mapAtspiRole("Push Button", false)).toBe("button");
    expect(mapAtspiRole("page tab", false)).toBe("tab_item");
    expect(mapAtspiRole("something new", false)).toBe("unknown");
  });
});
