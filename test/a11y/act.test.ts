import { afterEach, describe, expect, it } from "vitest";
import type { A11yNodeOut } from "../../src/shared/protocol.js";
import {
  CANARY,
  failure,
  findArgs,
  flatten,
  Harness,
  inspectArgs,
  notepad,
  ruffle,
  targetFor,
} from "./helpers.js";

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const R = targetFor(ruffle());

async function refs(harness: Harness, key = "k1"): Promise<Map<string, A11yNodeOut>> {
  const r = await harness.call("a11y.inspect", inspectArgs(key, R));
  return new Map(flatten(r.root).map((n) => [n.automation_id ?? n.name ?? "", n]));
}

function act(harness: Harness, ref: string, action: string, value: string | null = null) {
  return harness.call("a11y.act", { session_key: "k1", target: R, ref, action, value });
}

describe("a11y.act", () => {
  it("performs the semantic pattern through the provider", async () => {
    h = new Harness([ruffle()]);
    const m = await refs(h);
    await act(h, m.get("play")?.ref ?? "", "invoke");
    await act(h, m.get("sound")?.ref ?? "", "toggle");
    await act(h, m.get("Level 1")?.ref ?? "", "select");
    const fx = h.effects();
    expect(fx.map((e) => [e.type, e.action, e.automation_id])).toEqual([
      ["a11y", "invoke", "play"],
      ["a11y", "toggle", "sound"],
      ["a11y", "select", null],
    ]);
  });

  it("an absent pattern is pattern_not_supported and nothing at all is emitted (no click instead)", async () => {
    h = new Harness([ruffle()]);
    const m = await refs(h);
    const play = m.get("play")?.ref ?? "";
    for (const action of ["toggle", "select", "expand", "collapse"]) {
      expect((await failure(act(h, play, action))).code).toBe("pattern_not_supported");
    }
    expect((await failure(act(h, play, "set_value", CANARY))).code).toBe("pattern_not_supported");
    // A text node has no pattern at all.
    expect((await failure(act(h, m.get("Score: 10")?.ref ?? "", "invoke"))).code).toBe(
      "pattern_not_supported",
    );
    expect(h.effects()).toEqual([]);
  });

  it("validates the value argument and never puts the value in an error", async () => {
    h = new Harness([ruffle()]);
    const m = await refs(h);
    const pw = m.get("password")?.ref ?? "";
    const e1 = await failure(act(h, pw, "set_value", null));
    expect(e1.code).toBe("invalid_argument");
    const e2 = await failure(act(h, m.get("play")?.ref ?? "", "invoke", CANARY));
    expect(e2.code).toBe("invalid_argument");
    expect(e2.message).not.toContain(CANARY);
    const e3 = await failure(act(h, "e999", "set_value", CANARY));
    expect(e3.code).toBe("element_stale");
    expect(JSON.stringify(e3)).not.toContain(CANARY);
    expect(h.effects()).toEqual([]);
  });

  it("does not need the foreground, but does need the right instance, visible and not minimized", async () => {
    h = new Harness([ruffle(), notepad()]);
    const m = await refs(h);
    const play = m.get("play")?.ref ?? "";
    h.write([ruffle(), notepad()], 2002);
    await act(h, play, "invoke");
    h.write([ruffle({ visible: false }), notepad()], 2002);
    expect((await failure(act(h, play, "invoke"))).code).toBe("target_gone");
    expect(h.effects().filter((e) => e.type === "a11y")).toHaveLength(1);
  });

  it("a ref from inspect of one session cannot act in a session never opened", async () => {
    h = new Harness([ruffle()]);
    const m = await refs(h, "other");
    expect((await failure(act(h, m.get("play")?.ref ?? "", "invoke"))).code).toBe("element_stale");
    expect(h.runtime.store.size).toBe(1);
  });
});

describe("a11y.element_center", () => {
  it("returns the live element's centre, window-relative", async () => {
    h = new Harness([ruffle()]);
    const m = await refs(h);
    const c = await h.call("a11y.element_center", {
      session_key: "k1",
      target: R,
      ref: m.get("play")?.ref ?? "",
    });
    expect(c).toEqual({ x: 70, y: 75 });
    // The window moves: the centre stays window-relative and follows the live element.
    h.write([ruffle({ rect: [300, 50, 1124, 690] })]);
    const c2 = await h.call("a11y.element_center", {
      session_key: "k1",
      target: R,
      ref: m.get("play")?.ref ?? "",
    });
    expect(c2).toEqual({ x: 70, y: 75 });
  });

  it("refuses elements outside the window, off screen or without a rect", async () => {
    const base = ruffle();
    const tree = { ...(base.tree as NonNullable<typeof base.tree>) };
    tree.children = [...(tree.children ?? []), { role: "button", name: "No rect", automation_id: "norect" }];
    h = new Harness([ruffle({ tree })]);
    const m = await refs(h);
    for (const id of ["outside", "hidden", "norect"]) {
      const e = await failure(
        h.call("a11y.element_center", { session_key: "k1", target: R, ref: m.get(id)?.ref ?? "" }),
      );
      expect(e.code).toBe("out_of_bounds");
    }
  });
});

describe("a11y.find", () => {
  it("filters by case-insensitive name, role and automation id", async () => {
    h = new Harness([ruffle()]);
    const byName = await h.call("a11y.find", findArgs("k1", R, { name_contains: "LEVEL" }));
    expect(byName.elements.map((e) => e.name)).toEqual(["Levels", "Level 1", "Level 2"]);
    expect(byName.truncated).toBe(false);
    expect(byName.elements.every((e) => e.children.length === 0)).toBe(true);
    const byRole = await h.call("a11y.find", findArgs("k1", R, { role: "button" }));
    expect(byRole.elements.map((e) => e.automation_id)).toEqual(["play", "hidden", "outside", "off", "deep"]);
    const aliasRole = await h.call("a11y.find", findArgs("k1", R, { role: "CheckBox" }));
    expect(aliasRole.elements.map((e) => e.automation_id)).toEqual(["sound"]);
    const both = await h.call("a11y.find", findArgs("k1", R, { role: "button", name_contains: "play" }));
    expect(both.elements.map((e) => e.automation_id)).toEqual(["play", "deep"]);
    const byId = await h.call("a11y.find", findArgs("k1", R, { automation_id: "deep" }));
    expect(byId.elements).toHaveLength(1);
    expect(byId.elements[0]?.rect).toEqual([30, 260, 60, 275]);
    // automation ids are identifiers: exact match.
    expect((await h.call("a11y.find", findArgs("k1", R, { automation_id: "DEEP" }))).elements).toEqual([]);
  });

  it("caps results at max_results and reports truncation", async () => {
    h = new Harness([ruffle()]);
    const r = await h.call("a11y.find", findArgs("k1", R, { role: "button", max_results: 2 }));
    expect(r.elements.map((e) => e.automation_id)).toEqual(["play", "hidden"]);
    expect(r.truncated).toBe(true);
    const all = await h.call("a11y.find", findArgs("k1", R, { max_results: 500 }));
    expect(all.elements).toHaveLength(12);
    expect(all.truncated).toBe(false);
  });

  it("rejects a role outside the vocabulary", async () => {
    h = new Harness([ruffle()]);
    expect((await failure(h.call("a11y.find", findArgs("k1", R, { role: "blink-tag" })))).code).toBe(
      "invalid_argument",
    );
    const unknown = await h.call("a11y.find", findArgs("k1", R, { role: "unknown" }));
    expect(unknown.elements).toEqual([]);
  });

  it("found refs act like inspected ones", async () => {
    h = new Harness([ruffle()]);
    const r = await h.call("a11y.find", findArgs("k1", R, { automation_id: "play" }));
    await act(h, r.elements[0]?.ref ?? "", "invoke");
    expect(h.effects().filter((e) => e.type === "a11y")).toHaveLength(1);
  });
});
