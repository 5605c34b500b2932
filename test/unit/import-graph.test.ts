import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { cycles, importGraph, upward } from "../../scripts/import-graph.mjs";

/**
 * The layers of docs/architecture.md ("Layers"): no module of src/ imports a higher layer, and
 * no import cycle exists. scripts/import-graph.mjs computes both from the import statements.
 */
const SRC = resolve(import.meta.dirname, "../../src");
const at = (p: string) => resolve(SRC, p);

describe("the import graph of src/", () => {
  const edges = importGraph();

  it("reads the whole tree", () => {
    expect(edges.size).toBeGreaterThan(100);
    expect(edges.get(at("cli.ts"))?.length).toBeGreaterThan(0);
  });

  it("has no import that runs up a layer", () => {
    expect(upward(edges)).toEqual([]);
  });

  it("has no import cycle", () => {
    expect(cycles(edges)).toEqual([]);
  });

  it("would name an upward import and a cycle (the checks can fail)", () => {
    const g = new Map<string, string[]>([
      [at("platforms/x11/input.ts"), [at("guardian/entries.ts")]],
      [at("guardian/entries.ts"), []],
      [at("platforms/x11/desktop.ts"), [at("platforms/x11/liveCheck.ts")]],
      [at("platforms/x11/liveCheck.ts"), [at("platforms/x11/desktop.ts")]],
    ]);
    expect(upward(g)).toEqual([["platforms/x11/input.ts", "guardian/entries.ts"]]);
    expect(cycles(g)).toEqual([["platforms/x11/desktop.ts", "platforms/x11/liveCheck.ts"]]);
  });
});
