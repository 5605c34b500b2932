import { describe, expect, it } from "vitest";
import {
  type CallKind,
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
function plan(maxNodes: number, maxDepth: number): PrefetchPlan {
  const kids: Record<string, string[]> = {
    "/r": ["/a", "/b"],
    "/a": ["/a1", "/a2"],
    "/b": ["/b1"],
    "/a1": ["/deep"],
  };
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
    maxNodes,
    maxDepth,
  };
}

function recorder() {
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
        resolve([`${kind} ${path}`]);
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
    expect(r.calls).toEqual([
      "children /r",
      "extents /r",
      "children /a",
      "extents /a",
      "children /b",
      "extents /b",
      // depth 2 = maxDepth: facts, and children only to tell whether the depth cut anything
      "children /a1",
      "extents /a1",
      "extents /a2",
      "extents /b1",
    ]);
    ahead.stop();

    const few = recorder();
    new Prefetch(plan(3, 32), few.call, 100);
    await few.settleAll();
    expect(few.calls.map((c) => c.split(" ")[1])).toEqual(["/r", "/r", "/a", "/a", "/b", "/b"]);
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
    expect(await first).toEqual(["children /r"]);
    expect(r.calls).not.toContain("extents /b1");
    expect(r.calls).toHaveLength(10);
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
