import { afterEach, describe, expect, it } from "vitest";
import type { A11yNodeOut } from "../../src/shared/protocol.js";
import { failure, findArgs, flatten, Harness, inspectArgs, ruffle, targetFor } from "./helpers.js";

/**
 * In the worker, every session key on one window (one per identity on the instance) shares the
 * window's one provider session, while refs stay per key: a ref minted under one key is stale
 * under another, and ending one key lets go of the provider only once no key uses it.
 */

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const R = targetFor(ruffle());

function counting(harness: Harness) {
  const counts = { opened: 0, disposed: 0 };
  const a11y = harness.platform.accessibility;
  const open = a11y.openSession.bind(a11y);
  a11y.openSession = async (w) => {
    const s = await open(w);
    counts.opened += 1;
    const dispose = s.dispose.bind(s);
    s.dispose = async () => {
      counts.disposed += 1;
      await dispose();
    };
    return s;
  };
  return counts;
}

const play = (root: A11yNodeOut) => {
  const n = flatten(root).find((x) => x.automation_id === "play");
  if (!n) throw new Error("no play");
  return n.ref;
};
const invoke = (harness: Harness, key: string, ref: string) =>
  harness.call("a11y.act", { session_key: key, target: R, ref, action: "invoke", value: null });

describe("one provider session per window, refs per key", () => {
  it("keys share the window's provider session; a ref resolves only under its own key", async () => {
    h = new Harness([ruffle()]);
    const counts = counting(h);
    const keys = ["k1", "k2", "k3"];
    const refs: string[] = [];
    for (const k of keys) refs.push(play((await h.call("a11y.inspect", inspectArgs(k, R))).root));
    await Promise.all(keys.map((k) => h?.call("a11y.find", findArgs(k, R, { name_contains: "Play" }))));
    expect(counts).toEqual({ opened: 1, disposed: 0 });
    expect(new Set(refs).size).toBe(3);
    for (let i = 0; i < keys.length; i += 1)
      for (let j = 0; j < keys.length; j += 1) {
        const r = invoke(h, keys[i] ?? "", refs[j] ?? "");
        if (i === j) await r;
        else expect((await failure(r)).code).toBe("element_stale");
      }
    expect(h.effects().filter((e) => e.type === "a11y")).toHaveLength(3);

    // Ending one key: its refs are stale, the provider stays for the others.
    expect(await h.call("a11y.dispose", { session_key: "k1" })).toEqual({ disposed: true });
    expect(counts.disposed).toBe(0);
    expect((await failure(invoke(h, "k1", refs[0] ?? ""))).code).toBe("element_stale");
    await invoke(h, "k2", refs[1] ?? "");
    await h.call("a11y.dispose", { session_key: "k2" });
    await h.call("a11y.dispose", { session_key: "k3" });
    expect(counts).toEqual({ opened: 1, disposed: 1 });
    // A key walking again afterwards attaches afresh.
    await h.call("a11y.inspect", inspectArgs("k2", R));
    expect(counts).toEqual({ opened: 2, disposed: 1 });
  });

  it("keys opening at the same moment attach once", async () => {
    h = new Harness([ruffle()]);
    const counts = counting(h);
    await Promise.all(["a", "b", "c", "d"].map((k) => h?.call("a11y.inspect", inspectArgs(k, R))));
    expect(counts.opened).toBe(1);
    expect(h.runtime.store.size).toBe(4);
  });
});
