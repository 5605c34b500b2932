import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import {
  MEMORY_FLAG,
  memoryModeChosen,
  OLD_GENERATION_FLAG,
  oldGenerationChosen,
  YOUNG_GENERATION_FLAG,
  youngGenerationChosen,
} from "../../src/supervisor/heap.js";

const HEAP = pathToFileURL(resolve(import.meta.dirname, "../../dist/supervisor/heap.js")).href;

/**
 * In a fresh node (V8 flags are process-wide): optionally bound the young generation, then churn
 * objects of which many survive each scavenge (what grows it), and report new space's size.
 */
function newSpaceAfterChurn(bound: boolean, nodeArgs: string[] = []): { mib: number; applied: boolean } {
  const script = `
    import { getHeapSpaceStatistics } from "node:v8";
    const { boundHeap, YOUNG_GENERATION_FLAG } = await import(${JSON.stringify(HEAP)});
    const applied = ${bound} ? boundHeap({ memoryMode: false }).includes(YOUNG_GENERATION_FLAG) : false;
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

/**
 * In a fresh node: optionally bound the heap, then turn over a live set of ~50 MiB (a sixth of
 * it replaced at a time) and report the old generation's largest size over the run (its size
 * at the end depends on where the last full collection fell).
 */
function oldSpaceAfterTurnover(
  bound: boolean,
  nodeArgs: string[] = [],
  rounds = 40,
  memoryMode = true,
): { mib: number; flags: string[] } {
  const script = `
    import { getHeapSpaceStatistics } from "node:v8";
    const { boundHeap } = await import(${JSON.stringify(HEAP)});
    const flags = ${bound} ? boundHeap({ memoryMode: ${memoryMode} }) : [];
    const oldSpace = () => getHeapSpaceStatistics().find((x) => x.space_name === "old_space").space_size;
    let keep = [];
    let peak = oldSpace();
    for (let round = 0; round < ${rounds}; round++) {
      const batch = [];
      for (let i = 0; i < 50_000; i++) batch.push({ a: i, b: "x" + i + round, c: [i, i + 1] });
      keep.push(batch);
      if (keep.length > 6) keep.shift();
      peak = Math.max(peak, oldSpace());
    }
    process.stdout.write(JSON.stringify({ mib: peak / 1048576, flags }));
  `;
  const r = spawnSync(process.execPath, [...nodeArgs, "--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { ...process.env, NODE_OPTIONS: "" },
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { mib: number; flags: string[] };
}

describe("the supervisor's old generation", () => {
  it("stays near its live set once bounded, and grows far past it without the bound", () => {
    const free = oldSpaceAfterTurnover(false);
    const bounded = oldSpaceAfterTurnover(true);
    expect(bounded.flags).toContain(MEMORY_FLAG);
    expect(bounded.flags).not.toContain(OLD_GENERATION_FLAG);
    // The live set is ~55 MiB: unbounded V8 let the old space reach ~160 MiB before collecting.
    expect(free.mib).toBeGreaterThan(120);
    expect(bounded.mib).toBeLessThan(90);
  });

  it("a stdio server bounds it by the growth factor alone, without the memory mode", () => {
    const stdio = oldSpaceAfterTurnover(true, [], 40, false);
    expect(stdio.flags).toEqual([YOUNG_GENERATION_FLAG, OLD_GENERATION_FLAG]);
    expect(stdio.mib).toBeLessThan(100);
  });

  it("an operator's own growth factor stands", () => {
    expect(oldGenerationChosen([], {})).toBe(false);
    expect(oldGenerationChosen(["--heap-growing-percent=50"], {})).toBe(true);
    expect(oldGenerationChosen([], { NODE_OPTIONS: "--heap_growing_percent=0" })).toBe(true);
    expect(oldGenerationChosen([], { NODE_OPTIONS: "--max-old-space-size=512" })).toBe(false);
    expect(oldGenerationChosen(["--no-optimize-for-size"], {})).toBe(true);
    // Their 0 is V8's own heuristic: the old space grows as if unbounded.
    const own = oldSpaceAfterTurnover(true, ["--heap-growing-percent=0"], 40, false);
    expect(own.flags).toEqual([YOUNG_GENERATION_FLAG]);
    expect(own.mib).toBeGreaterThan(120);
  });

  it("an operator's own memory mode stands", () => {
    expect(memoryModeChosen([], {})).toBe(false);
    expect(memoryModeChosen(["--no-optimize-for-size"], {})).toBe(true);
    expect(memoryModeChosen(["--optimize_for_size"], {})).toBe(true);
    expect(memoryModeChosen([], { NODE_OPTIONS: "--max-old-space-size=512" })).toBe(false);
    const own = oldSpaceAfterTurnover(true, ["--no-optimize-for-size"], 0);
    expect(own.flags).toEqual([YOUNG_GENERATION_FLAG]);
    // An operator's own young-generation size keeps the memory mode off (it would shrink it):
    // the growing factor bounds the old generation instead.
    const sized = oldSpaceAfterTurnover(true, ["--max-semi-space-size=8"], 0);
    expect(sized.flags).toEqual([OLD_GENERATION_FLAG]);
  });
});
