import { refs, statesOf, stringsOf } from "./atspiBus.js";
import { ACTION, COMPONENT } from "./atspiFacts.js";
import type { CallKind } from "./atspiPrefetch.js";

/* An application's Cache.GetItems answer, read once per walk for the bulk facts of its nodes. */

/** One object of an application's Cache.GetItems answer. */
export interface CachedItem {
  bus: string;
  path: string;
  childCount: number;
  interfaces: string[];
  name: string;
  role: number;
  states: number[];
  /** The parent's path (same application), or null; only a prediction for asking ahead. */
  parent: string | null;
  /** Where the item stands among its parent's children, by the cache (-1 unknown). */
  rank: number;
}

/** The cache's items, and its prediction of each one's children (in the cache's order). */
export interface CacheSnapshot {
  items: Map<string, CachedItem>;
  childrenOf: Map<string, CachedItem[]>;
}

/**
 * Cache.GetItems → path → item. Two signatures exist: a((so)(so)(so)iiassusau) (index in parent
 * and child count; at-spi2-atk ≥ 2.34) and a((so)(so)(so)a(so)assusau) (the children; Qt and
 * older bridges). Items of another shape are skipped (those nodes are then asked per node).
 */
export function parseCache(body: unknown[]): CacheSnapshot {
  const items = new Map<string, CachedItem>();
  const childrenOf = new Map<string, CachedItem[]>();
  const list = body[0];
  if (!Array.isArray(list)) return { items, childrenOf };
  /** Children listed by their parent (older bridges), in the parent's order. */
  const listedKids = new Map<string, string[]>();
  for (const raw of list) {
    if (!Array.isArray(raw)) continue;
    const self: unknown = raw[0];
    if (!Array.isArray(self) || typeof self[0] !== "string" || typeof self[1] !== "string") continue;
    const listed = Array.isArray(raw[3]);
    const [ifaces, name, role, , states] = listed ? raw.slice(4) : raw.slice(5);
    const childCount: unknown = listed ? (raw[3] as unknown[]).length : raw[4];
    if (typeof name !== "string" || typeof role !== "number" || typeof childCount !== "number") continue;
    const parentRef: unknown = raw[2];
    const parent =
      Array.isArray(parentRef) && parentRef[0] === self[0] && typeof parentRef[1] === "string"
        ? parentRef[1]
        : null;
    if (listed)
      listedKids.set(
        self[1],
        refs([raw[3]]).map((r) => r.path),
      );
    items.set(self[1], {
      bus: self[0],
      path: self[1],
      childCount,
      interfaces: stringsOf(ifaces),
      name,
      role,
      states: statesOf(states),
      parent,
      rank: !listed && typeof raw[3] === "number" ? raw[3] : -1,
    });
  }
  for (const it of items.values()) {
    if (it.parent === null || it.parent === it.path) continue;
    let kids = childrenOf.get(it.parent);
    if (kids === undefined) {
      kids = [];
      childrenOf.set(it.parent, kids);
    }
    kids.push(it);
  }
  for (const [parent, kids] of childrenOf) {
    const order = listedKids.get(parent);
    if (order !== undefined) {
      const at = new Map(order.map((path, i) => [path, i]));
      kids.sort((a, b) => (at.get(a.path) ?? order.length) - (at.get(b.path) ?? order.length));
    } else {
      // Unknown places (-1) last, in the cache's order.
      kids.sort((a, b) => (a.rank < 0 ? 1e9 : a.rank) - (b.rank < 0 ? 1e9 : b.rank));
    }
  }
  return { items, childrenOf };
}

/** The calls a cached node needs during a walk (the rest comes from the cache). */
export function callsOf(it: CachedItem): CallKind[] {
  const out: CallKind[] = [];
  if (it.childCount !== 0) out.push("children");
  if (it.interfaces.includes(COMPONENT)) out.push("extents");
  if (it.interfaces.includes(ACTION)) out.push("actions");
  return out;
}
