import { describe, expect, it } from "vitest";
import { choiceEnv, intEnv } from "../../src/shared/env.js";

describe("intEnv (worker tuning variables)", () => {
  const read = (raw: string | undefined) => intEnv({ X: raw }, "X", 300, 10, 5000);

  it("reads a whole number inside the range, bounds included", () => {
    expect(read("10")).toBe(10);
    expect(read("1234")).toBe(1234);
    expect(read("5000")).toBe(5000);
    expect(read("  42\n")).toBe(42);
    expect(read("0042")).toBe(42);
  });

  it("gives the default when unset or blank", () => {
    expect(intEnv({}, "X", 300, 10, 5000)).toBe(300);
    expect(read(undefined)).toBe(300);
    expect(read("")).toBe(300);
    expect(read("   ")).toBe(300);
  });

  it("gives the default, never NaN, for malformed values", () => {
    for (const bad of ["abc", "12ms", "1e3", "0x10", "-20", "+20", "20.5", "1 000", "NaN", "Infinity"])
      expect(read(bad), bad).toBe(300);
  });

  it("gives the default for values outside the range", () => {
    expect(read("9")).toBe(300);
    expect(read("0")).toBe(300);
    expect(read("5001")).toBe(300);
    expect(read("99999999999999999999")).toBe(300);
  });

  it("reads only the named variable", () => {
    expect(intEnv({ Y: "20" }, "X", 300, 10, 5000)).toBe(300);
    expect(intEnv({ X: "20", Y: "30" }, "Y", 300, 10, 5000)).toBe(30);
  });
});

describe("choiceEnv", () => {
  const read = (raw: string | undefined) =>
    choiceEnv({ X: raw }, "X", ["taskdialog", "messagebox"] as const, "taskdialog");

  it("reads a listed value, trimmed and case-insensitive", () => {
    expect(read("messagebox")).toBe("messagebox");
    expect(read(" MessageBox ")).toBe("messagebox");
    expect(read("taskdialog")).toBe("taskdialog");
  });

  it("gives the default when unset, blank or not listed", () => {
    expect(read(undefined)).toBe("taskdialog");
    expect(read("")).toBe("taskdialog");
    expect(read("message box")).toBe("taskdialog");
    expect(read("yes")).toBe("taskdialog");
  });

  it("works for flags like UIINSPECT_X11_NO_SHM", () => {
    const noShm = (raw: string | undefined) => choiceEnv({ F: raw }, "F", ["0", "1"] as const, "0") === "1";
    expect(noShm("1")).toBe(true);
    expect(noShm(" 1 ")).toBe(true);
    expect(noShm("0")).toBe(false);
    expect(noShm("true")).toBe(false);
    expect(noShm(undefined)).toBe(false);
  });
});
