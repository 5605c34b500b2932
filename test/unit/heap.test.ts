import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { youngGenerationChosen } from "../../src/supervisor/heap.js";

const HEAP = pathToFileURL(resolve(import.meta.dirname, "../../dist/supervisor/heap.js")).href;

/**
 * In a fresh node (V8 flags are process-wide): optionally bound the young generation, then churn
 * objects of which many survive each scavenge (what grows it), and report new space's size.
 */
function newSpaceAfterChurn(bound: boolean, nodeArgs: string[] = []): { mib: number; applied: boolean } {
  const script = `
    import { getHeapSpaceStatistics } from "node:v8";
    const { boundYoungGeneration } = await import(${JSON.stringify(HEAP)});
    const applied = ${bound} ? boundYoungGeneration() : false;
    const keep = [];
    for (let i = 0; i < 2_000_000; i++) {
      keep.push({ a: i, b: "x" + i });
      if (keep.length > 200_000) keep.splice(0, 100_000);
    }
    const s = getHeapSpaceStatistics().find((x) => x.space_name === "new_space");
    process.stdout.write(JSON.stringify({ mib: s.space_size / 1048576, applied }));
  `;
  const r = spawnSync(process.execPath, [...nodeArgs, "--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { ...process.env, NODE_OPTIONS: "" },
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { mib: number; applied: boolean };
}

describe("the supervisor's young generation", () => {
  it("stays at its initial size under churn once bounded, and grows without the bound", () => {
    const free = newSpaceAfterChurn(false);
    const bounded = newSpaceAfterChurn(true);
    expect(bounded.applied).toBe(true);
    expect(free.mib).toBeGreaterThan(8);
    expect(bounded.mib).toBeLessThanOrEqual(2);
  });

  it("an operator's own flag stands, on the command line or in NODE_OPTIONS", () => {
    expect(youngGenerationChosen([], {})).toBe(false);
    expect(youngGenerationChosen(["--max-semi-space-size=8"], {})).toBe(true);
    expect(youngGenerationChosen([], { NODE_OPTIONS: "--trace-gc --semi-space-growth-factor=4" })).toBe(true);
    expect(youngGenerationChosen([], { NODE_OPTIONS: "--max-old-space-size=512" })).toBe(false);
    const own = newSpaceAfterChurn(true, ["--max-semi-space-size=8"]);
    expect(own.applied).toBe(false);
    expect(own.mib).toBeGreaterThan(2);
  });
});
