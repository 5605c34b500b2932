import { isUiError, uiError } from "../../shared/errors.js";
import { intersect, type Rect, rectArea } from "../../shared/geometry.js";
import type {
  A11yHandle,
  A11yNodeFacts,
  A11yNodeSource,
  A11ySession,
  SemanticAction,
  WalkLimits,
  WalkShown,
  WindowInfo,
} from "../../shared/platform.js";
import {
  ACCESSIBLE,
  type AtspiBus,
  CACHE,
  CACHE_PATH,
  COORD_SCREEN,
  optional,
  propertiesOf,
  refs,
  StaleError,
  staleToUi,
  statesOf,
  stringsOf,
} from "./atspiBus.js";
import { type CachedItem, type CacheSnapshot, callsOf, parseCache } from "./atspiCache.js";
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
  needsExtents,
  SELECTION,
  ST_DEFUNCT,
  ST_EXPANDABLE,
  ST_EXPANDED,
  ST_SELECTABLE,
  ST_SHOWING,
  TOGGLE_ACTIONS,
} from "./atspiFacts.js";
import { type CallKind, keyOf, PREFETCH_WINDOW, Prefetch, type SentCall } from "./atspiPrefetch.js";
import { scrollCellIntoView } from "./scrollInto.js";
import { ATSPI_STATE } from "./states.js";

/**
 * One accessibility session on one window's tree: walks (bulk facts from the cache, the rest
 * asked per node), element facts and the semantic actions. Values and text contents are never read.
 */

/** Node handles a session keeps for reuse across walks (the uia store keeps 20000 refs). */
const MAX_NODES = 20_000;
/** Walks (root and limits) whose calls a session keeps to send again (the outline and the full tree). */
const KEPT_WALKS = 4;
/** AtspiScrollType ANYWHERE: the least scrolling that brings the node into view. */
const SCROLL_ANYWHERE = 6;
/** How deep under a list / combo box select_option looks for the option (combo → menu → item). */
const OPTION_DEPTH = 2;

const PROPERTIES = "org.freedesktop.DBus.Properties";

/** A node: where it lives, plus the parent needed for Selection. */
export interface Node {
  bus: string;
  path: string;
  parent: Node | null;
}

/**
 * How a walk makes one of its own calls of a node (`call`): at once, or through the prefetch,
 * which may hold the same call sent early behind GetItems (Prefetch.own).
 */
type Ask = (kind: CallKind, n: Node, call: () => Promise<unknown[]>) => Promise<unknown[]>;

const direct: Ask = (_kind, _n, call) => call();

export function isNode(h: A11yHandle): h is Node {
  return (
    typeof h === "object" &&
    h !== null &&
    typeof (h as Node).bus === "string" &&
    typeof (h as Node).path === "string"
  );
}

export function asNode(h: A11yHandle): Node {
  if (!isNode(h)) throw uiError("element_stale");
  return h;
}

/** Where the X server shows the granted window's popups and its process's other top-levels. */
export type PopupAreas = (
  window: WindowInfo,
  shownBefore: ReadonlySet<string>,
) => Promise<{ popups: Rect[]; others: Rect[] }>;

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

export class AtspiSession implements A11ySession {
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
  /**
   * The calls the last walk of a root with given limits asked ahead: the next walk of the same
   * root with the same limits sends them again behind its GetItems (atspiPrefetch.ts). A few
   * kinds of walk are kept, the oldest forgotten first.
   */
  private readonly lastWalks = new Map<string, readonly SentCall[]>();
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

  private async actionNames(n: Node, ask: Ask = direct): Promise<string[]> {
    return actionNamesOf(await ask("actions", n, () => this.actionsCall(n)));
  }

  private extentsCall(n: { bus: string; path: string }): Promise<unknown[]> {
    return this.bus.call(n.bus, n.path, COMPONENT, "GetExtents", "u", [COORD_SCREEN]);
  }

  private childrenCall(n: { bus: string; path: string }): Promise<unknown[]> {
    return this.bus.call(n.bus, n.path, ACCESSIBLE, "GetChildren");
  }

  /**
   * A node's Accessible properties in one call (Properties.GetAll): a walk keeps its Name and
   * ChildCount, nothing else. Null when the app does not answer GetAll (the walk then asks Name
   * and GetChildren as before).
   */
  private accessibleProps(n: Node, ask: Ask = direct): Promise<Map<string, unknown> | null> {
    return ask("props", n, () => this.propsCall(n)).then(propertiesOf, () => null);
  }

  private propsCall(n: { bus: string; path: string }): Promise<unknown[]> {
    return this.bus.call(n.bus, n.path, PROPERTIES, "GetAll", "s", [ACCESSIBLE]);
  }

  private stateCall(n: { bus: string; path: string }): Promise<unknown[]> {
    return this.bus.call(n.bus, n.path, ACCESSIBLE, "GetState");
  }

  private roleNameCall(n: { bus: string; path: string }): Promise<unknown[]> {
    return this.bus.call(n.bus, n.path, ACCESSIBLE, "GetRoleName");
  }

  private async states(n: Node, ask: Ask = direct): Promise<number[]> {
    return statesOf((await ask("state", n, () => this.stateCall(n)))[0]);
  }

  private async roleName(n: Node, ask: Ask = direct): Promise<string> {
    const body = await ask("role", n, () => this.roleNameCall(n));
    return typeof body[0] === "string" ? body[0].toLowerCase() : "";
  }

  private async extents(n: Node, ask: Ask = direct): Promise<Rect | null> {
    const body = await optional(ask("extents", n, () => this.extentsCall(n)));
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

  /**
   * Everything about a node by its own calls (what the cache lacks, or no cache at all); the
   * action names only `withActions` (they serve the patterns alone).
   */
  private async input(
    n: Node,
    withActions = true,
    props: Promise<Map<string, unknown> | null> | null = null,
    parentHidden = false,
    ask: Ask = direct,
  ): Promise<AtspiFactsInput> {
    // The actions wait only for the interfaces (known from an earlier walk, usually), not for
    // the other answers: no second round trip after them.
    const ifaces = this.interfaces(n);
    // The extents are asked beside the states, not after them: chaining them on the states'
    // answer would add a round trip to every node read this way (walks without the cache,
    // GTK's uncached tree cells, element facts) to save one call on hidden nodes, whose answer
    // atspiFacts then drops (a node the app does not show has no rect, as in the cached path).
    // A node whose parent is known not SHOWING is not shown either (SHOWING means the object
    // and all its ancestors are shown): its extents are not asked.
    const [roleName, name, states, interfaces, rect, parentInterfaces, actions] = await Promise.all([
      this.roleName(n, ask),
      props === null
        ? this.bus.getProperty(n.bus, n.path, ACCESSIBLE, "Name")
        : props.then((p) =>
            p?.has("Name") ? p.get("Name") : this.bus.getProperty(n.bus, n.path, ACCESSIBLE, "Name"),
          ),
      this.states(n, ask),
      ifaces,
      parentHidden ? null : this.extents(n, ask),
      n.parent ? optional(this.interfaces(n.parent)) : Promise.resolve(null),
      ifaces.then(
        async (i) =>
          withActions && i.includes(ACTION) ? ((await optional(this.actionNames(n, ask))) ?? []) : [],
        () => [] as string[],
      ),
    ]);
    return { roleName, name, states, interfaces, rect, actions, parentInterfaces };
  }

  /**
   * A cached node: only its extents (shown Component nodes; without bounds, scrolled items
   * only), actions (Action nodes, with patterns) and role name (once per role) are asked, or
   * taken from what `ahead` asked already.
   */
  private cachedInput(
    n: Node,
    it: CachedItem,
    items: Map<string, CachedItem>,
    ahead: Prefetch | null,
    needs: WalkShown,
  ): Promise<AtspiFactsInput> {
    const interfaces = it.interfaces;
    const parentItem = n.parent && n.parent.bus === it.bus ? items.get(n.parent.path) : undefined;
    // One Promise.all and one callback per node (no async frame, no callback per part): the
    // parts are mostly known already, and a walk builds this for every cached node.
    // A node the cached states say is not shown has no rect: its extents are never asked.
    const extents = needsExtents(interfaces, it.states, it.role, needs.bounds)
      ? optional(ahead?.take("extents", n.path) ?? this.extentsCall(n))
      : null;
    const actions =
      needs.patterns && interfaces.includes(ACTION)
        ? optional(ahead?.take("actions", n.path) ?? this.actionsCall(n))
        : null;
    const parentInterfaces = n.parent
      ? (parentItem?.interfaces ?? optional(this.interfaces(n.parent)))
      : null;
    return Promise.all([this.roleNameOf(n, it.role), extents, actions, parentInterfaces]).then(
      ([roleName, e, a, parentIfaces]) => ({
        roleName,
        name: it.name,
        states: it.states,
        interfaces,
        rect: e ? extentsRect(e) : null,
        actions: a ? actionNamesOf(a) : [],
        parentInterfaces: parentIfaces,
      }),
    );
  }

  private finish(input: AtspiFactsInput): A11yNodeFacts {
    if (hasState(input.states, ST_DEFUNCT)) throw uiError("element_stale");
    return atspiFacts(input);
  }

  async facts(h: A11yHandle): Promise<A11yNodeFacts> {
    return this.factsOf(h, true);
  }

  private async factsOf(
    h: A11yHandle,
    actions: boolean,
    props: Promise<Map<string, unknown> | null> | null = null,
    parentHidden = false,
    ask: Ask = direct,
  ): Promise<A11yNodeFacts> {
    this.check();
    const n = asNode(h);
    try {
      return this.finish(await this.input(n, actions, props, parentHidden, ask));
    } catch (e) {
      return staleToUi(e);
    }
  }

  async children(h: A11yHandle): Promise<A11yHandle[]> {
    this.check();
    return this.childrenFrom(asNode(h), null);
  }

  private async childrenFrom(n: Node, ahead: Prefetch | null, ask: Ask = direct): Promise<A11yHandle[]> {
    try {
      const body = await (ahead?.take("children", n.path) ?? ask("children", n, () => this.childrenCall(n)));
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

  private aheadCall(root: Node, kind: CallKind, path: string): Promise<unknown[]> {
    const n = { bus: root.bus, path };
    switch (kind) {
      case "extents":
        return this.extentsCall(n);
      case "actions":
        return this.actionsCall(n);
      case "props":
        return this.propsCall(n);
      case "role":
        return this.roleNameCall(n);
      case "state":
        return this.stateCall(n);
      default:
        return this.childrenCall(n);
    }
  }

  /**
   * The last walk's calls sent again, when it walked the same root with the same limits; each
   * failure is kept for whoever takes the answer (none is left unhandled).
   */
  private seed(root: Node, key: string): Map<string, Promise<unknown[]>> {
    const out = new Map<string, Promise<unknown[]>>();
    const last = this.lastWalks.get(key);
    if (last === undefined) return out;
    for (const { kind, path } of last.slice(0, PREFETCH_WINDOW)) {
      const p = this.aheadCall(root, kind, path);
      p.catch(() => {});
      out.set(keyOf(kind, path), p);
    }
    return out;
  }

  private keepWalk(key: string, calls: readonly SentCall[]): void {
    this.lastWalks.delete(key);
    this.lastWalks.set(key, calls);
    while (this.lastWalks.size > KEPT_WALKS) {
      const oldest = this.lastWalks.keys().next();
      if (oldest.done) break;
      this.lastWalks.delete(oldest.value);
    }
  }

  /** The calls of one walk asked ahead from the cache's prediction (atspiPrefetch.ts). */
  private prefetch(
    root: Node,
    cache: CacheSnapshot,
    limits: WalkLimits,
    needs: WalkShown,
    seeded: Map<string, Promise<unknown[]>>,
  ): Prefetch {
    const { items, childrenOf, ordered } = cache;
    return new Prefetch(
      {
        root: root.path,
        node: (path) => {
          const it = items.get(path);
          return it !== undefined && it.bus === root.bus ? it : undefined;
        },
        childrenOf: (path) => childrenOf.get(path) ?? [],
        needs: (node) => callsOf(node as CachedItem, ordered.has(node.path), needs),
        childPaths: (body) => refs(body).flatMap((r) => (r.bus === root.bus ? [r.path] : [])),
        maxNodes: limits.maxNodes,
        maxDepth: limits.maxDepth,
      },
      (kind, path) => this.aheadCall(root, kind, path),
      PREFETCH_WINDOW,
      seeded,
    );
  }

  /**
   * How one walk reads the nodes the cache lacks (GTK's tree view cells), node by node.
   * Their name and child count come in one GetAll, asked once for both their facts and their
   * children; a child count of 0 is no GetChildren, as for a cached leaf (GTK's and Qt's
   * bridges answer GetChildren from that same count). SHOWING means the object and all its
   * ancestors are shown: a node under a cached parent whose states lack SHOWING is not shown,
   * nor is one under such a node (a container cell's cells); their extents are not asked (no
   * rect by the rule). On gtk3-widget-factory and gtk3-demo no child of a node that is not
   * SHOWING reports SHOWING (test/x11/walk-stream.test.ts). Their calls go through `ask`: the
   * walk's prefetch keeps them for the next walk, which sends them behind its GetItems.
   */
  private uncachedReader(cached: (n: Node) => CachedItem | undefined, withActions: boolean, ask: Ask) {
    const props = new Map<string, Promise<Map<string, unknown> | null>>();
    const hidden = new Set<Node>();
    const propsOf = (n: Node): Promise<Map<string, unknown> | null> => {
      const key = `${n.bus}\u0000${n.path}`;
      let p = props.get(key);
      if (p === undefined) {
        p = this.accessibleProps(n, ask);
        props.set(key, p);
      }
      return p;
    };
    return {
      propsOf,
      facts: (n: Node): Promise<A11yNodeFacts> => {
        const p = n.parent;
        const pit = p === null ? undefined : cached(p);
        const under = p !== null && (pit !== undefined ? !hasState(pit.states, ST_SHOWING) : hidden.has(p));
        if (under) hidden.add(n);
        return this.factsOf(n, withActions, propsOf(n), under, ask);
      },
      clear: (): void => {
        props.clear();
        hidden.clear();
      },
    };
  }

  async walkSource(h: A11yHandle, limits: WalkLimits): Promise<A11yNodeSource> {
    this.check();
    const root = asNode(h);
    if (!this.bulk) return this;
    // Without patterns no GetActions: the names serve nothing else. Without bounds, GetExtents
    // only for scrolled items (needsExtents).
    const needs: WalkShown = { patterns: limits.patterns !== false, bounds: limits.bounds !== false };
    const walkKey = [
      root.bus,
      root.path,
      limits.maxNodes,
      limits.maxDepth,
      needs.patterns,
      needs.bounds,
    ].join("\u0000");
    const itemsCall = this.bus.call(root.bus, CACHE_PATH, CACHE, "GetItems");
    // In the same write as GetItems, behind it: the app answers the cache first.
    const seeded = this.seed(root, walkKey);
    let cache: CacheSnapshot;
    try {
      cache = parseCache(await itemsCall);
    } catch (e) {
      // An application without the cache (or one that failed it) is walked node by node.
      if (e instanceof StaleError || (isUiError(e) && e.code === "platform_unavailable")) return this;
      throw e;
    }
    const { items, ordered } = cache;
    if (items.size === 0) return this;
    const cached = (n: Node): CachedItem | undefined => {
      const it = items.get(n.path);
      return it !== undefined && it.bus === n.bus ? it : undefined;
    };
    const ahead = this.prefetch(root, cache, limits, needs, seeded);
    // The calls of the nodes the cache lacks are kept and sent early too (same application only,
    // where the seed sends them): each answer is taken only for the same call of the same path.
    const ask: Ask = (kind, n, call) => (n.bus === root.bus ? ahead.own(kind, n.path, call) : call());
    // The cells the cache lacks are asked everything as before: their role is not known ahead.
    const uncached = this.uncachedReader(cached, needs.patterns, ask);
    return {
      facts: (node: A11yHandle): Promise<A11yNodeFacts> => {
        let n: Node;
        let it: CachedItem | undefined;
        try {
          this.check();
          n = asNode(node);
          it = cached(n);
        } catch (e) {
          return Promise.reject(e);
        }
        if (it === undefined) return uncached.facts(n);
        return this.cachedInput(n, it, items, ahead, needs).then((input) => {
          try {
            return this.finish(input);
          } catch (e) {
            return staleToUi(e);
          }
        }, staleToUi);
      },
      children: async (node: A11yHandle): Promise<A11yHandle[]> => {
        this.check();
        const n = asNode(node);
        const it = cached(n);
        if (it?.childCount === 0) return [];
        // The cache's children where it holds them in GetChildren's order (atspiCache's
        // ordersChildren); any other parent, top-levels included, is asked.
        const kids = it !== undefined ? ordered.get(n.path) : undefined;
        if (kids !== undefined) return kids.map((k) => this.node(k.bus, k.path, n));
        if (it === undefined && (await uncached.propsOf(n))?.get("ChildCount") === 0) return [];
        return this.childrenFrom(n, ahead, it === undefined ? ask : direct);
      },
      release: () => {
        this.keepWalk(walkKey, ahead.sent());
        ahead.stop();
        uncached.clear();
      },
      // Most of the walk's calls only take an answer already asked for: the walk may hold as
      // many as the prefetch has in flight.
      inFlight: PREFETCH_WINDOW,
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

  /**
   * The application's other showing top-level windows (menus, popups, its dialogs), kept only
   * where they lie on a popup of the granted window (none shown already when the grant began).
   */
  async popupRoots(shownBefore: ReadonlySet<string> = new Set()): Promise<A11yHandle[]> {
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
      this.popupCheck.areas(this.popupCheck.window, shownBefore),
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
    this.lastWalks.clear();
  }
}
