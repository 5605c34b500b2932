import { describe, expect, it } from "vitest";
import {
  MAX_PACKED_NODES,
  NODE_INTS,
  packTrees,
  unpackTrees,
  unpackTreesSync,
} from "../../src/shared/packedTree.js";
import { type A11yNodeOut, A11yNodeSchema, OPS } from "../../src/shared/protocol.js";
import { STATES } from "../../src/shared/states.js";
import { parseTreeResult } from "../../src/supervisor/hosting/treeResults.js";
import { formatTree } from "../../src/supervisor/tree/format.js";

/** Strings a target may name its elements: empty, escapes, surrogates, prototype keys. */
const ODD = [
  "",
  "__proto__",
  "constructor",
  'a "quoted"\nline',
  "\u202e\u0000x",
  "😀",
  "\ud800",
  "e".repeat(300),
];

/** A deterministic tree of `n` nodes (seeded) with every optional field in each of its forms. */
function tree(n: number, seed: number): A11yNodeOut {
  let s = seed;
  const rand = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  let made = 0;
  const text = () => (rand() < 0.3 ? pick(ODD) : `t${Math.floor(rand() * 50)}`);
  const node = (depth: number): A11yNodeOut => {
    const i = made++;
    const kids = depth < 7 && made < n ? Math.floor(rand() * 5) : 0;
    const out = {
      ref: `e${i}`,
      role: pick(["button", "panel", "window", "unknown", "check_box", ""]),
      name: rand() < 0.2 ? null : text(),
    } as A11yNodeOut;
    const pw = rand();
    if (pw < 0.1) out.is_password = true;
    else if (pw < 0.15) out.is_password = false;
    out.automation_id = rand() < 0.5 ? null : text();
    out.class_name = rand() < 0.7 ? null : text();
    const big = Number.MAX_SAFE_INTEGER;
    out.rect =
      rand() < 0.15
        ? null
        : pick([
            [i, -i, i + 10, i + 10],
            [-big, 0, big, 1],
            [0, 0, 0, 0],
          ]);
    out.enabled = rand() < 0.9;
    out.offscreen = rand() < 0.2;
    out.focused = i === 3;
    // Any order and repeats: the schema allows them, so the columns keep them.
    out.states = Array.from({ length: Math.floor(rand() * 4) }, () => pick(STATES));
    const pop = rand();
    if (pop < 0.05) out.popup = true;
    else if (pop < 0.08) out.popup = false;
    out.patterns = Array.from({ length: Math.floor(rand() * 3) }, () =>
      pick(["invoke", "toggle", "", "invoke"]),
    );
    out.children = Array.from({ length: kids }, () => node(depth + 1));
    return out;
  };
  const root = node(0);
  while (made < n) root.children.push(node(1));
  return root;
}

/** What the supervisor made of the object trees before: a structured clone, then the schema. */
function viaObjects(roots: A11yNodeOut[]): A11yNodeOut[] {
  return structuredClone(roots).map((r) => A11yNodeSchema.parse(r));
}

/** The same through the columns. */
async function viaColumns(roots: A11yNodeOut[]): Promise<A11yNodeOut[] | null> {
  return unpackTrees(structuredClone(packTrees(roots)));
}

/** inspect_tree's text and structuredContent of checked trees (src/supervisor/tools/a11y.ts). */
function toolOutput(roots: A11yNodeOut[]): { text: string; json: string } {
  const summary = { node_count: 1, truncated: true };
  const text = roots
    .map((n, i) =>
      formatTree(
        n,
        { ...summary, truncated: i === roots.length - 1 },
        { collapse: true, bounds: true, patterns: true },
      ),
    )
    .join("\n");
  const [root, ...popups] = roots;
  return { text, json: JSON.stringify({ root, popups, ...summary }) };
}

describe("the trees of an inspection as columns", () => {
  it("give exactly the schema's nodes and the same tool output as the object trees did", async () => {
    for (const [n, seed] of [
      [1, 1],
      [12, 2],
      [260, 3],
      [700, 4],
      [5001, 5],
    ] as const) {
      const roots = [tree(n, seed), tree(Math.ceil(n / 10), seed + 100), tree(3, seed + 200)];
      const old = viaObjects(roots);
      const now = await viaColumns(roots);
      expect(now).toEqual(old);
      expect(JSON.stringify(now)).toBe(JSON.stringify(old));
      expect(toolOutput(now as A11yNodeOut[])).toEqual(toolOutput(old));
      expect(unpackTreesSync(structuredClone(packTrees(roots)))).toEqual(old);
    }
  });

  it("are what the worker protocol's schema and the supervisor's sliced check both accept", async () => {
    const roots = [tree(300, 9), tree(4, 10)];
    const wire = structuredClone({ trees: packTrees(roots), node_count: 304, truncated: false });
    const expected = {
      root: viaObjects(roots)[0],
      popups: [viaObjects(roots)[1]],
      node_count: 304,
      truncated: false,
    };
    expect(OPS["a11y.inspect"].result.parse(wire)).toEqual(expected);
    expect(await parseTreeResult("a11y.inspect", wire)).toEqual({ success: true, data: expected });
  });

  /** Columns of a small valid tree, `spoil` applied to a clone of them, then checked every way. */
  async function refused(spoil: (c: ReturnType<typeof packTrees>) => unknown): Promise<void> {
    const packed = packTrees([tree(30, 77), tree(5, 78)]);
    expect(await unpackTrees(structuredClone(packed))).not.toBeNull();
    const bad = spoil(structuredClone(packed));
    expect(await unpackTrees(bad)).toBeNull();
    const wire = { trees: bad, node_count: 35, truncated: false };
    expect((await parseTreeResult("a11y.inspect", wire)).success).toBe(false);
    expect(OPS["a11y.inspect"].result.safeParse(wire).success).toBe(false);
  }
  const row = (i: number, field: number) => i * NODE_INTS + field;

  it("refuse columns of the wrong types or sizes", async () => {
    await refused(() => null);
    await refused((c) => ({ ...c, nodes: Array.from(c.nodes) }));
    await refused((c) => ({ ...c, nodes: new Uint32Array(c.nodes) }));
    await refused((c) => ({ ...c, rects: new Float32Array(c.rects) }));
    await refused((c) => ({ ...c, lists: Array.from(c.lists) }));
    await refused((c) => ({ ...c, strings: "abc" }));
    await refused((c) => ({ ...c, nodes: c.nodes.slice(0, c.nodes.length - 1) }));
    await refused((c) => ({ ...c, rects: c.rects.slice(0, c.rects.length - 4) }));
    await refused((c) => ({ ...c, lists: Int32Array.from([...c.lists, 0]) }));
    await refused((c) => ({ ...c, nodes: new Int32Array(0), rects: new Float64Array(0) }));
    await refused((c) => ({ ...c, strings: [...c.strings, ...new Array(1000).fill("x")] }));
    // More rows than any walk returns, though every one of them is a well-formed root.
    await refused((c) => {
      const n = MAX_PACKED_NODES + 1;
      const nodes = new Int32Array(n * NODE_INTS);
      for (let i = 0; i < n; i++) nodes.set([-1, 0, 0, -1, -1, -1, 1, 0, 0], i * NODE_INTS);
      return { ...c, nodes, rects: new Float64Array(n * 4), lists: new Int32Array(0) };
    });
  });

  it("refuse columns over memory the worker shares (it could write them while they are read)", async () => {
    const shared = <T extends Int32Array | Float64Array>(a: T): T => {
      const copy = new (a.constructor as new (b: SharedArrayBuffer) => T)(
        new SharedArrayBuffer(a.byteLength),
      );
      copy.set(a);
      return copy;
    };
    await refused((c) => ({ ...c, nodes: shared(c.nodes) }));
    await refused((c) => ({ ...c, rects: shared(c.rects) }));
    await refused((c) => ({ ...c, lists: shared(c.lists) }));
  });

  it("refuse a string that is none, an index out of range and a null where the schema wants text", async () => {
    await refused((c) => {
      (c.strings as unknown[])[0] = 7;
      return c;
    });
    await refused((c) => {
      c.strings.length += 1; // a hole
      c.nodes[row(3, 1)] = c.strings.length - 1;
      return c;
    });
    for (const field of [1, 2, 3, 4, 5]) {
      await refused((c) => {
        c.nodes[row(2, field)] = c.strings.length;
        return c;
      });
      await refused((c) => {
        c.nodes[row(2, field)] = -2;
        return c;
      });
    }
    // ref and role are never null.
    await refused((c) => {
      c.nodes[row(4, 1)] = -1;
      return c;
    });
    await refused((c) => {
      c.nodes[row(4, 2)] = -1;
      return c;
    });
  });

  it("refuse a shape that is no forest: a parent after its child, itself, a first node with a parent", async () => {
    await refused((c) => {
      c.nodes[row(5, 0)] = 5;
      return c;
    });
    await refused((c) => {
      c.nodes[row(5, 0)] = 20;
      return c;
    });
    await refused((c) => {
      c.nodes[row(5, 0)] = -2;
      return c;
    });
    await refused((c) => {
      c.nodes[row(0, 0)] = 0;
      return c;
    });
  });

  it("refuse flags, states, patterns and rects outside the schema", async () => {
    await refused((c) => {
      c.nodes[row(1, 6)] |= 0x100;
      return c;
    });
    for (const shift of [4, 6]) {
      await refused((c) => {
        c.nodes[row(1, 6)] |= 3 << shift;
        return c;
      });
    }
    await refused((c) => {
      c.nodes[row(1, 7)] = -1;
      return c;
    });
    await refused((c) => {
      c.nodes[row(1, 8)] = c.lists.length + 1;
      return c;
    });
    // A state index past the vocabulary, and a pattern index past the strings.
    const packed = packTrees([tree(30, 77)]);
    const withState = [...Array(30).keys()].find((i) => (packed.nodes[row(i, 7)] as number) > 0) as number;
    let before = 0;
    for (let i = 0; i < withState; i++)
      before += (packed.nodes[row(i, 7)] as number) + (packed.nodes[row(i, 8)] as number);
    await refused((c) => {
      const lists = packTrees([tree(30, 77), tree(5, 78)]).lists.slice();
      lists[before] = STATES.length;
      return { ...c, lists };
    });
    const withPattern = [...Array(30).keys()].find((i) => (packed.nodes[row(i, 8)] as number) > 0) as number;
    let at = 0;
    for (let i = 0; i < withPattern; i++)
      at += (packed.nodes[row(i, 7)] as number) + (packed.nodes[row(i, 8)] as number);
    at += packed.nodes[row(withPattern, 7)] as number;
    await refused((c) => {
      const lists = c.lists.slice();
      lists[at] = c.strings.length;
      return { ...c, lists };
    });
    const withRect = [...Array(30).keys()].find(
      (i) => ((packed.nodes[row(i, 6)] as number) & 8) !== 0,
    ) as number;
    for (const v of [0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      await refused((c) => {
        c.rects[withRect * 4 + 2] = v;
        return c;
      });
    }
  });
});
