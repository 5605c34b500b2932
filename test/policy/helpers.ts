import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll } from "vitest";
import { scratchDir } from "../support/scratch.js";

/** A fresh temp dir per test file, removed afterwards. */
export function tempFiles(): (name: string, content: string | Uint8Array) => string {
  const dir = scratchDir("policy");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return (name, content) => {
    const p = join(dir, name);
    writeFileSync(p, content);
    return p;
  };
}

/** A minimal valid policy file as an object, to be tweaked per test. */
export function basePolicy(): Record<string, unknown> {
  return {
    schema_version: 1,
    policy_id: "test-1",
    application: {
      executable_path: "C:\\Program Files\\ruffle\\bin\\ruffle.exe",
      title_patterns: ["Ruffle - *"],
    },
    allowed_actions: ["observe", "click"],
  };
}
