import { win32 } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { normalizeExecutablePath } from "../../src/shared/identity.js";
import type { EffectivePolicy } from "../../src/supervisor/policy/load.js";
import { loadPolicy } from "../../src/supervisor/policy/load.js";
import { actionAllowed, globMatch, isProtected, windowAllowed } from "../../src/supervisor/policy/match.js";

const NOW = () => new Date("2026-11-30T10:00:00Z");

function envPolicy(env: Record<string, string>): EffectivePolicy {
  const s = loadPolicy(env, NOW);
  if (s.status !== "ok") throw new Error(JSON.stringify(s));
  return s.policy;
}

describe("globMatch", () => {
  it.each<[string, string, boolean]>([
    ["Ruffle - *", "Ruffle - game.swf", true],
    ["Ruffle - *", "ruffle - GAME.SWF", true],
    ["Ruffle - *", "Ruffle - ", true],
    ["Ruffle - *", "Ruffle -", false],
    ["Ruffle - *", "My Ruffle - game", false],
    ["*Notepad", "Untitled - Notepad", true],
    ["*Notepad", "Untitled - Notepad++", false],
    ["a?c", "abc", true],
    ["a?c", "ac", false],
    ["a?c", "abbc", false],
    ["*", "", true],
    ["", "", true],
    ["", "x", false],
    ["**a**", "a", true],
    ["*a*b*c*", "xxaxxbxxcxx", true],
    ["*a*b*c*", "xxaxxcxxbxx", false],
    ["a*b", "aXXbXXb", true],
    ["a*b", "aXXbXXc", false],
    // Regular-expression metacharacters are literal.
    ["a.c", "abc", false],
    ["a.c", "a.c", true],
    ["(x)|y", "(x)|y", true],
    ["(x)|y", "y", false],
    ["[ab]", "a", false],
    ["[ab]", "[AB]", true],
    ["a+", "aa", false],
    ["^a$", "^A$", true],
    ["\\d", "1", false],
    ["\\d", "\\D", true],
    ["x{2}", "xx", false],
    // Case folding is Unicode-aware and ? is one character, even outside the BMP.
    ["ÉDITEUR - *", "éditeur - doc", true],
    ["?", "😀", true],
    ["??", "😀", false],
  ])("%j vs %j → %s", (pattern, text, expected) => {
    expect(globMatch(pattern, text)).toBe(expected);
  });

  it("stays fast on a hostile title and many stars", () => {
    const title = "a".repeat(20000);
    expect(globMatch(`${"*a".repeat(50)}b`, title)).toBe(false);
  });
});

describe("windowAllowed", () => {
  it("no window at all when no process paths are configured (docs/spec.md §4: title AND executable)", () => {
    const p = envPolicy({ DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle - *,*Notepad" });
    expect(windowAllowed(p, { title: "Ruffle - a.swf", exe_path: "/anything" })).toBe(false);
    expect(windowAllowed(p, { title: "x - Notepad", exe_path: "" })).toBe(false);
    expect(windowAllowed(p, { title: "Terminal", exe_path: "/usr/bin/ruffle" })).toBe(false);
  });

  it("title AND normalized executable path; Windows paths case-insensitive", () => {
    const p = envPolicy({
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle - *",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: "C:/Program Files/Ruffle/bin/ruffle.exe;/opt/Ruffle/ruffle",
    });
    const title = "Ruffle - game.swf";
    expect(windowAllowed(p, { title, exe_path: "c:\\program files\\ruffle\\bin\\ruffle.exe" })).toBe(true);
    expect(
      windowAllowed(p, { title, exe_path: "C:\\PROGRAM FILES\\Ruffle\\tmp\\..\\bin\\.\\ruffle.exe" }),
    ).toBe(true);
    expect(windowAllowed(p, { title, exe_path: "C:\\Program Files\\Ruffle\\bin\\ruffle.exe.bak" })).toBe(
      false,
    );
    expect(windowAllowed(p, { title, exe_path: "D:\\Program Files\\Ruffle\\bin\\ruffle.exe" })).toBe(false);
    expect(windowAllowed(p, { title, exe_path: "" })).toBe(false);
    // POSIX paths are normalized but case-sensitive.
    expect(windowAllowed(p, { title, exe_path: "/opt/Ruffle/./ruffle" })).toBe(true);
    expect(windowAllowed(p, { title, exe_path: "/opt/ruffle/ruffle" })).toBe(false);
    expect(windowAllowed(p, { title: "Notepad", exe_path: "/opt/Ruffle/ruffle" })).toBe(false);
  });
});

describe("actions", () => {
  it("allowed and protected sets; unknown names are denied", () => {
    const p = envPolicy({
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "*",
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "click,text",
    });
    expect(actionAllowed(p, "click")).toBe(true);
    expect(actionAllowed(p, "observe")).toBe(false);
    expect(isProtected(p, "text")).toBe(true);
    expect(isProtected(p, "close")).toBe(true);
    expect(isProtected(p, "click")).toBe(false);
    const unknown = "screenshot" as Parameters<typeof actionAllowed>[1];
    expect(actionAllowed(p, unknown)).toBe(false);
  });
});

describe("executable paths remembered once normalized", () => {
  it("gives the same answer the first time, again, and after the memory of paths was cleared", () => {
    const win = "C:/Program Files/Ruffle/../Ruffle/RUFFLE.exe";
    const first = normalizeExecutablePath(win);
    expect(first).toBe("c:\\program files\\ruffle\\ruffle.exe");
    expect(normalizeExecutablePath(win)).toBe(first);
    // Past the bound every path is normalized afresh, and still right.
    for (let i = 0; i < 600; i++)
      expect(normalizeExecutablePath(`/opt/app${i}/./bin//app`)).toBe(`/opt/app${i}/bin/app`);
    expect(normalizeExecutablePath(win)).toBe(first);
    expect(normalizeExecutablePath("/usr/bin/../bin/Ruffle")).toBe("/usr/bin/Ruffle");
  });

  it("normalizes a path once, not at every check", () => {
    const spy = vi.spyOn(win32, "normalize");
    try {
      const p = "D:/Tools/Once/../Once/ONCE.exe";
      for (let i = 0; i < 5; i++) expect(normalizeExecutablePath(p)).toBe("d:\\tools\\once\\once.exe");
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });
});
