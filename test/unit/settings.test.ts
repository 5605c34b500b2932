import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ERROR_CODES } from "../../src/shared/errors.js";
import { checkSettingValue, flaggedSettings, SETTINGS, type Setting } from "../../src/shared/settings.js";
import {
  GENERATED_BLOCKS,
  type GeneratedBlock,
  generatedBlock,
  regenerate,
} from "../../src/shared/settingsTable.js";
import { ConfigError, loadConfig } from "../../src/supervisor/config.js";

const ROOT = resolve(import.meta.dirname, "../..");
const read = (p: string) => readFileSync(resolve(ROOT, p), "utf8");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return name.endsWith(".ts") ? [p] : [];
  });
}

describe("the settings table and the documents generated from it", () => {
  it("README.md and docs/reference.md hold exactly the generated tables (npm run docs:generate)", () => {
    const expected: Record<string, GeneratedBlock[]> = {
      "README.md": ["settings"],
      "docs/reference.md": ["settings", "error-codes"],
    };
    for (const [doc, blocks] of Object.entries(expected)) {
      const text = read(doc);
      for (const b of blocks) expect(generatedBlock(text, b), `${doc}: ${b}`).toBe(GENERATED_BLOCKS[b]());
      expect(regenerate(text)).toBe(text);
    }
  });

  it("every error code and every setting appears in the generated tables", () => {
    const codes = GENERATED_BLOCKS["error-codes"]();
    for (const c of ERROR_CODES) expect(codes).toContain(`\`${c}\``);
    const settings = GENERATED_BLOCKS.settings();
    for (const s of Object.values(SETTINGS as Record<string, Setting>)) {
      expect(settings).toContain(`\`${s.env}\``);
      if (s.flag) expect(settings).toContain(`\`--${s.flag}\``);
    }
  });

  it("every variable the code names anywhere in src is in the table", () => {
    const names = new Set(Object.values(SETTINGS as Record<string, Setting>).map((s) => s.env));
    // What the server hands its own children (workers, the guardian), never an operator's
    // setting; and the one test hook, read only when a test sets it.
    const notSettings = new Set([
      "UIINSPECT_WORKER_INIT",
      "UIINSPECT_SERVER_PID",
      "UIINSPECT_HOST_PID",
      "UIINSPECT_GUARDIAN_SOCKET",
      "UIINSPECT_GUARDIAN_TOKEN",
      "UIINSPECT_GUARDIAN_PLATFORM",
      "UIINSPECT_TEST_INPUT_FAULT_FILE",
      // The private desktop's state folder that .ci/x11-session.sh exports (the sandbox reads it).
      "UIINSPECT_X11_STATE",
    ]);
    const files = sourceFiles(resolve(ROOT, "src"));
    expect(files.length).toBeGreaterThan(150);
    const seen = new Set<string>();
    for (const f of files) {
      const text = readFileSync(f, "utf8");
      const used = [
        ...text.matchAll(/["'`]((?:UIINSPECT|DESKTOP_AUTOMATION)_[A-Z0-9_]*[A-Z0-9])["'`]/g),
        ...text.matchAll(/\benv\.((?:UIINSPECT|DESKTOP_AUTOMATION)_[A-Z0-9_]+)/g),
      ].map((m) => m[1] as string);
      for (const n of used) {
        seen.add(n);
        if (!notSettings.has(n)) expect(names, `${relative(ROOT, f)}: ${n}`).toContain(n);
      }
    }
    // The scan sees the names the code really reads (here: one read by property access).
    expect(seen).toContain("UIINSPECT_TEST_INPUT_FAULT_FILE");
  });

  it("the supervisor enforces the table's ranges and words", () => {
    const s = SETTINGS.consentTimeoutMs;
    expect(loadConfig({ [s.env]: String(s.max) }).consentTimeoutMs).toBe(s.max);
    expect(() => loadConfig({ [s.env]: String(s.max + 1) })).toThrow(ConfigError);
    expect(() => loadConfig({ [s.env]: String(s.min - 1) })).toThrow(ConfigError);
    expect(loadConfig({}).consentTimeoutMs).toBe(s.default);
    expect(() => loadConfig({ [SETTINGS.logLevel.env]: "loud" })).toThrow(/UIINSPECT_LOG_LEVEL/);
    expect(loadConfig({ [SETTINGS.logLevel.env]: "debug" }).logLevel).toBe("debug");
  });

  it("flag values are checked as their readers check them", () => {
    const byFlag = new Map(flaggedSettings().map((s) => [s.flag, s]));
    expect([...byFlag.keys()].sort()).toEqual(
      ["audit-file", "fake-desktop", "isolation", "log-level", "platform", "policy"].sort(),
    );
    expect(checkSettingValue(byFlag.get("isolation")!, "process")).toBeNull();
    expect(checkSettingValue(byFlag.get("isolation")!, "fork")).toBe("must be one of thread, process");
    expect(checkSettingValue(byFlag.get("policy")!, "  ")).toBe("must not be empty");
    expect(checkSettingValue(SETTINGS.grantTtlMs, "999")).toMatch(/from 1000 to 86400000/);
    expect(checkSettingValue(SETTINGS.grantTtlMs, "1000")).toBeNull();
  });
});
