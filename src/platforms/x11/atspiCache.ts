import type { WalkShown } from "../../shared/platform.js";
import { refs, statesOf, stringsOf } from "./atspiBus.js";
import { ACTION, needsExtents } from "./atspiFacts.js";
import type { CallKind } from "./atspiPrefetch.js";

const APPLICATION = "org.a11y.atspi.Application";

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
  /**
   * The parents whose cached children are GetChildren's answer (see ordersChildren): the walk
   * takes these from the cache instead of asking.
   */
  ordered: Map<string, CachedItem[]>;
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
  if (!Array.isArray(list)) return { items, childrenOf, ordered: new Map() };
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
  const ordered = new Map<string, CachedItem[]>();
  for (const [parent, kids] of childrenOf) {
    const it = items.get(parent);
    if (it !== undefined && ordersChildren(it, kids, items)) ordered.set(parent, kids);
  }
  return { items, childrenOf, ordered };
}

/**
 * Whether a parent's cached children are its GetChildren answer, in order. GTK's bridge takes
 * each child's place from atk_object_get_index_in_parent, which counts along the parent's own
 * ref_child list or along its container's children, and its child count from the parent's
 * get_n_children. Where the places are exactly 0…n-1 for n children and n is the count, the two
 * lists agree, except below a top-level: GtkWindow's accessible lists its header bar first
 * while the header bar's place counts after the content (gtk3-demo's window: places 1 and 0,
 * GetChildren the other way round). A top-level is a node whose parent is the application
 * object (the cache holds it too, with the Application interface) or unknown: those are asked.
 * On 58 windows of GTK 3 programs every parent this admits matched GetChildren
 * (bench/x11-cache-order.mjs; test/x11/walk-stream.test.ts on two of them). Children listed by
 * their parent (older bridges) carry no places and are asked.
 */
function ordersChildren(
  parent: CachedItem,
  kids: readonly CachedItem[],
  items: ReadonlyMap<string, CachedItem>,
): boolean {
  const up = parent.parent === null || parent.parent === parent.path ? undefined : items.get(parent.parent);
  if (up === undefined || up.interfaces.includes(APPLICATION)) return false;
  if (parent.childCount <= 0 || kids.length !== parent.childCount) return false;
  return kids.every((k, i) => k.rank === i && k.bus === parent.bus);
}

/**
 * The calls a cached node needs during a walk (the rest comes from the cache); no GetChildren
 * where the cache holds the children in order (`ordered`), no GetExtents for a node the cached
 * states say the app does not show (`needsExtents`: its facts carry no rect) nor, without
 * bounds, for one that is no scrolled item, no GetActions without patterns.
 */
export function callsOf(it: CachedItem, ordered: boolean, needs: WalkShown): CallKind[] {
  const out: CallKind[] = [];
  if (it.childCount !== 0 && !ordered) out.push("children");
  if (needsExtents(it.interfaces, it.states, it.role, needs.bounds)) out.push("extents");
  if (needs.patterns && it.interfaces.includes(ACTION)) out.push("actions");
  return out;
}
