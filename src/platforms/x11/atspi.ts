import dbus from "dbus-next";
import { intEnv } from "../../shared/env.js";
import { isUiError, uiError } from "../../shared/errors.js";
import { intersect, type Rect, rectArea, sameRect } from "../../shared/geometry.js";
import type {
  A11yHandle,
  A11yNodeFacts,
  A11ySession,
  AccessibilityPort,
  SemanticAction,
  WindowInfo,
} from "../../shared/platform.js";
import { mapAtspiRole } from "./roles.js";
import { scrollCellIntoView } from "./scrollInto.js";
import { ATSPI_STATE, atspiStates } from "./states.js";

/**
 * AT-SPI2 over D-Bus with dbus-next's low-level bus.call (no introspection per node). The a11y
 * bus address comes from org.a11y.Bus.GetAddress on the session bus; an application is tied to
 * a process through GetConnectionUnixProcessID on the a11y bus. Every call has a timeout; a node
 * that no longer exists is element_stale. Values and text contents are never read.
 */

const ACCESSIBLE = "org.a11y.atspi.Accessible";
const COMPONENT = "org.a11y.atspi.Component";
const ACTION = "org.a11y.atspi.Action";
const SELECTION = "org.a11y.atspi.Selection";
const EDITABLE_TEXT = "org.a11y.atspi.EditableText";
const REGISTRY = "org.a11y.atspi.Registry";
const ROOT_PATH = "/org/a11y/atspi/accessible/root";
const NULL_PATH = "/org/a11y/atspi/null";
/** Per D-Bus call; 100..60000 ms, anything else is the default 3000. */
const CALL_TIMEOUT_MS = intEnv(process.env, "UIINSPECT_ATSPI_CALL_TIMEOUT_MS", 3000, 100, 60_000);
const COORD_SCREEN = 0;
/** AtspiScrollType ANYWHERE: the least scrolling that brings the node into view. */
const SCROLL_ANYWHERE = 6;
/** Items of a scrolling container: these list the scroll_item pattern (Component.ScrollTo). */
const SCROLL_ITEM_ROLES = new Set(["list item", "table cell", "tree item", "table row"]);
/** How deep under a list / combo box select_option looks for the option (combo → menu → item). */
const OPTION_DEPTH = 2;

// AtspiStateType bit numbers.
const ST_DEFUNCT = 6;
const ST_ENABLED = 8;
const ST_EXPANDED = 10;
const ST_FOCUSED = 12;
const ST_SELECTABLE = 22;
const ST_SENSITIVE = 24;
const ST_SHOWING = 25;
const ST_VISIBLE = 30;

const INVOKE_ACTIONS = ["click", "press", "activate", "jump"];
const TOGGLE_ACTIONS = ["toggle"];
const EXPAND_ACTIONS = ["expand or contract", "expand", "collapse", "expand or collapse"];
const CHECKABLE_ROLES = new Set([
  "check box",
  "toggle button",
  "radio button",
  "check menu item",
  "radio menu item",
]);

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

function hasState(states: number[], bit: number): boolean {
  const word = states[bit >> 5] ?? 0;
  return ((word >>> (bit & 31)) & 1) === 1;
}

/** Connection to the a11y bus with bounded calls. */
export class AtspiBus {
  private readonly bus: dbus.MessageBus;

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

  async call(
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
      const name = e instanceof dbus.DBusError ? e.type : "";
      if (
        name.endsWith(".UnknownObject") ||
        name.endsWith(".UnknownMethod") ||
        name.endsWith(".ServiceUnknown") ||
        name.endsWith(".NameHasNoOwner") ||
        name.endsWith(".NoReply") ||
        name.endsWith(".UnknownInterface")
      ) {
        throw new StaleError();
      }
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
      const body = await this.call(
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
    this.bus.disconnect();
  }
}

function withTimeout<T>(p: Promise<T>, ms = CALL_TIMEOUT_MS): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(
      () => reject(uiError("platform_unavailable", "The accessibility provider did not answer in time.")),
      ms,
    );
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
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

/**
 * GTK reports extents near G_MININT for nodes it does not draw although they keep SHOWING and
 * VISIBLE (tree rows scrolled out of view, cell renderers of hidden columns).
 */
const NO_EXTENT = -(2 ** 30);

function toRect(body: unknown[]): Rect | null {
  const e = body[0];
  if (!Array.isArray(e) || e.length < 4 || !e.every((v) => typeof v === "number")) return null;
  const [x, y, w, h] = e as number[];
  if (w! <= 0 || h! <= 0) return null;
  return [x!, y!, x! + w!, y! + h!];
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

class AtspiSession implements A11ySession {
  private readonly bus: AtspiBus;
  private readonly rootNode: Node;
  private readonly ifaceCache = new WeakMap<Node, Promise<string[]>>();
  private disposed = false;

  constructor(
    bus: AtspiBus,
    root: Node,
    /** The instance's application objects on the a11y bus (where its popups live). */
    private readonly apps: readonly { bus: string; path: string }[] = [],
  ) {
    this.bus = bus;
    this.rootNode = root;
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
      p = this.bus
        .call(n.bus, n.path, ACCESSIBLE, "GetInterfaces")
        .then((body) =>
          Array.isArray(body[0])
            ? (body[0] as unknown[]).filter((s): s is string => typeof s === "string")
            : [],
        );
      this.ifaceCache.set(n, p);
      // A failed lookup is not kept: the next call asks again.
      p.catch(() => this.ifaceCache.delete(n));
    }
    return p;
  }

  private async actionNames(n: Node): Promise<string[]> {
    const body = await this.bus.call(n.bus, n.path, ACTION, "GetActions");
    const list = body[0];
    if (!Array.isArray(list)) return [];
    return list.map((a) => (Array.isArray(a) && typeof a[0] === "string" ? a[0].toLowerCase() : ""));
  }

  private async states(n: Node): Promise<number[]> {
    const body = await this.bus.call(n.bus, n.path, ACCESSIBLE, "GetState");
    return Array.isArray(body[0]) ? (body[0] as unknown[]).map((v) => (typeof v === "number" ? v : 0)) : [];
  }

  async facts(h: A11yHandle): Promise<A11yNodeFacts> {
    this.check();
    const n = asNode(h);
    try {
      const b = this.bus;
      const [roleBody, name, states, ifaces, extents, actions, parentIfaces] = await Promise.all([
        b.call(n.bus, n.path, ACCESSIBLE, "GetRoleName"),
        b.getProperty(n.bus, n.path, ACCESSIBLE, "Name"),
        this.states(n),
        this.interfaces(n),
        optional(b.call(n.bus, n.path, COMPONENT, "GetExtents", "u", [COORD_SCREEN])),
        optional(this.actionNames(n)),
        n.parent ? optional(this.interfaces(n.parent)) : Promise.resolve(null),
      ]);
      if (hasState(states, ST_DEFUNCT)) throw uiError("element_stale");
      const roleName = typeof roleBody[0] === "string" ? roleBody[0].toLowerCase() : "";
      const editable = ifaces.includes(EDITABLE_TEXT);
      const acts = ifaces.includes(ACTION) ? (actions ?? []) : [];
      const patterns: string[] = [];
      if (acts.some((a) => INVOKE_ACTIONS.includes(a))) patterns.push("invoke");
      if (
        acts.some((a) => TOGGLE_ACTIONS.includes(a)) ||
        (CHECKABLE_ROLES.has(roleName) && acts.includes("click"))
      ) {
        patterns.push("toggle");
      }
      if (acts.some((a) => EXPAND_ACTIONS.includes(a))) patterns.push("expand_collapse");
      // GTK answers SelectChild true for a child it cannot select (a list box with selection
      // mode none): only a SELECTABLE child of a Selection is a selection item.
      if (parentIfaces?.includes(SELECTION) && hasState(states, ST_SELECTABLE))
        patterns.push("selection_item");
      if (editable) patterns.push("value");
      if (ifaces.includes(COMPONENT) && SCROLL_ITEM_ROLES.has(roleName)) patterns.push("scroll_item");
      if (ifaces.includes(SELECTION)) patterns.push("selection");
      const rect = extents ? toRect(extents) : null;
      return {
        role: mapAtspiRole(roleName, editable),
        name: typeof name === "string" ? name : null,
        automation_id: null,
        class_name: roleName || null,
        rect,
        enabled: hasState(states, ST_ENABLED) || hasState(states, ST_SENSITIVE),
        offscreen:
          !(hasState(states, ST_SHOWING) && hasState(states, ST_VISIBLE)) ||
          (rect !== null && (rect[0] <= NO_EXTENT || rect[1] <= NO_EXTENT)),
        focused: hasState(states, ST_FOCUSED),
        is_password: roleName === "password text",
        patterns,
        states: atspiStates(states, roleName),
      };
    } catch (e) {
      return staleToUi(e);
    }
  }

  async children(h: A11yHandle): Promise<A11yHandle[]> {
    this.check();
    const n = asNode(h);
    try {
      const body = await this.bus.call(n.bus, n.path, ACCESSIBLE, "GetChildren");
      return refs(body).map((r) => ({ bus: r.bus, path: r.path, parent: n }));
    } catch (e) {
      return staleToUi(e);
    }
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
          const roleBody = await this.bus.call(n.bus, n.path, ACCESSIBLE, "GetRoleName");
          const role = typeof roleBody[0] === "string" ? roleBody[0].toLowerCase() : "";
          return await this.doNamedAction(
            n,
            CHECKABLE_ROLES.has(role) ? ["toggle", "click"] : TOGGLE_ACTIONS,
          );
        }
        case "expand":
        case "collapse": {
          if (!ifaces.includes(ACTION)) throw uiError("pattern_not_supported");
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
    return out;
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
  }
}

export class X11Accessibility implements AccessibilityPort {
  private busPromise: Promise<AtspiBus> | null = null;

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
          .then(toRect)
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
    if (best < 0) throw uiError("target_not_found", "No accessibility tree matches this window.");
    const frame = frames[best]!;
    return new AtspiSession(bus, { bus: frame.bus, path: frame.path, parent: null }, mine);
  }

  dispose(): void {
    const p = this.busPromise;
    this.busPromise = null;
    p?.then((b) => b.disconnect()).catch(() => {});
  }
}
