import { describe, expect, it } from "vitest";
import { packTrees } from "../../src/shared/packedTree.js";
import { type A11yNodeOut, A11yNodeSchema, OPS } from "../../src/shared/protocol.js";
import { parseTreeResult, parseTrees } from "../../src/supervisor/hosting/treeResults.js";

/** A deterministic tree of about `n` nodes (seeded), with the optional fields now and then. */
function tree(n: number, seed = 7): Record<string, unknown> {
  let s = seed;
  const rand = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  let made = 0;
  const node = (depth: number): Record<string, unknown> => {
    const i = made++;
    const kids = depth < 6 && made < n ? Math.floor(rand() * 6) : 0;
    return {
      ref: `e${i}`,
      role: rand() < 0.5 ? "button" : "panel",
      name: rand() < 0.2 ? null : `Node ${i}`,
      ...(rand() < 0.1 ? { is_password: true } : {}),
      automation_id: rand() < 0.5 ? null : `a${i}`,
      class_name: null,
      rect: rand() < 0.1 ? null : [i, i, i + 10, i + 10],
      enabled: rand() < 0.9,
      offscreen: false,
      focused: i === 3,
      states: rand() < 0.3 ? ["checked"] : [],
      ...(rand() < 0.05 ? { popup: true } : {}),
      patterns: ["invoke"],
      // What the schema strips must be stripped here too.
      ...(rand() < 0.1 ? { extra: "dropped" } : {}),
      children: Array.from({ length: kids }, () => node(depth + 1)),
    };
  };
  const root = node(0);
  while (made < n) (root.children as unknown[]).push(node(1));
  return root;
}

/** An a11y.inspect answer as the worker sends it: its trees as columns, cloned as postMessage would. */
const inspect = (root: unknown, popups: unknown[] = []) =>
  structuredClone({
    trees: packTrees([root, ...popups] as A11yNodeOut[]),
    node_count: 1,
    truncated: false,
  });

describe("worker trees checked in slices", () => {
  it("gives exactly what the recursive schema gives, for inspect and find results", async () => {
    for (const n of [1, 40, 700, 3000]) {
      const [root, popup] = [tree(n, n), tree(20, n + 1)];
      const raw = inspect(root, [popup]);
      const recursive = {
        root: A11yNodeSchema.parse(root),
        popups: [A11yNodeSchema.parse(popup)],
        node_count: 1,
        truncated: false,
      };
      const mine = await parseTreeResult("a11y.inspect", raw);
      expect(mine).toEqual({ success: true, data: recursive });
      expect(JSON.stringify(mine.success && mine.data)).toBe(JSON.stringify(recursive));
      expect(JSON.stringify(OPS["a11y.inspect"].result.parse(raw))).toBe(JSON.stringify(recursive));
      const found = { elements: [tree(5, n), tree(9, n + 2)], truncated: true };
      expect(await parseTreeResult("a11y.find", found)).toEqual({
        success: true,
        data: OPS["a11y.find"].result.parse(found),
      });
    }
  });

  it("refuses what the recursive schema refuses: a bad field deep down, a missing root, a wrong top", async () => {
    const deepest = tree(500);
    let deep = deepest as { children: Array<{ children: unknown[] }> };
    while (deep.children[0]?.children.length) deep = deep.children[0] as typeof deep;
    (deep.children[0] as Record<string, unknown>).enabled = "yes";
    const found = { elements: [deepest], truncated: false };
    expect(OPS["a11y.find"].result.safeParse(found).success).toBe(false);
    expect((await parseTreeResult("a11y.find", found)).success).toBe(false);
    expect(
      (await parseTreeResult("a11y.inspect", { popups: [], node_count: 0, truncated: false })).success,
    ).toBe(false);
    // The object trees of before are no columns: refused.
    const objects = { root: tree(3), popups: [], node_count: 3, truncated: false };
    expect((await parseTreeResult("a11y.inspect", objects)).success).toBe(false);
    expect((await parseTreeResult("a11y.find", { elements: "x", truncated: false })).success).toBe(false);
  });

  it("refuses a node reached twice (a cycle a structured clone can carry) instead of following it", async () => {
    const root = tree(10);
    (root.children as unknown[]).push(root);
    expect(await parseTrees([root])).toBeNull();
    const shared = tree(3);
    expect(await parseTrees([{ ...tree(1), children: [shared, shared] }])).toBeNull();
  });

  it("lets the event loop run while it checks a big tree", async () => {
    let turns = 0;
    let done = false;
    const tick = () => {
      turns++;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    const r = await parseTrees([tree(3000)]);
    done = true;
    expect(r).not.toBeNull();
    // One piece would have run no callback at all in between.
    expect(turns).toBeGreaterThanOrEqual(5);
  });
});
