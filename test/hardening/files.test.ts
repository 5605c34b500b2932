import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/platforms/fake/scenario.js";
import { quoteClientValue } from "../../src/shared/echo.js";
import { formatPath, MAX_NESTING_DEPTH, parseStrictJson } from "../../src/shared/strictJson.js";
import { parsePolicyText } from "../../src/supervisor/policy/parse.js";
import { parseProfileText } from "../../src/supervisor/profiles/profile.js";

/** The hostile inputs, exactly as first reported. */
const NESTED_64KB = `${"[".repeat(32000)}${"]".repeat(32000)}`;

/** ~48 KB: every level repeats its key before nesting again (the old scan copied the path at each). */
function nestedDuplicates(levels: number): string {
  let s = "";
  for (let i = 0; i < levels; i++) s += '{"a": 1, "a": ';
  return `${s}1${"}".repeat(levels)}`;
}

function nestedYamlDuplicates(levels: number): string {
  let s = "";
  for (let i = 0; i < levels; i++) s += "{a: 1, a: ";
  return `${s}1${"}".repeat(levels)}`;
}

describe("hostile files are refused, quickly and with a reason", () => {
  it("a 64 KB nested profile is refused for its nesting", () => {
    expect(NESTED_64KB.length).toBe(64000);
    const r = parseProfileText(NESTED_64KB);
    expect(r).toEqual({ ok: false, reasons: ["(root): nested deeper than 64 levels (line 1, column 65)"] });
  });

  it("a 48 KB nested policy with duplicate keys is refused (JSON and YAML)", () => {
    const json = nestedDuplicates(3400);
    expect(json.length).toBeGreaterThan(47_000);
    const r = parsePolicyText(json);
    expect(r.ok).toBe(false);
    expect(r.ok ? [] : r.reasons).toEqual(["(root): nested deeper than 64 levels (line 1, column 897)"]);
    const yaml = `x: ${nestedYamlDuplicates(4800)}`;
    expect(yaml.length).toBeGreaterThan(47_000);
    const y = parsePolicyText(yaml);
    expect(y.ok ? [] : y.reasons).toEqual(["(root): nested deeper than 64 levels"]);
  });

  it("duplicates at the deepest allowed level are reported with their path, at most five", () => {
    const r = parseStrictJson(nestedDuplicates(MAX_NESTING_DEPTH));
    expect(r.ok).toBe(false);
    const reasons = r.ok ? [] : r.reasons;
    expect(reasons).toHaveLength(5);
    expect(reasons[0]).toBe("a: duplicate key");
    expect(reasons[4]).toBe("a.a.a.a.a: duplicate key");
    // YAML: the same rule, found in linear time (not by the library's quadratic uniqueKeys).
    const keys = Array.from({ length: 4000 }, () => "k: v").join("\n");
    const y = parsePolicyText(keys);
    expect(y.ok ? [] : y.reasons).toEqual(Array(5).fill("k: duplicate key"));
  });

  it("one level deeper than the cap is refused, the cap itself is parsed", () => {
    const at = `${"[".repeat(MAX_NESTING_DEPTH)}${"]".repeat(MAX_NESTING_DEPTH)}`;
    expect(parseStrictJson(at)).toEqual({ ok: true, value: expect.any(Array) });
    expect(parseStrictJson(`[${at}]`).ok).toBe(false);
  });

  it("hostile YAML shapes are refused by the lexer pass before the parser", () => {
    const indent = Array.from({ length: 1400 }, (_, i) => `${" ".repeat(i)}a:`).join("\n");
    expect(parsePolicyText(indent)).toMatchObject({ reasons: ["(root): indented more than 256 columns"] });
    const many = Array.from({ length: 60_000 }, (_, i) => `k${i}: v`).join("\n");
    expect(parsePolicyText(many)).toMatchObject({ reasons: ["(root): more than 32768 YAML tokens"] });
  });

  it("a scenario tree deeper than its cap is refused, not recursed into", () => {
    let tree = '{"role": "leaf", "name": ""}';
    for (let i = 0; i < 2000; i++) tree = `{"role": "group", "name": "", "children": [${tree}]}`;
    const text = `{"session": 1, "foreground": null, "windows": [{"tree": ${tree}}]}`;
    expect(() => parseScenario(text)).toThrow(/nested deeper than 160 levels/);
  });

  it("keys in reasons are quoted and cut, never repeated at length", () => {
    const key = "k".repeat(1_000_000);
    const r = parseStrictJson(`{"${key}": 1, "${key}": 2}`);
    expect(r.ok).toBe(false);
    const reason = r.ok ? "" : r.reasons[0];
    expect(reason.length).toBeLessThan(120);
    expect(reason).toBe(`[${quoteClientValue(key)}]: duplicate key`);
    expect(formatPath(["a\nb"])).toBe('["a\\nb"]');
  });
});
