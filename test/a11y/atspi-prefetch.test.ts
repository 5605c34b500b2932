import { describe, expect, it } from "vitest";
import {
  type CallKind,
  FACTS_AHEAD,
  keyOf,
  type PredictedNode,
  Prefetch,
  type PrefetchPlan,
} from "../../src/platforms/x11/atspiPrefetch.js";

/**
 * Asking ahead from the cache's prediction: breadth-first in the predicted order, never past the
 * walk's node and depth limits, at most the window in flight, each answer taken once, and no
 * call leaves after the walk released it.
 */

const COMPONENT = "org.a11y.atspi.Component";

/** root → a, b; a → a1, a2; b → b1; a1 → deep. Every node has a Component, none an Action. */
const TREE: Record<string, string[]> = {
  "/r": ["/a", "/b"],
  "/a": ["/a1", "/a2"],
  "/b": ["/b1"],
  "/a1": ["/deep"],
};

function plan(maxNodes: number, maxDepth: number, kids: Record<string, string[]> = TREE): PrefetchPlan {
  const node = (path: string): PredictedNode => ({
    path,
    interfaces: [COMPONENT],
    childCount: kids[path]?.length ?? 0,
  });
  return {
    root: "/r",
    node,
    childrenOf: (p) => (kids[p] ?? []).map(node),
    needs: (n) => [...(n.childCount !== 0 ? (["children"] as const) : []), "extents"],
    // The recorder answers a GetChildren with the true children (TREE), as GetChildren does.
    childPaths: (body) => (body[0] as string[] | undefined) ?? [],
    maxNodes,
    maxDepth,
  };
}

/** Records the calls; a GetChildren is answered with `tree`'s children (the app's truth). */
function recorder(tree: Record<string, string[]> = TREE) {
  const calls: string[] = [];
  const pending: Array<() => void> = [];
  let active = 0;
  let peak = 0;
  const call = (kind: CallKind, path: string): Promise<unknown[]> => {
    calls.push(`${kind} ${path}`);
    active += 1;
    peak = Math.max(peak, active);
    return new Promise((resolve) =>
      pending.push(() => {
        active -= 1;
        resolve(kind === "children" ? [tree[path] ?? [], `${kind} ${path}`] : [`${kind} ${path}`]);
      }),
    );
  };
  const settleAll = async () => {
    while (pending.length > 0) {
      pending.shift()?.();
      await Promise.resolve();
      await Promise.resolve();
    }
  };
  return { calls, call, settleAll, peak: () => peak };
}

describe("AT-SPI prefetch", () => {
  it("asks in predicted breadth-first order within the limits", async () => {
    const r = recorder();
    const ahead = new Prefetch(plan(100, 2), r.call, 100);
    await r.settleAll();
    // Every GetChildren first (their answers tell the walk what the cache lacks), then the facts.
    expect(r.calls).toEqual([
      "children /r",
      "children /a",
      "children /b",
      // depth 2 = maxDepth: facts, and children only to tell whether the depth cut anything
      "children /a1",
      "extents /r",
      "extents /a",
      "extents /b",
      "extents /a1",
      "extents /a2",
      "extents /b1",
    ]);
    ahead.stop();

    const few = recorder();
    new Prefetch(plan(3, 32), few.call, 100);
    await few.settleAll();
    expect(few.calls).toEqual([
      "children /r",
      "children /a",
      "children /b",
      "extents /r",
      "extents /a",
      "extents /b",
    ]);
  });

  it("takes the calls sent early that it predicts, sends the rest, and learns from early children", async () => {
    // The app's truth: /x, which the cache places nowhere, sits under /a.
    const truth = { ...TREE, "/a": ["/a1", "/a2", "/x"] };
    const early = recorder(truth);
    const seeded = new Map<string, Promise<unknown[]>>();
    for (const [kind, path] of [
      ["children", "/a"],
      ["extents", "/a"],
      ["extents", "/gone"],
    ] as const)
      seeded.set(keyOf(kind, path), early.call(kind, path));
    const r = recorder(truth);
    const noLimits = plan(100, 32);
    const ahead = new Prefetch(noLimits, r.call, 100, seeded);
    await early.settleAll();
    await r.settleAll();
    // None of the seeded calls is sent again; the predicted ones are taken as answers.
    expect(r.calls).not.toContain("children /a");
    expect(r.calls).not.toContain("extents /a");
    expect(await ahead.take("extents", "/a")).toEqual(["extents /a"]);
    expect(await ahead.take("children", "/a")).toEqual([["/a1", "/a2", "/x"], "children /a"]);
    // The early GetChildren answer planned /x, as one sent here would have.
    expect(r.calls).toContain("extents /x");
    // An early call nothing predicts is no answer; everything else is sent as without seeds.
    expect(ahead.take("extents", "/gone")).toBeUndefined();
    expect(ahead.sent().map((c) => `${c.kind} ${c.path}`)).toEqual(
      expect.arrayContaining(["children /a", "extents /a", "children /r", "extents /b1"]),
    );
    expect(ahead.sent().map((c) => c.path)).not.toContain("/gone");
    ahead.stop();
  });

  it("keeps at most the window in flight", async () => {
    const r = recorder();
    new Prefetch(plan(100, 32), r.call, 2);
    expect(r.calls).toHaveLength(2);
    await r.settleAll();
    expect(r.calls).toHaveLength(11);
    expect(r.peak()).toBe(2);
  });

  it("hands each answer out once; a call not yet sent is dropped when the walk asks itself", async () => {
    const r = recorder();
    const ahead = new Prefetch(plan(100, 32), r.call, 1);
    const first = ahead.take("children", "/r");
    expect(first).toBeDefined();
    expect(ahead.take("children", "/r")).toBeUndefined();
    // Not sent yet (window 1): taken by the walk, so it never leaves.
    expect(ahead.take("extents", "/b1")).toBeUndefined();
    expect(ahead.take("extents", "/nowhere")).toBeUndefined();
    await r.settleAll();
    expect(await first).toEqual([["/a", "/b"], "children /r"]);
    expect(r.calls).not.toContain("extents /b1");
    expect(r.calls).toHaveLength(10);
  });

  it("plans a child the cache placed elsewhere from its parent's GetChildren answer", async () => {
    // The cache links /b under /elsewhere (GTK's window children), so the prediction from /r
    // misses /b and /b1; /r's GetChildren answer names /b, and then they are asked too.
    const cached: Record<string, string[]> = { "/r": ["/a"], "/a": ["/a1", "/a2"], "/b": ["/b1"] };
    const r = recorder();
    new Prefetch(plan(100, 32, cached), r.call, 100);
    expect(r.calls).not.toContain("children /b");
    await r.settleAll();
    expect(r.calls).toContain("children /b");
    expect(r.calls).toContain("extents /b");
    expect(r.calls).toContain("extents /b1");
    // Within the depth limit: at depth 1 = maxDepth nothing below /r's children is planned.
    const shallow = recorder();
    new Prefetch(plan(100, 0, cached), shallow.call, 100);
    await shallow.settleAll();
    expect(shallow.calls).toEqual(["children /r", "extents /r"]);
  });

  it("holds facts' calls back to a few while a GetChildren is out", async () => {
    const wide: Record<string, string[]> = { "/r": [] };
    for (let i = 0; i < 200; i += 1) wide["/r"]!.push(`/n${i}`);
    wide["/n0"] = ["/x"];
    const r = recorder(wide);
    new Prefetch(plan(1000, 32, wide), r.call, 512);
    // /r's and /n0's GetChildren, then at most FACTS_AHEAD facts until they are answered.
    expect(r.calls.filter((c) => c.startsWith("children"))).toEqual(["children /r", "children /n0"]);
    expect(r.calls.filter((c) => c.startsWith("extents"))).toHaveLength(FACTS_AHEAD);
    await r.settleAll();
    expect(r.calls.filter((c) => c.startsWith("extents"))).toHaveLength(202);
  });

  it("answers the walk's own calls from the seed once, asks the rest, and keeps both for the next walk", async () => {
    const early = recorder();
    const seeded = new Map<string, Promise<unknown[]>>([
      [keyOf("props", "/cell"), early.call("props", "/cell")],
      [keyOf("state", "/cell"), early.call("state", "/cell")],
    ]);
    const r = recorder();
    const ahead = new Prefetch(plan(100, 32), r.call, 100, seeded);
    const asked: string[] = [];
    const ask = (what: string) => () => {
      asked.push(what);
      return Promise.resolve([`asked ${what}`]);
    };
    const props = ahead.own("props", "/cell", ask("props /cell"));
    const role = ahead.own("role", "/cell", ask("role /cell"));
    // Taken once: the same call a second time is asked.
    const again = ahead.own("props", "/cell", ask("props /cell"));
    await early.settleAll();
    await r.settleAll();
    expect(await props).toEqual(["props /cell"]);
    expect(await role).toEqual(["asked role /cell"]);
    expect(await again).toEqual(["asked props /cell"]);
    expect(asked).toEqual(["role /cell", "props /cell"]);
    // The prefetch never sends a call of its own for them.
    expect(r.calls.filter((c) => c.endsWith(" /cell"))).toEqual([]);
    const sent = ahead.sent().map((c) => `${c.kind} ${c.path}`);
    expect(sent.filter((c) => c.endsWith(" /cell"))).toEqual(["props /cell", "role /cell"]);
    // The seeded call the walk never made (state) is not kept; after the stop nothing is.
    expect(sent).not.toContain("state /cell");
    ahead.stop();
    const after = ahead.own("state", "/cell", ask("state /cell"));
    expect(await after).toEqual(["asked state /cell"]);
    expect(ahead.sent().map((c) => `${c.kind} ${c.path}`)).toEqual(sent);
  });

  it("sends nothing more once stopped", async () => {
    const r = recorder();
    const ahead = new Prefetch(plan(100, 32), r.call, 2);
    ahead.stop();
    await r.settleAll();
    expect(r.calls).toHaveLength(2);
    expect(ahead.take("children", "/r")).toBeUndefined();
  });
});
