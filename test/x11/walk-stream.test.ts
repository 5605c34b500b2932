import dbus from "dbus-next";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { X11Accessibility } from "../../src/platforms/x11/atspi.js";
import { AtspiBus } from "../../src/platforms/x11/atspiBus.js";
import { parseCache } from "../../src/platforms/x11/atspiCache.js";
import { PeerLink, verifiedPeerPath } from "../../src/platforms/x11/atspiPeer.js";
import type { Node } from "../../src/platforms/x11/atspiSession.js";
import type {
  A11yHandle,
  A11yNodeFacts,
  A11ySession,
  Platform,
  WindowInfo,
} from "../../src/shared/platform.js";
import { Budget, walk } from "../../src/workers/uia/walk.js";
import {
  atspiBus,
  peerAddressOf,
  startApp,
  startSession,
  waitForExe,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
} from "./support.js";

/**
 * The streaming walk (peer to peer, bulk facts from Cache.GetItems, a window of calls in flight)
 * returns exactly the tree of a plain per-node walk (one call per fact through the bus daemon,
 * one node at a time, breadth first) on real GTK 3 apps, and cuts it at the same nodes.
 */

interface Row {
  depth: number;
  parent: number;
  facts: A11yNodeFacts;
}

/** The reference: sequential breadth-first per-node walk, no concurrency, no cache, no peer. */
async function referenceWalk(s: A11ySession): Promise<Row[]> {
  const out: Row[] = [];
  const queue: Array<{ h: A11yHandle; depth: number; parent: number }> = [
    { h: await s.root(), depth: 0, parent: -1 },
  ];
  for (let i = 0; i < queue.length; i += 1) {
    const q = queue[i]!;
    out.push({ depth: q.depth, parent: q.parent, facts: await s.facts(q.h) });
    for (const c of await s.children(q.h)) queue.push({ h: c, depth: q.depth + 1, parent: i });
  }
  return out;
}

/** One streaming walk of `s` from its root (visits with their handles). */
async function walkVisits(
  s: A11ySession,
  maxNodes = 5000,
  maxDepth = 64,
): Promise<Awaited<ReturnType<typeof walk>>> {
  const budget = new Budget(Date.now() + 60_000, new AbortController().signal);
  try {
    return await walk(s, await s.root(), budget, { maxDepth, maxNodes, concurrency: 16 });
  } finally {
    budget.release();
  }
}

async function streamingWalk(
  s: A11ySession,
  maxNodes = 5000,
  maxDepth = 64,
): Promise<{ rows: Row[]; truncated: boolean }> {
  const r = await walkVisits(s, maxNodes, maxDepth);
  return {
    rows: r.visits.map((v) => ({ depth: v.depth, parent: v.parent, facts: v.facts })),
    truncated: r.truncated,
  };
}

describe.skipIf(!X11_AVAILABLE)("streaming AT-SPI walk = per-node walk on GTK demo apps", () => {
  let session: X11Session;
  let p: Platform;
  const windows: Record<string, WindowInfo> = {};
  const perNode = new X11Accessibility({ peer: false, bulk: false });
  const fast = new X11Accessibility();

  beforeAll(async () => {
    session = startSession();
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "uia" });
    startApp("gtk3-widget-factory", []);
    windows.factory = await waitForWindow(p, "gtk3-widget-factory");
    startApp("gtk3-demo", []);
    // gtk3-demo's title follows the selected demo: find it by its executable.
    windows.demo = await waitForExe(p, "/gtk3-demo");
  }, 90_000);

  afterAll(async () => {
    perNode.dispose();
    fast.dispose();
    await p?.dispose();
    session?.stop();
  });

  for (const app of ["factory", "demo"]) {
    it(`${app}: the same tree, node for node, and the same cuts by node count and depth`, async () => {
      const w = windows[app]!;
      const slow = await perNode.openSession(w);
      const quick = await fast.openSession(w);
      try {
        // Both sessions' trees are settled before comparing: a GTK app builds parts lazily
        // on first access, so each is walked once first.
        await referenceWalk(slow);
        await streamingWalk(quick);
        const reference = await referenceWalk(slow);
        expect(reference.length).toBeGreaterThan(100);
        const full = await streamingWalk(quick);
        expect(full.truncated).toBe(false);
        expect(full.rows).toEqual(reference);
        // The streaming walk over per-node calls is the same tree too.
        expect((await streamingWalk(slow)).rows).toEqual(reference);

        const cut = await streamingWalk(quick, 37);
        expect(cut.truncated).toBe(true);
        expect(cut.rows).toEqual(reference.slice(0, 37));

        const shallow = await streamingWalk(quick, 5000, 2);
        const kept = reference.filter((r) => r.depth <= 2);
        expect(shallow.rows).toEqual(kept);
        expect(shallow.truncated).toBe(reference.length > kept.length);
      } finally {
        await slow.dispose();
        await quick.dispose();
      }
    }, 120_000);
  }

  /** One call to the app through the a11y bus daemon (not the session under test). */
  async function ask(bus: dbus.MessageBus, node: Node, path: string, iface: string, member: string) {
    const reply = await bus.call(new dbus.Message({ destination: node.bus, path, interface: iface, member }));
    return reply?.body ?? [];
  }

  it("demo: the window's header bar case is there, and the cache orders most parents below it", async () => {
    const quick = await fast.openSession(windows.demo!);
    const bus = await atspiBus();
    try {
      const root = (await quick.root()) as Node;
      const cache = parseCache(
        await ask(bus, root, "/org/a11y/atspi/cache", "org.a11y.atspi.Cache", "GetItems"),
      );
      const live = ((await ask(bus, root, root.path, "org.a11y.atspi.Accessible", "GetChildren"))[0] ??
        []) as Array<[string, string]>;
      // The cache places the window's children in another order than GetChildren: the walk
      // (compared node for node above) must not take them from the cache.
      const cached = (cache.childrenOf.get(root.path) ?? []).map((c) => c.path);
      expect(cached.length).toBe(live.length);
      expect(cached).not.toEqual(live.map(([, path]) => path));
      expect(cache.ordered.has(root.path)).toBe(false);
      // Every parent whose children the cache orders answers GetChildren with the same list.
      expect(cache.ordered.size).toBeGreaterThan(5);
      for (const [parent, kids] of cache.ordered) {
        const got = ((await ask(bus, root, parent, "org.a11y.atspi.Accessible", "GetChildren"))[0] ??
          []) as Array<[string, string]>;
        expect(got.map(([, path]) => path)).toEqual(kids.map((k) => k.path));
      }
    } finally {
      bus.disconnect();
      await quick.dispose();
    }
  });

  it("factory: a node the cache lacks is asked GetAll, not its name, and GetChildren only with children", async () => {
    const quick = await fast.openSession(windows.factory!);
    const bus = await atspiBus();
    const asked: Array<{ member: string; path: string }> = [];
    const plain = AtspiBus.prototype.call;
    try {
      await streamingWalk(quick);
      const root = (await quick.root()) as Node;
      AtspiBus.prototype.call = function (this: AtspiBus, ...args: Parameters<AtspiBus["call"]>) {
        asked.push({ path: args[1], member: args[3] });
        return plain.apply(this, args);
      };
      const { rows } = await streamingWalk(quick);
      AtspiBus.prototype.call = plain;
      const cache = parseCache(
        await ask(bus, root, "/org/a11y/atspi/cache", "org.a11y.atspi.Cache", "GetItems"),
      );
      const lacked = asked.filter((a) => a.member === "GetAll").map((a) => a.path);
      // gtk3-widget-factory's tree view cells are not in its cache: 20 of them.
      expect(lacked.length).toBeGreaterThanOrEqual(10);
      expect(lacked.every((path) => !cache.items.has(path))).toBe(true);
      expect(new Set(lacked).size).toBe(lacked.length);
      expect(asked.filter((a) => a.member === "Get")).toEqual([]);
      // GetChildren of a node the cache lacks only where its child count is not 0.
      for (const a of asked.filter((c) => c.member === "GetChildren" && !cache.items.has(c.path))) {
        const kids = (await ask(bus, root, a.path, "org.a11y.atspi.Accessible", "GetChildren"))[0];
        expect((kids as unknown[]).length).toBeGreaterThan(0);
      }
      expect(rows.length).toBeGreaterThan(100);
    } finally {
      AtspiBus.prototype.call = plain;
      bus.disconnect();
      await quick.dispose();
    }
  });

  it("factory: a second walk with the same limits sends the last walk's calls behind GetItems", async () => {
    const quick = await fast.openSession(windows.factory!);
    const plain = AtspiBus.prototype.call;
    let itemsAnswered = true;
    let early = 0;
    let total = 0;
    /** The cells the cache lacks: their GetAll calls sent before GetItems' answer. */
    let earlyCells = 0;
    try {
      AtspiBus.prototype.call = function (this: AtspiBus, ...args: Parameters<AtspiBus["call"]>) {
        const p = plain.apply(this, args);
        if (args[3] === "GetItems") {
          itemsAnswered = false;
          const answered = () => {
            itemsAnswered = true;
          };
          p.then(answered, answered);
        } else {
          total += 1;
          if (!itemsAnswered) early += 1;
          if (!itemsAnswered && args[3] === "GetAll") earlyCells += 1;
        }
        return p;
      };
      const first = await streamingWalk(quick);
      // The first walk of the session has nothing to send early: its calls wait for the cache.
      expect(early).toBe(0);
      early = 0;
      total = 0;
      const second = await streamingWalk(quick);
      // The second: the calls asked ahead last time, and the cells' own calls (20 cells on
      // gtk3-widget-factory: their GetAll among them).
      expect(early).toBeGreaterThan(200);
      expect(early).toBeLessThanOrEqual(total);
      expect(earlyCells).toBeGreaterThanOrEqual(10);
      expect(second.rows).toEqual(first.rows);
      // Other limits: nothing is sent early; the walk of the first limits after it still is.
      early = 0;
      await streamingWalk(quick, 37);
      expect(early).toBe(0);
      const third = await streamingWalk(quick);
      expect(early).toBeGreaterThan(200);
      expect(third.rows).toEqual(first.rows);
    } finally {
      AtspiBus.prototype.call = plain;
      await quick.dispose();
    }
  });

  it("factory: a node the app does not show has no rect and is never asked GetExtents", async () => {
    const quick = await fast.openSession(windows.factory!);
    const bus = await atspiBus();
    const plain = AtspiBus.prototype.call;
    const extentsOf = new Set<string>();
    const walkNodes = async () =>
      (await walkVisits(quick)).visits.map((v) => ({ path: (v.handle as Node).path, facts: v.facts }));
    try {
      await walkNodes();
      AtspiBus.prototype.call = function (this: AtspiBus, ...args: Parameters<AtspiBus["call"]>) {
        if (args[3] === "GetExtents") extentsOf.add(args[1]);
        return plain.apply(this, args);
      };
      // A first walk of this session's kind was made: the second also sends its calls early.
      const rows = await walkNodes();
      AtspiBus.prototype.call = plain;
      const root = (await quick.root()) as Node;
      const cache = parseCache(
        await ask(bus, root, "/org/a11y/atspi/cache", "org.a11y.atspi.Cache", "GetItems"),
      );
      const shows = (states: readonly number[]) =>
        ((states[0] ?? 0) & (1 << 25)) !== 0 && ((states[0] ?? 0) & (1 << 30)) !== 0;
      const component = rows.filter((r) =>
        cache.items.get(r.path)?.interfaces.includes("org.a11y.atspi.Component"),
      );
      const hidden = component.filter((r) => !shows(cache.items.get(r.path)!.states));
      const shown = component.filter((r) => shows(cache.items.get(r.path)!.states));
      // The widget factory's two stack pages not on view, and the like: about 110 nodes.
      expect(hidden.length).toBeGreaterThan(50);
      expect(hidden.some((r) => r.facts.patterns.includes("invoke"))).toBe(true);
      for (const r of hidden) {
        expect(r.facts.rect).toBeNull();
        expect(r.facts.offscreen).toBe(true);
        expect(extentsOf.has(r.path)).toBe(false);
      }
      // A shown node is asked, and has its place on screen.
      expect(shown.length).toBeGreaterThan(50);
      for (const r of shown) expect(extentsOf.has(r.path)).toBe(true);
      expect(shown.filter((r) => r.facts.rect !== null).length).toBeGreaterThan(50);
    } finally {
      AtspiBus.prototype.call = plain;
      bus.disconnect();
      await quick.dispose();
    }
  }, 120_000);

  for (const app of ["factory", "demo"]) {
    it(`${app}: no child of a node that is not SHOWING reports SHOWING (the walk relies on it)`, async () => {
      // The cached walk asks no GetExtents of an uncached node under a parent known not
      // SHOWING: exact only if the app never reports a child SHOWING below such a parent.
      const slow = await perNode.openSession(windows[app]!);
      const bus = await atspiBus();
      try {
        const r = await walkVisits(slow);
        const showing = await Promise.all(
          r.visits.map(async (v) => {
            const n = v.handle as Node;
            const body = await ask(bus, n, n.path, "org.a11y.atspi.Accessible", "GetState");
            const word = Array.isArray(body[0]) ? Number(body[0][0] ?? 0) : 0;
            return ((word >>> 25) & 1) === 1;
          }),
        );
        const under = r.visits.flatMap((v, i) => (v.parent >= 0 && !showing[v.parent] ? [i] : []));
        // The factory's stack pages not on view hold about ninety nodes.
        if (app === "factory") expect(under.length).toBeGreaterThan(50);
        expect(under.filter((i) => showing[i])).toEqual([]);
      } finally {
        bus.disconnect();
        await slow.dispose();
      }
    }, 120_000);
  }

  it("accepts an application's peer address only when the kernel says the app listens there", async () => {
    const w = windows.factory!;
    const pid = w.instance!.pid;
    const bus = await atspiBus();
    try {
      const address = await peerAddressOf(bus, pid);
      expect(address).toMatch(/^unix:path=/);
      expect(verifiedPeerPath(address!, pid)).not.toBeNull();
      // The same socket claimed for another process (here: this test), and the session bus
      // (a socket we own that the app does not listen on), are refused.
      expect(verifiedPeerPath(address!, process.pid)).toBeNull();
      expect(verifiedPeerPath(session.env.DBUS_SESSION_BUS_ADDRESS!, pid)).toBeNull();
      // Connected, the kernel names the app as the listener (SO_PEERCRED): the link opens for
      // its PID and for no other.
      const path = verifiedPeerPath(address!, pid)!;
      const link = await PeerLink.open(path, pid, 3000, () => {});
      expect(link.closed).toBe(false);
      link.close();
      await expect(PeerLink.open(path, process.pid, 3000, () => {})).rejects.toThrow(
        "peer is another process",
      );
    } finally {
      bus.disconnect();
    }
  });
});
