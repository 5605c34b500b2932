import type { Rect } from "../../shared/geometry.js";
import type { A11yNodeFacts } from "../../shared/platform.js";
import { mapAtspiRole } from "./roles.js";
import { atspiStates } from "./states.js";

/**
 * AT-SPI's raw answers about one node → the provider facts. Both ways of reading a node (one
 * call per fact, or the application's Cache.GetItems plus the calls it lacks) produce this same
 * input, so a fact added here (from the state set, say) is added to both at once.
 */

export const ACTION = "org.a11y.atspi.Action";
export const COMPONENT = "org.a11y.atspi.Component";
export const SELECTION = "org.a11y.atspi.Selection";
export const EDITABLE_TEXT = "org.a11y.atspi.EditableText";

// AtspiStateType bit numbers.
export const ST_DEFUNCT = 6;
const ST_ENABLED = 8;
export const ST_EXPANDABLE = 9;
export const ST_EXPANDED = 10;
const ST_FOCUSED = 12;
export const ST_SELECTABLE = 22;
const ST_SENSITIVE = 24;
export const ST_SHOWING = 25;
const ST_VISIBLE = 30;

export const INVOKE_ACTIONS = ["click", "press", "activate", "jump"];
export const TOGGLE_ACTIONS = ["toggle"];
export const EXPAND_ACTIONS = ["expand or contract", "expand", "collapse", "expand or collapse"];
/** Items of a scrolling container: these list the scroll_item pattern (Component.ScrollTo). */
const SCROLL_ITEM_ROLES = new Set(["list item", "table cell", "tree item", "table row"]);
/**
 * The same roles as AtspiRole numbers (part of the D-Bus protocol: Cache.GetItems carries
 * them): list item 32, table cell 56, table row 90, tree item 91.
 */
const SCROLL_ITEM_ROLE_NUMBERS: ReadonlySet<number> = new Set([32, 56, 90, 91]);
export const CHECKABLE_ROLES = new Set([
  "check box",
  "toggle button",
  "radio button",
  "check menu item",
  "radio menu item",
]);

/**
 * GTK reports extents near G_MININT for nodes it does not draw although they keep SHOWING and
 * VISIBLE (tree rows scrolled out of view, cell renderers of hidden columns).
 */
const NO_EXTENT = -(2 ** 30);

export function hasState(states: readonly number[], bit: number): boolean {
  const word = states[bit >> 5] ?? 0;
  return ((word >>> (bit & 31)) & 1) === 1;
}

/**
 * Whether the application shows the node (SHOWING and VISIBLE). One it does not show (a widget
 * on a hidden GtkStack page, a closed menu's item) is not drawn anywhere: its extents name no
 * place on screen, so its facts carry no rect (`atspiFacts`) and it is `offscreen`.
 */
export function shownByStates(states: readonly number[]): boolean {
  return hasState(states, ST_SHOWING) && hasState(states, ST_VISIBLE);
}

/**
 * Whether a node whose states and interfaces are known needs its Component.GetExtents: only a
 * shown Component node (the answer of any other is dropped by `atspiFacts`). The cached walk,
 * its prediction of the calls to ask ahead and the calls a walk keeps for the next one all ask
 * by this rule.
 *
 * `bounds: false` (a walk whose rects nobody is shown): a rect then serves only the
 * `offscreen` of an item a container scrolls, which GTK keeps SHOWING with G_MININT extents
 * once scrolled away (gtk3-demo: 92 of its 188 nodes); only those items (`role`, an AtspiRole
 * number) are still asked, so the outline's states stay those of the full walk.
 */
export function needsExtents(
  interfaces: readonly string[],
  states: readonly number[],
  role: number,
  bounds: boolean,
): boolean {
  if (!interfaces.includes(COMPONENT) || !shownByStates(states)) return false;
  return bounds || SCROLL_ITEM_ROLE_NUMBERS.has(role);
}

/** What AT-SPI answered about a node (strings as the provider gave them). */
export interface AtspiFactsInput {
  /** GetRoleName, lower-cased. */
  roleName: string;
  name: unknown;
  /** GetState's two words. */
  states: readonly number[];
  interfaces: readonly string[];
  /**
   * Screen rect from Component.GetExtents, or null (no Component, nothing drawn, not asked).
   * Dropped by `atspiFacts` for a node the states say is not shown.
   */
  rect: Rect | null;
  /** Action names, lower-cased; only read when the node has the Action interface. */
  actions: readonly string[];
  /** The parent's interfaces (selection items), null for a session's root. */
  parentInterfaces: readonly string[] | null;
}

/** GetExtents' (x, y, w, h) → a screen rect, null for an empty or malformed answer. */
export function extentsRect(body: unknown[]): Rect | null {
  const e = body[0];
  if (!Array.isArray(e) || e.length < 4 || !e.every((v) => typeof v === "number")) return null;
  const [x = 0, y = 0, w = 0, h = 0] = e as number[];
  if (w <= 0 || h <= 0) return null;
  return [x, y, x + w, y + h];
}

/** GetActions' a(sss) → the lower-cased names. */
export function actionNamesOf(body: unknown[]): string[] {
  const list = body[0];
  if (!Array.isArray(list)) return [];
  return list.map((a) => (Array.isArray(a) && typeof a[0] === "string" ? a[0].toLowerCase() : ""));
}

export function atspiFacts(input: AtspiFactsInput): A11yNodeFacts {
  const { roleName, states, interfaces } = input;
  const shown = shownByStates(states);
  // A node the app does not show has no rect, whichever way it was read (the node-by-node
  // reading asks its extents beside its states and drops the answer here).
  const rect = shown ? input.rect : null;
  const editable = interfaces.includes(EDITABLE_TEXT);
  const acts = interfaces.includes(ACTION) ? input.actions : [];
  const patterns: string[] = [];
  if (acts.some((a) => INVOKE_ACTIONS.includes(a))) patterns.push("invoke");
  if (
    acts.some((a) => TOGGLE_ACTIONS.includes(a)) ||
    (CHECKABLE_ROLES.has(roleName) && acts.includes("click"))
  ) {
    patterns.push("toggle");
  }
  // GTK gives every tree cell an "expand or contract" action, leaves included: only a node
  // marked EXPANDABLE can expand.
  if (acts.some((a) => EXPAND_ACTIONS.includes(a)) && hasState(states, ST_EXPANDABLE))
    patterns.push("expand_collapse");
  // GTK answers SelectChild true for a child it cannot select (a list box with selection
  // mode none): only a SELECTABLE child of a Selection is a selection item.
  if (input.parentInterfaces?.includes(SELECTION) && hasState(states, ST_SELECTABLE))
    patterns.push("selection_item");
  if (editable) patterns.push("value");
  if (interfaces.includes(COMPONENT) && SCROLL_ITEM_ROLES.has(roleName)) patterns.push("scroll_item");
  if (interfaces.includes(SELECTION)) patterns.push("selection");
  return {
    role: mapAtspiRole(roleName, editable),
    name: typeof input.name === "string" ? input.name : null,
    automation_id: null,
    class_name: roleName || null,
    rect,
    enabled: hasState(states, ST_ENABLED) || hasState(states, ST_SENSITIVE),
    offscreen: !shown || (rect !== null && (rect[0] <= NO_EXTENT || rect[1] <= NO_EXTENT)),
    focused: hasState(states, ST_FOCUSED),
    is_password: roleName === "password text",
    patterns,
    states: atspiStates(states, roleName),
  };
}
