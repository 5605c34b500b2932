import { describe, expect, it } from "vitest";
import type { AtspiBus } from "../../src/platforms/x11/atspiBus.js";
import { AtspiSession, type Node } from "../../src/platforms/x11/atspiSession.js";
import type { A11yHandle, A11yNodeFacts } from "../../src/shared/platform.js";
import { Budget, walk } from "../../src/workers/uia/walk.js";

/**
 * The bulk walk (Cache.GetItems plus the calls it lacks, asked ahead) on a fake a11y bus that
 * answers like GTK's bridge, where the cache's places disagree with GetChildren: the tree is
 * GetChildren's, node for node the per-node walk's, and every call is made once. A parent whose
 * cached children are complete and in place is not asked, unless it is a top-level: gtk3-demo's
 * window lists its header bar and content at places 1 and 0 while GetChildren answers them the
 * other way round. A node the cache lacks gives its name and child count in one
 * Properties.GetAll, and is asked GetChildren only when that count is not 0.
 */

const APP = ":1.7";
const ACC = "org.a11y.atspi.Accessible";
const COMPONENT = "org.a11y.atspi.Component";
const ACTION = "org.a11y.atspi.Action";
// SHOWING | VISIBLE | ENABLED | SENSITIVE (AtspiStateType bits 25, 30, 8, 24).
const STATES = [(1 << 25) | (1 << 30) | (1 << 8) | (1 << 24), 0];

interface FakeNode {
  children: string[];
  role: number;
  name: string;
  /** In the app's cache (with this place among its parent's children and this parent). */
  cached?: { rank: number; parent: string; count?: number };
  /** Not SHOWING nor VISIBLE (a widget on a hidden stack page): in the cache and in GetState. */
  hidden?: boolean;
}

/**
 * The app's truth. /root is the application object (in the cache, as GTK's bridge has it).
 * /win is a top-level whose cached places (/a 0, /h 1) look complete but
 * GetChildren answers /h first (GtkWindow's header bar). /a's cache links /b under /other and
 * gives /c no place; /panel's cached places are complete and in place (0, 1, 2), as GetChildren
 * answers; /table's cells are not cached and its count is -1; /cell2 (a container cell, as
 * GTK's) holds one more uncached cell.
 */
const TREE: Record<string, FakeNode> = {
  "/root": { children: ["/win"], role: 75, name: "app", cached: { rank: -1, parent: "" } },
  "/win": { children: ["/h", "/a"], role: 23, name: "w", cached: { rank: 0, parent: "/root" } },
  "/h": { children: [], role: 62, name: "h", cached: { rank: 1, parent: "/win" } },
  "/a": { children: ["/panel", "/b", "/c"], role: 39, name: "", cached: { rank: 0, parent: "/win" } },
  "/b": { children: [], role: 62, name: "b", cached: { rank: 1, parent: "/other" } },
  "/c": { children: ["/table"], role: 39, name: "", cached: { rank: -1, parent: "/a" } },
  "/panel": { children: ["/p1", "/p2", "/p3"], role: 39, name: "", cached: { rank: 0, parent: "/a" } },
  "/p1": { children: [], role: 62, name: "one", cached: { rank: 0, parent: "/panel" } },
  "/p2": { children: [], role: 62, name: "two", cached: { rank: 1, parent: "/panel" } },
  "/p3": { children: [], role: 62, name: "three", cached: { rank: 2, parent: "/panel" } },
  "/table": {
    children: ["/cell1", "/cell2"],
    role: 55,
    name: "",
    cached: { rank: 0, parent: "/c", count: -1 },
  },
  "/cell1": { children: [], role: 56, name: "x", cached: undefined },
  "/cell2": { children: ["/cell2a"], role: 56, name: "y", cached: undefined },
  "/cell2a": { children: [], role: 56, name: "z", cached: undefined },
};

const ROLE_NAMES: Record<number, string> = {
  23: "frame",
  39: "panel",
  55: "tree table",
  56: "table cell",
  62: "push button",
  75: "application",
  32: "list item",
};

/** Items scrolled out of view: GTK keeps them SHOWING and answers G_MININT extents. */
const SCROLLED = new Set<string>();
const G_MININT = -(2 ** 31);

// ENABLED | SENSITIVE only: the app does not show the node.
const HIDDEN_STATES = [(1 << 8) | (1 << 24), 0];
const statesOf = (path: string): number[] => (TREE[path]?.hidden === true ? HIDDEN_STATES : STATES);

const ifacesOf = (path: string): string[] =>
  path === "/root"
    ? [ACC, "org.a11y.atspi.Application"]
    : TREE[path]?.role === 62
      ? [ACC, COMPONENT, ACTION]
      : [ACC, COMPONENT];

/** The app's Cache.GetItems answer: a((so)(so)(so)iiassusau), as at-spi2-atk ≥ 2.34 sends it. */
function cacheItems(): unknown[] {
  return Object.entries(TREE).flatMap(([p, n]) =>
    n.cached === undefined
      ? []
      : [
          [
            [APP, p],
            [APP, "/root"],
            [APP, n.cached.parent],
            n.cached.rank,
            n.cached.count ?? n.children.length,
            ifacesOf(p),
            n.name,
            n.role,
            "",
            statesOf(p),
          ],
        ],
  );
}

function fakeBus(getAll = true): { bus: AtspiBus; calls: string[]; early: string[] } {
  const calls: string[] = [];
  /** Calls made while a GetItems was still unanswered. */
  const early: string[] = [];
  let itemsPending = false;
  const answer = (path: string, member: string): unknown[] => {
    if (member === "GetItems") return [cacheItems()];
    const n = TREE[path];
    if (n === undefined) throw new Error(`no ${path}`);
    switch (member) {
      case "GetChildren":
        return [n.children.map((c) => [APP, c])];
      case "GetExtents":
        return SCROLLED.has(path) ? [[G_MININT, G_MININT, 30, 40]] : [[10, 20, 30, 40]];
      case "GetActions":
        return [[["click", "", ""]]];
      case "GetRoleName":
        return [ROLE_NAMES[n.role]];
      case "GetState":
        return [statesOf(path)];
      case "GetInterfaces":
        return [ifacesOf(path)];
      case "Get":
        return [n.name];
      case "GetAll":
        // What GTK's bridge answers for the Accessible interface, less the fields a walk drops.
        if (!getAll) throw new Error("org.freedesktop.DBus.Error.UnknownMethod");
        return [{ Name: n.name, Description: "", ChildCount: n.children.length, Locale: "C" }];
      default:
        throw new Error(`unexpected ${member}`);
    }
  };
  const bus = {
    call: async (_dest: string, path: string, _iface: string, member: string) => {
      calls.push(`${member} ${path}`);
      if (itemsPending) early.push(`${member} ${path}`);
      if (member === "GetItems") itemsPending = true;
      await Promise.resolve();
      if (member === "GetItems") itemsPending = false;
      return answer(path, member);
    },
    getProperty: async (_dest: string, path: string) => {
      calls.push(`Get ${path}`);
      await Promise.resolve();
      return TREE[path]?.name;
    },
  } as unknown as AtspiBus;
  return { bus, calls, early };
}

interface Row {
  path: string;
  depth: number;
  parent: number;
  facts: A11yNodeFacts;
}

/** One walk of `s` from `root`, as rows (the same limits in every test here). */
async function rowsOf(s: AtspiSession, root: Node, patterns = true, bounds = true): Promise<Row[]> {
  const budget = new Budget(Date.now() + 10_000, new AbortController().signal);
  try {
    const r = await walk(s, root as A11yHandle, budget, {
      maxDepth: 32,
      maxNodes: 1000,
      concurrency: 4,
      patterns,
      bounds,
    });
    return r.visits.map((v) => ({
      path: (v.handle as Node).path,
      depth: v.depth,
      parent: v.parent,
      facts: v.facts,
    }));
  } finally {
    budget.release();
  }
}

async function walked(
  bulk: boolean,
  patterns = true,
  getAll = true,
  bounds = true,
): Promise<{ rows: Row[]; calls: string[] }> {
  const { bus, calls } = fakeBus(getAll);
  const root: Node = { bus: APP, path: "/win", parent: null };
  const s = new AtspiSession(bus, root, bulk);
  return { rows: await rowsOf(s, root, patterns, bounds), calls };
}

describe("AT-SPI bulk walk against a cache that disagrees with GetChildren", () => {
  it("walks GetChildren's tree, the per-node walk's, and makes each call once", async () => {
    const perNode = await walked(false);
    const bulk = await walked(true);
    expect(bulk.rows).toEqual(perNode.rows);
    expect(bulk.rows.map((r) => r.path)).toEqual([
      "/win",
      "/h",
      "/a",
      "/panel",
      "/b",
      "/c",
      "/p1",
      "/p2",
      "/p3",
      "/table",
      "/cell1",
      "/cell2",
      "/cell2a",
    ]);
    // Every parent whose children the cache does not hold in order (the top-level included) and
    // every node the cache lacks whose child count is not 0 is asked, once; a cached leaf,
    // /panel, /c and the cells without children are not.
    expect(bulk.calls.filter((c) => c.startsWith("GetChildren ")).sort()).toEqual([
      "GetChildren /a",
      "GetChildren /cell2",
      "GetChildren /table",
      "GetChildren /win",
    ]);
    const twice = bulk.calls.filter((c, k) => bulk.calls.indexOf(c) !== k);
    expect(twice).toEqual([]);
    // The bulk facts: per-node state, name and role name only for the two uncached cells.
    expect(bulk.calls.filter((c) => c.startsWith("GetState ")).sort()).toEqual([
      "GetState /cell1",
      "GetState /cell2",
      "GetState /cell2a",
    ]);
    // Their names and child counts: one GetAll each, no Properties.Get.
    expect(bulk.calls.filter((c) => c.startsWith("GetAll ")).sort()).toEqual([
      "GetAll /cell1",
      "GetAll /cell2",
      "GetAll /cell2a",
    ]);
    expect(bulk.calls.filter((c) => c.startsWith("Get "))).toEqual([]);
  });

  it("asks the name and GetChildren of an uncached node when the app does not answer GetAll", async () => {
    const perNode = await walked(false);
    const bulk = await walked(true, true, false);
    expect(bulk.rows).toEqual(perNode.rows);
    expect(bulk.calls.filter((c) => c.startsWith("GetChildren /cell")).sort()).toEqual([
      "GetChildren /cell1",
      "GetChildren /cell2",
      "GetChildren /cell2a",
    ]);
    expect(bulk.calls.filter((c) => c.startsWith("Get /")).sort()).toEqual([
      "Get /cell1",
      "Get /cell2",
      "Get /cell2a",
    ]);
  });

  it("a walk after the tree changed, sent the last walk's calls early, is the new tree", async () => {
    const { bus, calls, early } = fakeBus();
    const root: Node = { bus: APP, path: "/win", parent: null };
    const s = new AtspiSession(bus, root, true);
    const once = () => rowsOf(s, root);
    await once();
    // The first walk sends nothing before the cache has answered.
    expect(early).toEqual([]);
    const firstCalls = calls.filter((c) => !c.startsWith("GetItems ")).length;
    const saved = { panel: TREE["/panel"]!.children, c: TREE["/c"]!.children };
    try {
      // /p3 moves under /c in front of /table (GetChildren's truth; the cache still has the old
      // links), /p1 is gone from /panel's GetChildren.
      TREE["/panel"]!.children = ["/p2"];
      TREE["/c"]!.children = ["/p3", "/table"];
      calls.length = 0;
      const again = await once();
      // The last walk's calls asked ahead left right behind GetItems, before its answer.
      expect(calls[0]).toBe("GetItems /org/a11y/atspi/cache");
      expect(early).toContain("GetChildren /a");
      expect(early).toContain("GetExtents /p1");
      expect(early.length).toBeGreaterThan(10);
      expect(early.length).toBeLessThan(firstCalls);
      // The calls asked ahead, and the last walk's calls of the cells the cache lacks.
      expect(
        early.every((c) => /^(GetChildren|GetExtents|GetActions|GetAll|GetRoleName|GetState) /.test(c)),
      ).toBe(true);
      const perNode = await walked(false);
      expect(again.map((r) => r.path)).toEqual(perNode.rows.map((r) => r.path));
      expect(again).toEqual(perNode.rows);
    } finally {
      TREE["/panel"]!.children = saved.panel;
      TREE["/c"]!.children = saved.c;
    }
  });

  it("sends the last walk's calls of the cells the cache lacks early, each taken once", async () => {
    const { bus, calls, early } = fakeBus();
    const root: Node = { bus: APP, path: "/win", parent: null };
    const s = new AtspiSession(bus, root, true);
    await rowsOf(s, root);
    calls.length = 0;
    const again = await rowsOf(s, root);
    const cellCalls = (list: string[]) => list.filter((c) => / \/cell/.test(c)).sort();
    // Every call of the uncached cells left behind GetItems, before its answer (the first walk
    // could ask them only once /table's and /cell2's GetChildren had answered) ...
    const expected = [
      ...["/cell1", "/cell2", "/cell2a"].flatMap((p) => [
        `GetAll ${p}`,
        `GetExtents ${p}`,
        `GetRoleName ${p}`,
        `GetState ${p}`,
      ]),
      "GetChildren /cell2",
    ].sort();
    expect(cellCalls(early)).toEqual(expected);
    // ... and none of them was made a second time: the walk took the early answers.
    expect(cellCalls(calls)).toEqual(expected);
    expect(calls.filter((c, k) => calls.indexOf(c) !== k)).toEqual([]);
    expect(again).toEqual((await walked(false)).rows);
  });

  it("takes a cell's early answers only for the calls the new walk makes of that cell", async () => {
    const { bus, calls, early } = fakeBus();
    const root: Node = { bus: APP, path: "/win", parent: null };
    const s = new AtspiSession(bus, root, true);
    await rowsOf(s, root);
    const saved = { table: TREE["/table"]!.children, cell2: TREE["/cell2"]!.children };
    TREE["/cell3"] = { children: [], role: 56, name: "new", cached: undefined };
    try {
      // /cell1 is gone, /cell3 is new, /cell2 has no cells left under it.
      TREE["/table"]!.children = ["/cell3", "/cell2"];
      TREE["/cell2"]!.children = [];
      calls.length = 0;
      const again = await rowsOf(s, root);
      // The last walk's calls were sent early, /cell1's and /cell2's GetChildren among them ...
      expect(early).toContain("GetAll /cell1");
      expect(early).toContain("GetChildren /cell2");
      // ... but the tree is the new one's: the new cell asked when known, nothing asked twice.
      expect(early.some((c) => c.endsWith(" /cell3"))).toBe(false);
      expect(calls).toContain("GetAll /cell3");
      expect(calls.filter((c, k) => calls.indexOf(c) !== k)).toEqual([]);
      expect(again.map((r) => r.path)).toEqual([
        "/win",
        "/h",
        "/a",
        "/panel",
        "/b",
        "/c",
        "/p1",
        "/p2",
        "/p3",
        "/table",
        "/cell3",
        "/cell2",
      ]);
      expect(again).toEqual((await walked(false)).rows);
    } finally {
      TREE["/table"]!.children = saved.table;
      TREE["/cell2"]!.children = saved.cell2;
      delete TREE["/cell3"];
    }
  });

  it("reads no action names when the walk needs no patterns, and the rest is the same", async () => {
    const full = await walked(true);
    const bare = await walked(true, false);
    expect(full.calls.filter((c) => c.startsWith("GetActions ")).length).toBe(5);
    expect(bare.calls.filter((c) => c.startsWith("GetActions "))).toEqual([]);
    expect(full.rows.some((r) => r.facts.patterns.includes("invoke"))).toBe(true);
    const strip = (rows: Row[]) =>
      rows.map((r) => ({
        ...r,
        facts: { ...r.facts, patterns: r.facts.patterns.filter((p) => p !== "invoke") },
      }));
    expect(strip(bare.rows)).toEqual(strip(full.rows));
  });
});

describe("AT-SPI walk of nodes the app does not show", () => {
  const HIDDEN = ["/panel", "/p1", "/p2", "/p3"];

  it("gives them no rect and asks no GetExtents of them in the cached walk, walk after walk", async () => {
    for (const p of HIDDEN) TREE[p]!.hidden = true;
    try {
      const perNode = await walked(false);
      const { bus, calls } = fakeBus();
      const root: Node = { bus: APP, path: "/win", parent: null };
      const s = new AtspiSession(bus, root, true);
      const walkOnce = () => rowsOf(s, root);
      const first = await walkOnce();
      // The second walk also sends the first one's calls right behind its GetItems.
      const second = await walkOnce();
      // Both ways of reading a node give the same node.
      expect(first).toEqual(perNode.rows);
      expect(second).toEqual(perNode.rows);
      for (const r of first) {
        if (HIDDEN.includes(r.path)) {
          expect(r.facts.rect).toBeNull();
          expect(r.facts.offscreen).toBe(true);
        } else {
          expect(r.facts.rect).toEqual([10, 20, 40, 60]);
          expect(r.facts.offscreen).toBe(false);
        }
      }
      // Their actions and patterns are as for any node.
      expect(first.find((r) => r.path === "/p1")?.facts.patterns).toContain("invoke");
      expect(calls.filter((c) => c.startsWith("GetActions /p")).length).toBe(6);
      const extents = calls.filter((c) => c.startsWith("GetExtents "));
      expect(extents.filter((c) => HIDDEN.includes(c.slice("GetExtents ".length)))).toEqual([]);
      // Every shown node's extents, once per walk: /win /h /a /b /c /table and the three cells.
      expect(extents.length).toBe(18);
    } finally {
      for (const p of HIDDEN) delete TREE[p]!.hidden;
    }
  });

  it("asks no GetExtents of an uncached cell under a table or cell known not SHOWING", async () => {
    // A hidden tree view: the app reports its cells not SHOWING either (SHOWING means the
    // object and all its ancestors are shown). /cell1 and /cell2 sit under the cached /table,
    // /cell2a under the uncached /cell2.
    const CELLS = ["/cell1", "/cell2", "/cell2a"];
    for (const p of ["/table", ...CELLS]) TREE[p]!.hidden = true;
    try {
      const perNode = await walked(false);
      for (const patterns of [true, false]) {
        const bulk = await walked(true, patterns);
        if (patterns) expect(bulk.rows).toEqual(perNode.rows);
        for (const r of bulk.rows.filter((r) => CELLS.includes(r.path))) {
          expect(r.facts.rect).toBeNull();
          expect(r.facts.offscreen).toBe(true);
        }
        const extents = bulk.calls.filter((c) => c.startsWith("GetExtents "));
        expect(extents.filter((c) => CELLS.includes(c.slice("GetExtents ".length)))).toEqual([]);
        // The cells' other facts are still read, each once.
        for (const c of CELLS) expect(bulk.calls.filter((x) => x === `GetState ${c}`).length).toBe(1);
      }
    } finally {
      for (const p of ["/table", ...CELLS]) delete TREE[p]!.hidden;
    }
  });
});

describe("AT-SPI walk whose rects nobody is shown (bounds: false, the outline)", () => {
  const extentsOf = (calls: string[]) =>
    calls.flatMap((c) => (c.startsWith("GetExtents ") ? [c.slice("GetExtents ".length)] : [])).sort();

  it("asks GetExtents only of the scrolled items and the cells the cache lacks; every other fact is the full walk's", async () => {
    // /p3 a cached list item scrolled away: its rect alone says it is offscreen.
    TREE["/p3"]!.role = 32;
    SCROLLED.add("/p3");
    try {
      const full = await walked(true);
      const bare = await walked(true, true, true, false);
      expect(extentsOf(full.calls)).toEqual(
        [
          "/a",
          "/b",
          "/c",
          "/cell1",
          "/cell2",
          "/cell2a",
          "/h",
          "/p1",
          "/p2",
          "/p3",
          "/panel",
          "/table",
          "/win",
        ].sort(),
      );
      expect(extentsOf(bare.calls)).toEqual(["/cell1", "/cell2", "/cell2a", "/p3"]);
      expect(bare.rows.find((r) => r.path === "/p3")?.facts.offscreen).toBe(true);
      expect(full.rows.find((r) => r.path === "/p3")?.facts.offscreen).toBe(true);
      const noRects = (rows: Row[]) => rows.map((r) => ({ ...r, facts: { ...r.facts, rect: null } }));
      expect(noRects(bare.rows)).toEqual(noRects(full.rows));
      // The other nodes have no rect rather than a guess.
      expect(bare.rows.find((r) => r.path === "/p1")?.facts.rect).toBeNull();
    } finally {
      TREE["/p3"]!.role = 62;
      SCROLLED.clear();
    }
  });

  it("the next walk with bounds asks every extent again (the kept calls are per kind of walk)", async () => {
    const { bus, calls } = fakeBus();
    const root: Node = { bus: APP, path: "/win", parent: null };
    const s = new AtspiSession(bus, root, true);
    await rowsOf(s, root, true, false);
    calls.length = 0;
    const rows = await rowsOf(s, root, true, true);
    expect(extentsOf(calls)).toHaveLength(13);
    expect(rows.every((r) => r.facts.rect !== null)).toBe(true);
  });
});
