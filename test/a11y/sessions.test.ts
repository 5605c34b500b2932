import { afterEach, describe, expect, it } from "vitest";
import type { A11yNodeOut } from "../../src/shared/protocol.js";
import {
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

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const R = targetFor(ruffle());
const N = targetFor(notepad());

function byId(root: A11yNodeOut, id: string): A11yNodeOut {
  const n = flatten(root).find((x) => x.automation_id === id);
  if (n === undefined) throw new Error(`no node ${id}`);
  return n;
}

async function playRef(harness: Harness, key: string): Promise<string> {
  const r = await harness.call("a11y.inspect", inspectArgs(key, R));
  return byId(r.root, "play").ref;
}

function invoke(harness: Harness, key: string, ref: string, target = R) {
  return harness.call("a11y.act", { session_key: key, target, ref, action: "invoke", value: null });
}

describe("sessions and refs", () => {
  it("a ref works in its session and is stale after a11y.dispose, also after a new session opens", async () => {
    h = new Harness([ruffle()]);
    const ref = await playRef(h, "k1");
    await invoke(h, "k1", ref);
    expect(h.effects().filter((e) => e.type === "a11y")).toHaveLength(1);
    expect(await h.call("a11y.dispose", { session_key: "k1" })).toEqual({ disposed: true });
    expect(await h.call("a11y.dispose", { session_key: "k1" })).toEqual({ disposed: false });
    expect((await failure(invoke(h, "k1", ref))).code).toBe("element_stale");
    // A new session for the same key hands out new refs; the old one stays stale.
    const again = await playRef(h, "k1");
    expect(again).not.toBe(ref);
    expect((await failure(invoke(h, "k1", ref))).code).toBe("element_stale");
    await invoke(h, "k1", again);
    expect(h.effects().filter((e) => e.type === "a11y")).toHaveLength(2);
  });

  it("a target change (PID reuse: same pid, new start time) ends the session; old refs stay stale", async () => {
    h = new Harness([ruffle()]);
    const ref = await playRef(h, "k1");
    h.write([ruffle({ process_start: "2026-11-30T09:30:00Z" })]);
    expect((await failure(invoke(h, "k1", ref))).code).toBe("target_changed");
    expect(h.runtime.store.size).toBe(0);
    // Same window and pid again with the original identity: the session is not resurrected.
    h.write([ruffle()]);
    expect((await failure(invoke(h, "k1", ref))).code).toBe("element_stale");
    // The new instance, asked for by its own identity, gets a fresh session and fresh refs.
    const reused = ruffle({ process_start: "2026-11-30T09:30:00Z" });
    h.write([reused]);
    const fresh = await h.call("a11y.inspect", inspectArgs("k1-new", targetFor(reused)));
    expect(byId(fresh.root, "play").ref).not.toBe(ref);
    expect((await failure(invoke(h, "k1-new", ref, targetFor(reused)))).code).toBe("element_stale");
  });

  it("a replaced executable path at the same pid is a target change", async () => {
    h = new Harness([ruffle()]);
    const ref = await playRef(h, "k1");
    h.write([ruffle({ process_path: "C:\\Temp\\ruffle.exe" })]);
    expect((await failure(h.call("a11y.element_center", { session_key: "k1", target: R, ref }))).code).toBe(
      "target_changed",
    );
    h.write([ruffle()]);
    expect((await failure(invoke(h, "k1", ref))).code).toBe("element_stale");
  });

  it("a removed node's ref is stale while its siblings still work", async () => {
    h = new Harness([ruffle()]);
    const r = await h.call("a11y.inspect", inspectArgs("k1", R));
    const play = byId(r.root, "play").ref;
    const sound = byId(r.root, "sound").ref;
    const tree = ruffleTree();
    tree.children = (tree.children ?? []).filter((c) => c.automation_id !== "play");
    h.write([ruffle({ tree })]);
    expect((await failure(invoke(h, "k1", play))).code).toBe("element_stale");
    // The fake names nodes by their index path: the sibling moved up one place, so its old
    // handle is stale too; a fresh inspection gives working refs again.
    const r2 = await h.call("a11y.inspect", inspectArgs("k1", R));
    expect(flatten(r2.root).some((n) => n.automation_id === "play")).toBe(false);
    await h.call("a11y.act", {
      session_key: "k1",
      target: R,
      ref: byId(r2.root, "sound").ref,
      action: "toggle",
      value: null,
    });
    const old = await failure(
      h.call("a11y.act", { session_key: "k1", target: R, ref: sound, action: "toggle", value: null }),
    );
    expect(old.code).toBe("element_stale");
  });

  it("a window that is gone or minimized ends its session", async () => {
    h = new Harness([ruffle(), notepad()]);
    const ref = await playRef(h, "k1");
    h.write([ruffle({ iconic: true }), notepad()]);
    expect((await failure(invoke(h, "k1", ref))).code).toBe("minimized");
    h.write([ruffle(), notepad()]);
    expect((await failure(invoke(h, "k1", ref))).code).toBe("element_stale");
    const ref2 = await playRef(h, "k1");
    h.write([notepad()]);
    expect((await failure(invoke(h, "k1", ref2))).code).toBe("target_gone");
    h.write([ruffle(), notepad()]);
    expect((await failure(invoke(h, "k1", ref2))).code).toBe("element_stale");
  });

  it("unknown refs, refs of another key and refs of another window are stale", async () => {
    h = new Harness([ruffle(), notepad()]);
    const a = await playRef(h, "client-a");
    const b = await playRef(h, "client-b");
    expect(a).not.toBe(b);
    expect((await failure(invoke(h, "client-a", "e424242"))).code).toBe("element_stale");
    expect((await failure(invoke(h, "client-a", "not a ref"))).code).toBe("element_stale");
    expect((await failure(invoke(h, "client-b", a))).code).toBe("element_stale");
    expect((await failure(invoke(h, "client-a", b))).code).toBe("element_stale");
    // A ref of the Ruffle window used against Notepad under the same key.
    await h.call("a11y.inspect", inspectArgs("client-a", N));
    expect((await failure(invoke(h, "client-a", a, N))).code).toBe("element_stale");
    // Each still works where it belongs.
    await invoke(h, "client-a", a);
    await invoke(h, "client-b", b);
    // Disposing one key leaves the other's session alone.
    await h.call("a11y.dispose", { session_key: "client-a" });
    expect((await failure(invoke(h, "client-a", a))).code).toBe("element_stale");
    await invoke(h, "client-b", b);
  });

  it("concurrent inspections of several targets under several keys never mix", async () => {
    h = new Harness([ruffle({ a11y_delay_ms: 2 }), notepad({ a11y_delay_ms: 1 })]);
    const jobs = Array.from({ length: 16 }, (_, i) => {
      const onRuffle = i % 2 === 0;
      const key = `key-${Math.floor(i / 2) % 4}`;
      const harness = h as Harness;
      return harness
        .call("a11y.inspect", inspectArgs(key, onRuffle ? R : N))
        .then((r) => ({ r, onRuffle, key }));
    });
    const results = await Promise.all(jobs);
    const seen = new Map<string, string>();
    for (const { r, onRuffle, key } of results) {
      expect(r?.truncated).toBe(false);
      const names = flatten(r.root).map((n) => n.name);
      if (onRuffle) {
        expect(r.root.name).toBe("Ruffle");
        expect(r.node_count).toBe(12);
        expect(names).not.toContain("Notepad");
      } else {
        expect(r.root.name).toBe("Notepad");
        expect(r.node_count).toBe(4);
        expect(names).not.toContain("Play");
      }
      // No ref is shared between two (key, window) sessions.
      for (const n of flatten(r.root)) {
        const owner = `${key}/${onRuffle}`;
        const prev = seen.get(n.ref);
        if (prev !== undefined) expect(prev).toBe(owner);
        seen.set(n.ref, owner);
      }
    }
    // First use by concurrent calls opened one session per (key, window), no more.
    expect(h.runtime.store.size).toBe(8);
  });

  it("the least recently used session ends first when the cap is reached", async () => {
    h = new Harness([ruffle()], { maxSessions: 2 });
    const a = await playRef(h, "a");
    const b = await playRef(h, "b");
    await invoke(h, "a", a); // a is now the most recently used
    await playRef(h, "c");
    expect(h.runtime.store.size).toBe(2);
    expect((await failure(invoke(h, "b", b))).code).toBe("element_stale");
    await invoke(h, "a", a);
  });

  it("find refs belong to the session too", async () => {
    h = new Harness([ruffle()]);
    const f = await h.call("a11y.find", findArgs("k1", R, { automation_id: "play" }));
    const ref = f.elements[0]?.ref ?? "";
    await invoke(h, "k1", ref);
    expect((await failure(invoke(h, "k2", ref))).code).toBe("element_stale");
    await h.call("a11y.dispose", { session_key: "k1" });
    expect((await failure(invoke(h, "k1", ref))).code).toBe("element_stale");
  });

  it("shutdown ends every session", async () => {
    h = new Harness([ruffle()]);
    const ref = await playRef(h, "k1");
    await h.runtime.shutdown();
    expect(h.runtime.store.size).toBe(0);
    expect((await failure(invoke(h, "k1", ref))).code).toBe("element_stale");
  });
});
