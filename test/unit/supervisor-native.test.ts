import { readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The supervisor thread loads no native module: nothing reachable from the `serve` entry
 * (static imports and literal dynamic imports alike) imports koffi. Worker entries are started
 * by path (new Worker / fork), not imported, so the walk stops there by itself; the one module
 * it skips is the in-process test harness's inline worker, which never runs in a served process.
 */
const SRC = resolve(import.meta.dirname, "../../src");
const ENTRIES = ["cli/serve.ts", "remote/serve.ts"];
const TEST_ONLY = new Set(["workers/inline.ts"]);
const IMPORT =
  /(?:import|export)\s[^"';]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)|import\s+["']([^"']+)["']/g;

function reachable(): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const todo = ENTRIES.map((e) => resolve(SRC, e));
  while (todo.length > 0) {
    const file = todo.pop() as string;
    if (seen.has(file)) continue;
    const text = readFileSync(file, "utf8").replace(/^\s*(\/\/|\*).*$/gm, "");
    const specs = [...text.matchAll(IMPORT)].map((m) => m[1] ?? m[2] ?? m[3] ?? "");
    seen.set(file, specs);
    for (const s of specs) {
      if (!s.startsWith(".")) continue;
      const next = resolve(dirname(file), s).replace(/\.js$/, ".ts");
      if (!TEST_ONLY.has(relative(SRC, next))) todo.push(next);
    }
  }
  return seen;
}

describe("the supervisor thread loads no native module", () => {
  it("no module reachable from the serve entry imports koffi or src/os", () => {
    const graph = reachable();
    expect(graph.size).toBeGreaterThan(50);
    const native = [...graph]
      .filter(([file, specs]) => specs.includes("koffi") || relative(SRC, file).startsWith("os/"))
      .map(([file]) => relative(SRC, file));
    expect(native).toEqual([]);
  });

  it("the walk sees a koffi import where there is one", () => {
    const text = readFileSync(resolve(SRC, "os/linux/libc.ts"), "utf8");
    expect([...text.matchAll(IMPORT)].some((m) => m[1] === "koffi")).toBe(true);
  });
});
