import dbus from "dbus-next";
import { isUiError, uiError } from "../../shared/errors.js";
import { intersect, type Rect, rectArea, sameRect } from "../../shared/geometry.js";
import type {
  A11yHandle,
  A11yNodeFacts,
  A11yNodeSource,
  A11ySession,
  AccessibilityPort,
  SemanticAction,
  WalkLimits,
  WindowInfo,
} from "../../shared/platform.js";
import { SETTINGS } from "../../shared/settings.js";
import { readSetting } from "../../shared/settingsReader.js";
import { withTimeout as rejectAfter } from "../../shared/timeout.js";
import {
  ACTION,
  type AtspiFactsInput,
  actionNamesOf,
  atspiFacts,
  CHECKABLE_ROLES,
  COMPONENT,
  EDITABLE_TEXT,
  EXPAND_ACTIONS,
  extentsRect,
  hasState,
  INVOKE_ACTIONS,
  SELECTION,
  ST_DEFUNCT,
  ST_EXPANDABLE,
  ST_EXPANDED,
  ST_SELECTABLE,
  TOGGLE_ACTIONS,
} from "./atspiFacts.js";
import { PeerLink, type PeerReply, PeerTimeout, verifiedPeerPath } from "./atspiPeer.js";
import { type CallKind, Prefetch } from "./atspiPrefetch.js";
import { scrollCellIntoView } from "./scrollInto.js";
import { ATSPI_STATE } from "./states.js";

/**
 * AT-SPI2 over D-Bus with dbus-next's low-level bus.call (no introspection per node). The a11y
 * bus address comes from org.a11y.Bus.GetAddress on the session bus; an application is tied to
 * a process through GetConnectionUnixProcessID on the a11y bus. Once tied, calls to it go peer
 * to peer over the application's own server (atspiPeer.ts) when the kernel confirms that server
 * is the application's, else through the bus. A walk reads the bulk facts from the
 * application's Cache.GetItems and asks per node only what the cache lacks. Every call has a
 * timeout; a node that no longer exists is element_stale. Values and text contents are never read.
 */

const ACCESSIBLE = "org.a11y.atspi.Accessible";
const APPLICATION = "org.a11y.atspi.Application";
const CACHE = "org.a11y.atspi.Cache";
const CACHE_PATH = "/org/a11y/atspi/cache";
const REGISTRY = "org.a11y.atspi.Registry";
const ROOT_PATH = "/org/a11y/atspi/accessible/root";
const NULL_PATH = "/org/a11y/atspi/null";
/** Per D-Bus call; 100..60000 ms, anything else is the default 3000. */
const CALL_TIMEOUT_MS = readSetting(process.env, SETTINGS.atspiCallTimeoutMs);
const COORD_SCREEN = 0;
/** Node handles a session keeps for reuse across walks (the uia store keeps 20000 refs). */
const MAX_NODES = 20_000;
/** Peer links kept at most per worker (the oldest closes first). */
const MAX_PEERS = 32;
/** AtspiScrollType ANYWHERE: the least scrolling that brings the node into view. */
const SCROLL_ANYWHERE = 6;
/** How deep under a list / combo box select_option looks for the option (combo → menu → item). */
const OPTION_DEPTH = 2;

/** A node: where it lives, plus the parent needed for Selection. */
interface Node {
  bus: string;
  path: string;
  parent: Node | null;
}

class StaleError extends Error {}

function isNode(h: A11yHandle): h is Node {
  return (
    typeof h === "object" &&
    h !== null &&
    typeof (h as Node).bus === "string" &&
    typeof (h as Node).path === "string"
  );
}

function asNode(h: A11yHandle): Node {
  if (!isNode(h)) throw uiError("element_stale");
  return h;
}

/** D-Bus error names that mean the object (or its application) is gone. */
function isStaleErrorName(name: string): boolean {
  return (
    name.endsWith(".UnknownObject") ||
    name.endsWith(".UnknownMethod") ||
    name.endsWith(".ServiceUnknown") ||
    name.endsWith(".NameHasNoOwner") ||
    name.endsWith(".NoReply") ||
    name.endsWith(".UnknownInterface")
  );
}

function lateError(): Error {
  return uiError("platform_unavailable", "The accessibility provider did not answer in time.");
}

export interface AtspiOptions {
  /** Talk to applications peer to peer when they offer it (default true). */
  peer?: boolean;
  /** Read a walk's bulk facts from the application's Cache.GetItems (default true). */
  bulk?: boolean;
  /**
   * The screen rects of the window's popups (override-redirect windows of its process, windows
   * transient for it) and of its process's other top-levels, from the X server. With it, a
   * popup root is kept only when its extents lie mostly on a popup: another top-level of the
   * process is a window of its own (its title must pass the policy and be granted by itself).
   */
  popupAreas?: PopupAreas;
}

export type PopupAreas = (window: WindowInfo) => Promise<{ popups: Rect[]; others: Rect[] }>;

/** Whether `extents` lies more on one of `popups` than on any of `others`. */
export function onPopup(extents: Rect | null, areas: { popups: Rect[]; others: Rect[] }): boolean {
  if (extents === null) return false;
  const best = (rs: Rect[]) =>
    rs.reduce((m, r) => {
      const i = intersect(extents, r);
      return Math.max(m, i ? rectArea(i) : 0);
    }, 0);
  const popup = best(areas.popups);
  return popup > 0 && popup > best(areas.others);
}

/**
 * Connection to the a11y bus with bounded calls, plus peer links to the applications it was
 * asked to link: a call goes over the destination's link while that is open, else the bus.
 */
export class AtspiBus {
  private readonly bus: dbus.MessageBus;
  /** Bus name → its peer link, or null when the application offers none we accept. */
  private readonly peers = new Map<string, Promise<PeerLink | null>>();

  private constructor(bus: dbus.MessageBus) {
    this.bus = bus;
    // A lost bus surfaces as failed calls; the error event must not become an uncaught exception.
    this.bus.on("error", () => {});
  }

  static async connect(): Promise<AtspiBus> {
    if (!process.env.DBUS_SESSION_BUS_ADDRESS) {
      throw uiError("platform_unavailable", "No D-Bus session bus is available.");
    }
    let session: dbus.MessageBus | null = null;
    try {
      session = dbus.sessionBus();
      session.on("error", () => {});
      const reply = await withTimeout(
        session.call(
          new dbus.Message({
            destination: "org.a11y.Bus",
            path: "/org/a11y/bus",
            interface: "org.a11y.Bus",
            member: "GetAddress",
          }),
        ),
      );
      const address = reply?.body[0];
      if (typeof address !== "string" || address === "") throw new Error("no address");
      return new AtspiBus(dbus.sessionBus({ busAddress: address }));
    } catch (e) {
      if (isUiError(e)) throw e;
      throw uiError("platform_unavailable", "The accessibility bus is unavailable.");
    } finally {
      session?.disconnect();
    }
  }

  /**
   * Opens a peer link to the application `busName` (process `pid`, as the bus daemon says),
   * once; an application that offers none, or one the kernel does not confirm, stays on the bus.
   */
  linkPeer(busName: string, pid: number): Promise<void> {
    let link = this.peers.get(busName);
    if (!link) {
      while (this.peers.size >= MAX_PEERS) {
        const [oldest, evicted] = this.peers.entries().next().value as [string, Promise<PeerLink | null>];
        this.peers.delete(oldest);
        void evicted.then((l) => l?.close());
      }
      link = this.openPeer(busName, pid);
      this.peers.set(busName, link);
    }
    return link.then(() => undefined);
  }

  private async openPeer(busName: string, pid: number): Promise<PeerLink | null> {
    try {
      const body = await this.viaBus(busName, ROOT_PATH, APPLICATION, "GetApplicationBusAddress");
      const address = body[0];
      if (typeof address !== "string") return null;
      const path = verifiedPeerPath(address, pid);
      if (path === null) return null;
      const link = await PeerLink.open(path, CALL_TIMEOUT_MS, () => {
        // A closed link is forgotten: later calls go through the bus.
        if (this.peers.get(busName) === current) this.peers.delete(busName);
      });
      const current = Promise.resolve(link);
      this.peers.set(busName, current);
      return link;
    } catch {
      return null;
    }
  }

  async call(
    destination: string,
    path: string,
    iface: string,
    member: string,
    signature?: string,
    body?: unknown[],
  ): Promise<unknown[]> {
    const link = this.peers.get(destination);
    const peer = link ? await link : null;
    if (peer !== null && !peer.closed) {
      let reply: PeerReply | null = null;
      try {
        reply = await peer.call(path, iface, member, signature, body, CALL_TIMEOUT_MS);
      } catch (e) {
        if (e instanceof PeerTimeout) throw lateError();
        // The link closed under the call: the bus still knows the application (or says it is gone).
      }
      if (reply !== null) {
        if (reply.ok) return reply.body;
        if (isStaleErrorName(reply.errorName)) throw new StaleError();
        throw uiError("platform_unavailable", "An accessibility call failed.");
      }
    }
    return this.viaBus(destination, path, iface, member, signature, body);
  }

  private async viaBus(
    destination: string,
    path: string,
    iface: string,
    member: string,
    signature?: string,
    body?: unknown[],
  ): Promise<unknown[]> {
    const msg = new dbus.Message({ destination, path, interface: iface, member, signature, body });
    try {
      const reply = await withTimeout(this.bus.call(msg));
      return reply?.body ?? [];
    } catch (e) {
      if (isUiError(e)) throw e;
      if (e instanceof dbus.DBusError && isStaleErrorName(e.type)) throw new StaleError();
      throw uiError("platform_unavailable", "An accessibility call failed.");
    }
  }

  async getProperty(dest: string, path: string, iface: string, prop: string): Promise<unknown> {
    const body = await this.call(dest, path, "org.freedesktop.DBus.Properties", "Get", "ss", [iface, prop]);
    const v = body[0];
    return v instanceof dbus.Variant ? v.value : v;
  }

  async pidOf(busName: string): Promise<number | null> {
    try {
      const body = await this.viaBus(
        "org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus",
        "GetConnectionUnixProcessID",
        "s",
        [busName],
      );
      return typeof body[0] === "number" ? body[0] : null;
    } catch {
      return null;
    }
  }

  disconnect(): void {
    for (const link of this.peers.values()) void link.then((l) => l?.close());
    this.peers.clear();
    this.bus.disconnect();
  }
}

function withTimeout<T>(p: Promise<T>, ms = CALL_TIMEOUT_MS): Promise<T> {
  return rejectAfter(p, ms, lateError);
}

function refs(body: unknown[]): Array<{ bus: string; path: string }> {
  const list = body[0];
  if (!Array.isArray(list)) return [];
  const out: Array<{ bus: string; path: string }> = [];
  for (const item of list) {
    if (Array.isArray(item) && typeof item[0] === "string" && typeof item[1] === "string") {
      if (item[1] !== NULL_PATH) out.push({ bus: item[0], path: item[1] });
    }
  }
  return out;
}

function stringsOf(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : [];
}

function statesOf(v: unknown): number[] {
  return Array.isArray(v) ? v.map((x) => (typeof x === "number" ? x : 0)) : [];
}

/** Settles a call to its value or null (a missing interface is not an error for facts). */
async function optional<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof StaleError) return null;
    if (isUiError(e) && e.code === "platform_unavailable") return null;
    throw e;
  }
}

function staleToUi(e: unknown): never {
  if (e instanceof StaleError) throw uiError("element_stale");
  if (isUiError(e)) throw e;
  throw uiError("platform_unavailable", "An accessibility call failed.");
}

/** One object of an application's Cache.GetItems answer. */
interface CachedItem {
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
interface CacheSnapshot {
  items: Map<string, CachedItem>;
  childrenOf: Map<string, CachedItem[]>;
}

/**
 * Cache.GetItems → path → item. Two signatures exist: a((so)(so)(so)iiassusau) (index in parent
 * and child count; at-spi2-atk ≥ 2.34) and a((so)(so)(so)a(so)assusau) (the children; Qt and
 * older bridges). Items of another shape are skipped (those nodes are then asked per node).
 */
function parseCache(body: unknown[]): CacheSnapshot {
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
function callsOf(it: CachedItem): CallKind[] {
  const out: CallKind[] = [];
  if (it.childCount !== 0) out.push("children");
  if (it.interfaces.includes(COMPONENT)) out.push("extents");
  if (it.interfaces.includes(ACTION)) out.push("actions");
  return out;
}

class AtspiSession implements A11ySession {
  private readonly bus: AtspiBus;
  private readonly rootNode: Node;
  private readonly bulk: boolean;
  private readonly ifaceCache = new WeakMap<Node, Promise<string[]>>();
  /**
   * One handle per live object (bus, path) under the same parent, so walk after walk hands the
   * session store the same handles, and so the same refs: refs do not pile up per inspect.
   */
  private readonly nodes = new Map<string, Node>();
  /** Role number → GetRoleName, per application: the cache carries numbers, facts carry names. */
  private readonly roleNames = new Map<string, Promise<string>>();
  private disposed = false;

  constructor(
    bus: AtspiBus,
    root: Node,
    bulk: boolean,
    /** The instance's application objects on the a11y bus (where its popups live). */
    private readonly apps: readonly { bus: string; path: string }[] = [],
    /** The granted window and where its popups are, to tell popups from other top-levels. */
    private readonly popupCheck: { window: WindowInfo; areas: PopupAreas } | null = null,
  ) {
    this.bus = bus;
    this.rootNode = root;
    this.bulk = bulk;
  }

  private check(): void {
    if (this.disposed) throw uiError("element_stale");
  }

  async root(): Promise<A11yHandle> {
    this.check();
    return this.rootNode;
  }

  private interfaces(n: Node): Promise<string[]> {
    // An object's interfaces do not change while it lives: asked once per handle (a parent's
    // list serves all its children's selection_item checks).
    let p = this.ifaceCache.get(n);
    if (!p) {
      p = this.bus.call(n.bus, n.path, ACCESSIBLE, "GetInterfaces").then((body) => stringsOf(body[0]));
      this.ifaceCache.set(n, p);
      // A failed lookup is not kept: the next call asks again.
      p.catch(() => this.ifaceCache.delete(n));
    }
    return p;
  }

  private actionsCall(n: { bus: string; path: string }): Promise<unknown[]> {
    return this.bus.call(n.bus, n.path, ACTION, "GetActions");
  }

  private async actionNames(n: Node): Promise<string[]> {
    return actionNamesOf(await this.actionsCall(n));
  }

  private extentsCall(n: { bus: string; path: string }): Promise<unknown[]> {
    return this.bus.call(n.bus, n.path, COMPONENT, "GetExtents", "u", [COORD_SCREEN]);
  }

  private childrenCall(n: { bus: string; path: string }): Promise<unknown[]> {
    return this.bus.call(n.bus, n.path, ACCESSIBLE, "GetChildren");
  }

  private async states(n: Node): Promise<number[]> {
    return statesOf((await this.bus.call(n.bus, n.path, ACCESSIBLE, "GetState"))[0]);
  }

  private async roleName(n: Node): Promise<string> {
    const body = await this.bus.call(n.bus, n.path, ACCESSIBLE, "GetRoleName");
    return typeof body[0] === "string" ? body[0].toLowerCase() : "";
  }

  private async extents(n: Node): Promise<Rect | null> {
    const body = await optional(this.extentsCall(n));
    return body ? extentsRect(body) : null;
  }

  /** The name of role number `role` in n's application, asked of the first node that has it. */
  private roleNameOf(n: Node, role: number): Promise<string> {
    const key = `${n.bus}\u0000${role}`;
    let p = this.roleNames.get(key);
    if (!p) {
      p = this.roleName(n);
      this.roleNames.set(key, p);
      p.catch(() => this.roleNames.delete(key));
    }
    return p;
  }

  /** Everything about a node by its own calls (what the cache lacks, or no cache at all). */
  private async input(n: Node): Promise<AtspiFactsInput> {
    const [roleName, name, states, interfaces, rect, parentInterfaces] = await Promise.all([
      this.roleName(n),
      this.bus.getProperty(n.bus, n.path, ACCESSIBLE, "Name"),
      this.states(n),
      this.interfaces(n),
      this.extents(n),
      n.parent ? optional(this.interfaces(n.parent)) : Promise.resolve(null),
    ]);
    const actions = interfaces.includes(ACTION) ? ((await optional(this.actionNames(n))) ?? []) : [];
    return { roleName, name, states, interfaces, rect, actions, parentInterfaces };
  }

  /**
   * A cached node: only its extents, actions (Action nodes) and role name (once per role) are
   * asked, or taken from what `ahead` asked already.
   */
  private async cachedInput(
    n: Node,
    it: CachedItem,
    items: Map<string, CachedItem>,
    ahead: Prefetch | null,
  ): Promise<AtspiFactsInput> {
    const interfaces = it.interfaces;
    const parentItem = n.parent && n.parent.bus === it.bus ? items.get(n.parent.path) : undefined;
    const [roleName, rect, actions, parentInterfaces] = await Promise.all([
      this.roleNameOf(n, it.role),
      interfaces.includes(COMPONENT)
        ? optional(ahead?.take("extents", n.path) ?? this.extentsCall(n)).then((b) =>
            b ? extentsRect(b) : null,
          )
        : Promise.resolve(null),
      interfaces.includes(ACTION)
        ? optional(ahead?.take("actions", n.path) ?? this.actionsCall(n)).then((b) =>
            b ? actionNamesOf(b) : null,
          )
        : Promise.resolve(null),
      n.parent ? (parentItem?.interfaces ?? optional(this.interfaces(n.parent))) : Promise.resolve(null),
    ]);
    return {
      roleName,
      name: it.name,
      states: it.states,
      interfaces,
      rect,
      actions: actions ?? [],
      parentInterfaces,
    };
  }

  private finish(input: AtspiFactsInput): A11yNodeFacts {
    if (hasState(input.states, ST_DEFUNCT)) throw uiError("element_stale");
    return atspiFacts(input);
  }

  async facts(h: A11yHandle): Promise<A11yNodeFacts> {
    this.check();
    const n = asNode(h);
    try {
      return this.finish(await this.input(n));
    } catch (e) {
      return staleToUi(e);
    }
  }

  async children(h: A11yHandle): Promise<A11yHandle[]> {
    this.check();
    return this.childrenFrom(asNode(h), null);
  }

  private async childrenFrom(n: Node, ahead: Prefetch | null): Promise<A11yHandle[]> {
    try {
      const body = await (ahead?.take("children", n.path) ?? this.childrenCall(n));
      return refs(body).map((r) => this.node(r.bus, r.path, n));
    } catch (e) {
      return staleToUi(e);
    }
  }

  private node(bus: string, path: string, parent: Node): Node {
    const key = `${bus}\u0000${path}`;
    const known = this.nodes.get(key);
    if (known !== undefined && known.parent === parent) return known;
    const n: Node = { bus, path, parent };
    this.nodes.delete(key);
    this.nodes.set(key, n);
    // Bounded like the store's refs: the oldest handles are forgotten first (a later walk then
    // makes a new one, i.e. a new ref).
    while (this.nodes.size > MAX_NODES) {
      const oldest = this.nodes.keys().next();
      if (oldest.done) break;
      this.nodes.delete(oldest.value);
    }
    return n;
  }

  async walkSource(h: A11yHandle, limits: WalkLimits): Promise<A11yNodeSource> {
    this.check();
    const root = asNode(h);
    if (!this.bulk) return this;
    let cache: CacheSnapshot;
    try {
      cache = parseCache(await this.bus.call(root.bus, CACHE_PATH, CACHE, "GetItems"));
    } catch (e) {
      // An application without the cache (or one that failed it) is walked node by node.
      if (e instanceof StaleError || (isUiError(e) && e.code === "platform_unavailable")) return this;
      throw e;
    }
    const { items, childrenOf } = cache;
    if (items.size === 0) return this;
    const cached = (n: Node): CachedItem | undefined => {
      const it = items.get(n.path);
      return it !== undefined && it.bus === n.bus ? it : undefined;
    };
    const ahead = new Prefetch(
      {
        root: root.path,
        node: (path) => {
          const it = items.get(path);
          return it !== undefined && it.bus === root.bus ? it : undefined;
        },
        childrenOf: (path) => childrenOf.get(path) ?? [],
        needs: (node) => callsOf(node as CachedItem),
        maxNodes: limits.maxNodes,
        maxDepth: limits.maxDepth,
      },
      (kind, path) => {
        const n = { bus: root.bus, path };
        if (kind === "extents") return this.extentsCall(n);
        if (kind === "actions") return this.actionsCall(n);
        return this.childrenCall(n);
      },
    );
    return {
      facts: async (node: A11yHandle): Promise<A11yNodeFacts> => {
        this.check();
        const n = asNode(node);
        const it = cached(n);
        if (it === undefined) return this.facts(n);
        try {
          return this.finish(await this.cachedInput(n, it, items, ahead));
        } catch (e) {
          return staleToUi(e);
        }
      },
      children: async (node: A11yHandle): Promise<A11yHandle[]> => {
        this.check();
        const n = asNode(node);
        // Only "no children" is taken from the cache: a parent's index_in_parent order can
        // differ from GetChildren's (GTK window children), and the walk's order must not.
        if (cached(n)?.childCount === 0) return [];
        return this.childrenFrom(n, ahead);
      },
      release: () => ahead.stop(),
    };
  }

  private async doNamedAction(n: Node, names: string[]): Promise<void> {
    const acts = await this.actionNames(n).catch((e: unknown) => {
      if (e instanceof StaleError) throw e;
      return [] as string[];
    });
    for (const want of names) {
      const idx = acts.indexOf(want);
      if (idx >= 0) {
        await this.bus.call(n.bus, n.path, ACTION, "DoAction", "i", [idx]);
        return;
      }
    }
    throw uiError("pattern_not_supported");
  }

  async act(h: A11yHandle, action: SemanticAction, value?: string): Promise<void> {
    this.check();
    const n = asNode(h);
    try {
      const states = await this.states(n);
      if (hasState(states, ST_DEFUNCT)) throw uiError("element_stale");
      const ifaces = await this.interfaces(n);
      switch (action) {
        case "invoke":
          if (!ifaces.includes(ACTION)) throw uiError("pattern_not_supported");
          return await this.doNamedAction(n, INVOKE_ACTIONS);
        case "toggle": {
          if (!ifaces.includes(ACTION)) throw uiError("pattern_not_supported");
          const role = await this.roleName(n);
          return await this.doNamedAction(
            n,
            CHECKABLE_ROLES.has(role) ? ["toggle", "click"] : TOGGLE_ACTIONS,
          );
        }
        case "expand":
        case "collapse": {
          // A node that cannot expand (a leaf row) answers so, never "ok" with no effect.
          if (!ifaces.includes(ACTION) || !hasState(states, ST_EXPANDABLE))
            throw uiError("pattern_not_supported", "The element cannot expand or collapse.");
          const expanded = hasState(states, ST_EXPANDED);
          const acts = await this.actionNames(n);
          const direct = action === "expand" ? "expand" : "collapse";
          if (acts.includes(direct)) return await this.doNamedAction(n, [direct]);
          if (!acts.some((a) => EXPAND_ACTIONS.includes(a))) throw uiError("pattern_not_supported");
          // A single "expand or contract" action toggles: only run it when it changes the state.
          if ((action === "expand") === expanded) return;
          return await this.doNamedAction(n, ["expand or contract", "expand or collapse"]);
        }
        case "select": {
          const parent = n.parent;
          if (!parent || !hasState(states, ST_SELECTABLE)) throw uiError("pattern_not_supported");
          const pIfaces = await this.interfaces(parent);
          if (!pIfaces.includes(SELECTION)) throw uiError("pattern_not_supported");
          const idxBody = await this.bus.call(n.bus, n.path, ACCESSIBLE, "GetIndexInParent");
          const idx = idxBody[0];
          if (typeof idx !== "number" || idx < 0) throw uiError("element_stale");
          const ok = await this.bus.call(parent.bus, parent.path, SELECTION, "SelectChild", "i", [idx]);
          if (ok[0] !== true) throw uiError("pattern_not_supported");
          return;
        }
        case "scroll_into_view": {
          if (!ifaces.includes(COMPONENT)) throw uiError("pattern_not_supported");
          const ok = await this.bus.call(n.bus, n.path, COMPONENT, "ScrollTo", "u", [SCROLL_ANYWHERE]);
          if (ok[0] === true) return;
          // GTK 3 refuses ScrollTo for tree view cells: its scroll bar, as a person would.
          return await scrollCellIntoView(this.bus, n);
        }
        case "select_option":
          if (!ifaces.includes(SELECTION)) throw uiError("pattern_not_supported");
          return await this.selectOption(n, value ?? "");
        case "set_value": {
          if (!ifaces.includes(EDITABLE_TEXT)) throw uiError("pattern_not_supported");
          const ok = await this.bus.call(n.bus, n.path, EDITABLE_TEXT, "SetTextContents", "s", [value ?? ""]);
          if (ok[0] !== true) throw uiError("pattern_not_supported", "The element refused the value.");
          return;
        }
        default:
          throw uiError("pattern_not_supported");
      }
    } catch (e) {
      return staleToUi(e);
    }
  }

  /**
   * Selection.SelectChild on the container the agent named, with the index of the option named
   * `name` (case aside) among its siblings: a list's own children, or a combo box's menu items
   * (GTK's combo box selects its i-th menu item; selecting inside the menu would only highlight).
   */
  private async selectOption(n: Node, name: string): Promise<void> {
    const want = name.trim().toLowerCase();
    let level: Node[] = [n];
    for (let d = 0; d < OPTION_DEPTH && level.length > 0; d += 1) {
      const next: Node[] = [];
      for (const parent of level) {
        const kids = refs(await this.bus.call(parent.bus, parent.path, ACCESSIBLE, "GetChildren"));
        const names = await Promise.all(
          kids.map((k) => optional(this.bus.getProperty(k.bus, k.path, ACCESSIBLE, "Name"))),
        );
        const idx = names.findIndex((v) => typeof v === "string" && v.trim().toLowerCase() === want);
        if (idx >= 0) {
          const ok = await this.bus.call(n.bus, n.path, SELECTION, "SelectChild", "i", [idx]);
          if (ok[0] !== true) throw uiError("pattern_not_supported", "The option cannot be selected.");
          return;
        }
        for (const k of kids) next.push({ bus: k.bus, path: k.path, parent });
      }
      level = next;
    }
    throw uiError("target_not_found", "No option has that name.");
  }

  /** An AT-SPI object is its (bus name, object path): the same node for every handle. */
  identity(h: A11yHandle): string | null {
    return isNode(h) ? `${h.bus}\u0000${h.path}` : null;
  }

  /** The application's other showing top-level windows (menus, popups, its dialogs). */
  async popupRoots(): Promise<A11yHandle[]> {
    this.check();
    const out: Node[] = [];
    for (const app of this.apps) {
      let kids: Array<{ bus: string; path: string }>;
      try {
        kids = refs(await this.bus.call(app.bus, app.path, ACCESSIBLE, "GetChildren"));
      } catch {
        continue; // an application that went away has no popups
      }
      const others = kids.filter((k) => !(k.bus === this.rootNode.bus && k.path === this.rootNode.path));
      const states = await Promise.all(others.map((k) => optional(this.states({ ...k, parent: null }))));
      others.forEach((k, i) => {
        const st = states[i];
        if (
          st &&
          hasState(st, ATSPI_STATE.SHOWING) &&
          hasState(st, ATSPI_STATE.VISIBLE) &&
          !hasState(st, ST_DEFUNCT)
        )
          out.push({ bus: k.bus, path: k.path, parent: null });
      });
    }
    if (this.popupCheck === null || out.length === 0) return out;
    const [areas, extents] = await Promise.all([
      this.popupCheck.areas(this.popupCheck.window),
      Promise.all(
        out.map((n) =>
          this.extentsCall(n)
            .then(extentsRect)
            .catch(() => null),
        ),
      ),
    ]);
    return out.filter((_, i) => onPopup(extents[i] ?? null, areas));
  }

  async alive(h: A11yHandle): Promise<boolean> {
    if (this.disposed || !isNode(h)) return false;
    try {
      const states = await this.states(h);
      return states.length > 0 && !hasState(states, ST_DEFUNCT);
    } catch {
      return false;
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.nodes.clear();
  }
}

export class X11Accessibility implements AccessibilityPort {
  private busPromise: Promise<AtspiBus> | null = null;
  private readonly peer: boolean;
  private readonly bulk: boolean;

  private readonly popupAreas: PopupAreas | null;

  constructor(opts: AtspiOptions = {}) {
    this.peer = opts.peer ?? true;
    this.bulk = opts.bulk ?? true;
    this.popupAreas = opts.popupAreas ?? null;
  }

  private bus(): Promise<AtspiBus> {
    if (!this.busPromise) {
      this.busPromise = AtspiBus.connect();
      this.busPromise.catch(() => {
        this.busPromise = null;
      });
    }
    return this.busPromise;
  }

  async openSession(window: WindowInfo): Promise<A11ySession> {
    if (!window.instance) throw uiError("target_changed");
    const pid = window.instance.pid;
    const bus = await this.bus();
    let apps: Array<{ bus: string; path: string }>;
    try {
      apps = refs(await bus.call(REGISTRY, ROOT_PATH, ACCESSIBLE, "GetChildren"));
    } catch (e) {
      return staleToUi(e);
    }
    const pids = await Promise.all(apps.map((a) => bus.pidOf(a.bus)));
    const mine = apps.filter((_, i) => pids[i] === pid);
    if (mine.length === 0)
      throw uiError("target_not_found", "The application exposes no accessibility tree.");
    if (this.peer) await Promise.all(mine.map((a) => bus.linkPeer(a.bus, pid)));
    const frames: Node[] = [];
    for (const app of mine) {
      const appNode: Node = { bus: app.bus, path: app.path, parent: null };
      try {
        const kids = refs(await bus.call(app.bus, app.path, ACCESSIBLE, "GetChildren"));
        for (const k of kids) frames.push({ bus: k.bus, path: k.path, parent: appNode });
      } catch {
        // An application that went away meanwhile has no frames.
      }
    }
    const extents = await Promise.all(
      frames.map((f) =>
        bus
          .call(f.bus, f.path, COMPONENT, "GetExtents", "u", [COORD_SCREEN])
          .then(extentsRect)
          .catch(() => null),
      ),
    );
    // Prefer exact extents; then the largest overlap; names are never trusted.
    let best = -1;
    let bestScore = 0;
    extents.forEach((r, i) => {
      if (!r) return;
      const inter = intersect(r, window.rect);
      const score = sameRect(r, window.rect) ? Number.POSITIVE_INFINITY : inter ? rectArea(inter) : 0;
      if (score > bestScore) {
        bestScore = score;
        best = i;
      }
    });
    if (best < 0 && frames.length === 1) best = 0;
    const frame = frames[best];
    if (!frame) throw uiError("target_not_found", "No accessibility tree matches this window.");
    return new AtspiSession(
      bus,
      { bus: frame.bus, path: frame.path, parent: null },
      this.bulk,
      mine,
      this.popupAreas ? { window, areas: this.popupAreas } : null,
    );
  }

  dispose(): void {
    const p = this.busPromise;
    this.busPromise = null;
    p?.then((b) => b.disconnect()).catch(() => {});
  }
}
