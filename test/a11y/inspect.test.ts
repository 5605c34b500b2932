import { afterEach, describe, expect, it } from "vitest";
import type { Platform } from "../../src/shared/platform.js";
import { formatElements, formatTree } from "../../src/supervisor/tree/format.js";
import {
  CANARY,
  failure,
  findArgs,
  flatten,
  Harness,
  inspectArgs,
  notepad,
  ruffle,
  ruffleTree,
  targetFor,
} from "./helpers.js";
import { recording } from "./observed.js";

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const R = targetFor(ruffle());

describe("a11y.inspect", () => {
  it("returns the tree breadth first with refs, normalized roles and window-relative rects", async () => {
    h = new Harness([ruffle(), notepad()]);
    const r = await h.call("a11y.inspect", inspectArgs("k1", R));
    expect(r.truncated).toBe(false);
    const all = flatten(r.root);
    expect(r.node_count).toBe(all.length);
    expect(all.length).toBe(12);
    expect(r.root.role).toBe("window");
    expect(r.root.ref).toMatch(/^e\d+$/);
    expect(new Set(all.map((n) => n.ref)).size).toBe(all.length);
    const play = all.find((n) => n.automation_id === "play");
    // Scenario rect [20,60,120,90] inside a window at (100,100): reported window-relative again.
    expect(play).toMatchObject({
      role: "button",
      name: "Play",
      rect: [20, 60, 120, 90],
      patterns: ["invoke"],
    });
    expect(play?.enabled).toBe(true);
    // "checkbox" from the provider is normalized to the vocabulary's "check_box".
    expect(all.find((n) => n.automation_id === "sound")?.role).toBe("check_box");
    // Non-semantic patterns ("window") are not reported.
    expect(r.root.patterns).toEqual([]);
    expect(all.find((n) => n.automation_id === "off")?.enabled).toBe(false);
    expect(all.find((n) => n.automation_id === "hidden")?.offscreen).toBe(true);
    // Breadth first: the root's children come in document order with refs after the root's.
    const kids = r.root.children.map((c) => Number(c.ref.slice(1)));
    expect(kids).toEqual([...kids].sort((a, b) => a - b));
    expect(Math.min(...kids)).toBeGreaterThan(Number(r.root.ref.slice(1)));
  });

  it("patterns: false gives every node patterns [] and leaves the rest of the tree alone", async () => {
    h = new Harness([ruffle(), notepad()]);
    const full = await h.call("a11y.inspect", inspectArgs("k1", R));
    const bare = await h.call("a11y.inspect", inspectArgs("k1", R, { patterns: false }));
    expect(flatten(full.root).some((n) => n.patterns.length > 0)).toBe(true);
    expect(flatten(bare.root).every((n) => n.patterns.length === 0)).toBe(true);
    const strip = (ns: ReturnType<typeof flatten>) => ns.map((n) => ({ ...n, patterns: [], children: [] }));
    expect(strip(flatten(bare.root))).toEqual(strip(flatten(full.root)));
    expect(bare.node_count).toBe(full.node_count);
  });

  it("bounds: false gives every node rect null and leaves the rest of the tree alone, for inspect and find", async () => {
    h = new Harness([ruffle(), notepad()]);
    const full = await h.call("a11y.inspect", inspectArgs("k1", R));
    const bare = await h.call("a11y.inspect", inspectArgs("k1", R, { bounds: false }));
    expect(flatten(full.root).some((n) => n.rect !== null)).toBe(true);
    expect(flatten(bare.root).every((n) => n.rect === null)).toBe(true);
    const strip = (ns: ReturnType<typeof flatten>) => ns.map((n) => ({ ...n, rect: null, children: [] }));
    expect(strip(flatten(bare.root))).toEqual(strip(flatten(full.root)));
    const found = await h.call("a11y.find", findArgs("k1", R, { role: "button" }));
    const foundBare = await h.call(
      "a11y.find",
      findArgs("k1", R, { role: "button", bounds: false, patterns: false }),
    );
    expect(found.elements.length).toBeGreaterThan(0);
    expect(foundBare.elements.map((e) => ({ ...e, rect: null, patterns: [] }))).toEqual(
      found.elements.map((e) => ({ ...e, rect: null, patterns: [] })),
    );
    expect(foundBare.elements.every((e) => e.rect === null && e.patterns.length === 0)).toBe(true);
  });

  it("redacts password fields: the canary never appears in results, text form or errors", async () => {
    h = new Harness([ruffle()]);
    const r = await h.call("a11y.inspect", inspectArgs("k1", R));
    const pw = flatten(r.root).find((n) => n.automation_id === "password");
    expect(pw).toMatchObject({ role: "edit", name: null, is_password: true, patterns: ["value"] });
    expect(JSON.stringify(r)).not.toContain(CANARY);
    const text = formatTree(r.root, r);
    expect(text).not.toContain(CANARY);
    expect(text).toContain("- edit [password] [ref=");

    // find by the canary: no match, and nothing in the output.
    const f = await h.call("a11y.find", findArgs("k1", R, { name_contains: CANARY.slice(3, 15) }));
    expect(f.elements).toEqual([]);
    expect(JSON.stringify(f)).not.toContain(CANARY);
    expect(formatElements(f.elements, f)).not.toContain(CANARY);
    // The field is still found by role or automation id, redacted.
    const byId = await h.call("a11y.find", findArgs("k1", R, { automation_id: "password" }));
    expect(byId.elements).toHaveLength(1);
    expect(byId.elements[0]).toMatchObject({ name: null, is_password: true });

    // Errors about the password field carry no content either.
    const ref = pw?.ref ?? "";
    const e1 = await failure(
      h.call("a11y.act", { session_key: "k1", target: R, ref, action: "invoke", value: null }),
    );
    expect(e1.code).toBe("pattern_not_supported");
    // set_value on a field with the value pattern reaches the provider (and nothing else).
    await h.call("a11y.act", { session_key: "k1", target: R, ref, action: "set_value", value: CANARY });
    expect(h.effects().filter((e) => e.type === "a11y")).toHaveLength(1);
    h.write([ruffle({ tree: { ...ruffleTree(), children: [] } })]);
    const e3 = await failure(
      h.call("a11y.act", { session_key: "k1", target: R, ref, action: "set_value", value: CANARY }),
    );
    expect(e3.code).toBe("element_stale");
    expect(JSON.stringify(e3)).not.toContain(CANARY);
  });

  it("redacts a field whose platform role says password even without the flag", async () => {
    const tree = { role: "window", name: "W", children: [{ role: "password text", name: CANARY }] };
    h = new Harness([ruffle({ tree })]);
    const r = await h.call("a11y.inspect", inspectArgs("k1", R));
    expect(r.root.children[0]).toMatchObject({ name: null, is_password: true, role: "unknown" });
    expect(JSON.stringify(r)).not.toContain(CANARY);
  });

  it("truncates by depth and says so", async () => {
    h = new Harness([ruffle()]);
    const d0 = await h.call("a11y.inspect", inspectArgs("k1", R, { max_depth: 0 }));
    expect(d0.node_count).toBe(1);
    expect(d0.root.children).toEqual([]);
    expect(d0.truncated).toBe(true);
    const d1 = await h.call("a11y.inspect", inspectArgs("k1", R, { max_depth: 1 }));
    expect(d1.node_count).toBe(9);
    expect(d1.truncated).toBe(true);
    expect(flatten(d1.root).every((n) => n === d1.root || n.children.length === 0)).toBe(true);
    const d2 = await h.call("a11y.inspect", inspectArgs("k1", R, { max_depth: 2 }));
    expect(d2.node_count).toBe(11);
    expect(d2.truncated).toBe(true);
    const d3 = await h.call("a11y.inspect", inspectArgs("k1", R, { max_depth: 3 }));
    expect(d3.node_count).toBe(12);
    expect(d3.truncated).toBe(false);
    // The same node keeps its ref between inspections of one session only if the provider
    // hands out the same handle; either way every ref of the last answer is valid.
    const any = flatten(d3.root).find((n) => n.automation_id === "deep");
    expect(any?.rect).toEqual([30, 260, 60, 275]);
  });

  it("truncates by node count, breadth first", async () => {
    h = new Harness([ruffle()]);
    const r = await h.call("a11y.inspect", inspectArgs("k1", R, { max_nodes: 4 }));
    expect(r.node_count).toBe(4);
    expect(r.truncated).toBe(true);
    expect(r.root.children.map((c) => c.automation_id)).toEqual(["play", "password", "sound"]);
    const exact = await h.call("a11y.inspect", inspectArgs("k1", R, { max_nodes: 12 }));
    expect(exact.node_count).toBe(12);
    expect(exact.truncated).toBe(false);
    const one = await h.call("a11y.inspect", inspectArgs("k1", R, { max_nodes: 1 }));
    expect(one.node_count).toBe(1);
    expect(one.truncated).toBe(true);
  });

  it("stops at the deadline with a slow provider and reports truncated (no hang)", async () => {
    // A chain: each level's children wait for their parent's children call (one delay), so no
    // walk can finish its 31 levels in less than 31 × 100 ms, however fast the machine, while the
    // root (one delay) leaves 1.4 s of the 1.5 s deadline for a loaded one (a deadline before the
    // root is known is worker_timeout, not truncation; 600 ms against 200 ms delays was too
    // little at load 20).
    const chain = (depth: number): ReturnType<typeof ruffleTree> => ({
      role: depth === 0 ? "button" : "group",
      name: `n${depth}`,
      automation_id: `n${depth}`,
      children: depth === 0 ? [] : [chain(depth - 1)],
    });
    h = new Harness([ruffle({ tree: chain(30), a11y_delay_ms: 100 })]);
    const r = await h.call("a11y.inspect", inspectArgs("k1", R, { max_depth: 32, deadline_ms: 1500 }));
    expect(r.truncated).toBe(true);
    expect(r.node_count).toBeGreaterThanOrEqual(1);
    expect(r.node_count).toBeLessThan(32);
    await h.close();
    // With enough time a tree of a slow provider is complete.
    h = new Harness([ruffle({ a11y_delay_ms: 200 })]);
    const full = await h.call("a11y.inspect", inspectArgs("k1", R, { deadline_ms: 8000 }));
    expect(full.truncated).toBe(false);
    expect(full.node_count).toBe(12);
  });

  it("looks for popups while the window's tree is walked, and still returns the whole tree", async () => {
    h = new Harness([ruffle({ a11y_delay_ms: 5 })]);
    // Every provider call of the session the handler opens, in the order they were made.
    const calls: string[] = [];
    const platform: Platform = {
      ...h.platform,
      accessibility: recording(h.platform.accessibility, (k) => {
        calls.push(k);
        return undefined;
      }),
    };
    const r = await h.call("a11y.inspect", inspectArgs("k1", R), { ...h.ctx(), platform });
    expect(r.node_count).toBe(12);
    expect(r.truncated).toBe(false);
    const popups = calls.indexOf("popupRoots");
    expect(popups).toBeGreaterThanOrEqual(0);
    // Asked before the walk's last calls, not after its end.
    expect(popups).toBeLessThan(calls.lastIndexOf("children"));
  });

  it("inspects a subtree from root_ref", async () => {
    h = new Harness([ruffle()]);
    const r = await h.call("a11y.inspect", inspectArgs("k1", R, { max_depth: 1 }));
    const list = r.root.children.find((c) => c.automation_id === "levels");
    const sub = await h.call("a11y.inspect", inspectArgs("k1", R, { root_ref: list?.ref }));
    expect(sub.root.automation_id).toBe("levels");
    expect(sub.node_count).toBe(4);
    expect(sub.truncated).toBe(false);
    const e = await failure(h.call("a11y.inspect", inspectArgs("k1", R, { root_ref: "e999999" })));
    expect(e.code).toBe("element_stale");
  });

  it("a window with no scripted tree still has a root", async () => {
    h = new Harness([ruffle({ tree: undefined })]);
    const r = await h.call("a11y.inspect", inspectArgs("k1", R));
    expect(r.node_count).toBe(1);
    expect(r.root.role).toBe("window");
    expect(r.root.rect).toEqual([0, 0, 824, 640]);
  });

  it("verifies the target first: gone, changed, minimized", async () => {
    h = new Harness([ruffle()]);
    h.write([ruffle({ iconic: true })]);
    expect((await failure(h.call("a11y.inspect", inspectArgs("k1", R)))).code).toBe("minimized");
    h.write([ruffle({ process_start: "2026-11-30T09:00:00Z" })]);
    expect((await failure(h.call("a11y.inspect", inspectArgs("k1", R)))).code).toBe("target_changed");
    h.write([notepad()]);
    expect((await failure(h.call("a11y.inspect", inspectArgs("k1", R)))).code).toBe("target_gone");
  });
});

describe("self and host refusal", () => {
  it("never inspects this process, its parent or the named server/host pids", async () => {
    h = new Harness([ruffle({ pid: process.pid }), notepad({ pid: process.ppid })], {
      env: () => ({ UIINSPECT_SERVER_PID: "4242", UIINSPECT_HOST_PID: " 5151 " }),
    });
    const self = targetFor(ruffle({ pid: process.pid }));
    const parent = targetFor(notepad({ pid: process.ppid }));
    for (const t of [self, parent]) {
      expect((await failure(h.call("a11y.inspect", inspectArgs("k1", t)))).code).toBe("target_not_allowed");
      expect((await failure(h.call("a11y.find", findArgs("k1", t)))).code).toBe("target_not_allowed");
      expect(
        (
          await failure(
            h.call("a11y.act", { session_key: "k1", target: t, ref: "e1", action: "invoke", value: null }),
          )
        ).code,
      ).toBe("target_not_allowed");
      expect(
        (await failure(h.call("a11y.element_center", { session_key: "k1", target: t, ref: "e1" }))).code,
      ).toBe("target_not_allowed");
    }
    expect(h.runtime.store.size).toBe(0);
  });

  it("refuses the pids named by UIINSPECT_SERVER_PID / UIINSPECT_HOST_PID", async () => {
    h = new Harness([ruffle(), notepad()], {
      env: () => ({ UIINSPECT_SERVER_PID: "4242", UIINSPECT_HOST_PID: " 5151 " }),
    });
    expect((await failure(h.call("a11y.inspect", inspectArgs("k1", R)))).code).toBe("target_not_allowed");
    const n = targetFor(notepad());
    expect((await failure(h.call("a11y.inspect", inspectArgs("k2", n)))).code).toBe("target_not_allowed");
  });

  it("reads process.env by default", async () => {
    const before = process.env.UIINSPECT_HOST_PID;
    process.env.UIINSPECT_HOST_PID = "4242";
    try {
      const { createUiaRuntime } = await import("../../src/workers/uia/handlers.js");
      h = new Harness([ruffle()]);
      const rt = createUiaRuntime();
      const e = await failure(
        (rt.handlers["a11y.inspect"] as NonNullable<(typeof rt.handlers)["a11y.inspect"]>)(
          inspectArgs("k1", R),
          h.ctx(),
        ),
      );
      expect(e.code).toBe("target_not_allowed");
    } finally {
      if (before === undefined) delete process.env.UIINSPECT_HOST_PID;
      else process.env.UIINSPECT_HOST_PID = before;
    }
  });
});
