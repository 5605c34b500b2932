import dbus from "dbus-next";
import { uiError } from "../../shared/errors.js";
import type { Rect } from "../../shared/geometry.js";
import type { AtspiBus } from "./atspiBus.js";
import { ATSPI_STATE, hasAtspiState } from "./states.js";

/**
 * scroll_into_view where the toolkit refuses Component.ScrollTo: GTK 3 answers false for the
 * cells of a tree view (it never implemented AtkComponent.scroll_to for them). The row is then
 * brought into view through the vertical scroll bar of its scrolled window, the way a person
 * would drag the scroll bar: with rows of one height, the scroll value min + (max − min) ·
 * row / (rows − 1) puts row `row` inside the viewport (max is upper − page size). Only the scroll
 * bar's range is read (never an element's value), and the row is checked to be inside the
 * viewport afterwards.
 */

export interface ScrollNode {
  bus: string;
  path: string;
  parent: ScrollNode | null;
}

/** What the fallback needs from the session's bus. */
export type ScrollBus = Pick<AtspiBus, "call" | "getProperty">;

const ACCESSIBLE = "org.a11y.atspi.Accessible";
const COMPONENT = "org.a11y.atspi.Component";
const TABLE = "org.a11y.atspi.Table";
const VALUE = "org.a11y.atspi.Value";
const COORD_SCREEN = 0;
/** How long the row is given to move inside the viewport after the scroll. */
const SETTLE_MS = 1500;

async function extents(bus: ScrollBus, n: { bus: string; path: string }): Promise<Rect | null> {
  const body = await bus.call(n.bus, n.path, COMPONENT, "GetExtents", "u", [COORD_SCREEN]);
  const e = body[0];
  if (!Array.isArray(e) || e.length < 4 || !e.every((v) => typeof v === "number")) return null;
  const [x = 0, y = 0, w = 0, h = 0] = e as number[];
  return [x, y, x + w, y + h];
}

async function stateWords(bus: ScrollBus, n: { bus: string; path: string }): Promise<number[]> {
  const body = await bus.call(n.bus, n.path, ACCESSIBLE, "GetState");
  return Array.isArray(body[0]) ? (body[0] as unknown[]).map((v) => (typeof v === "number" ? v : 0)) : [];
}

async function roleOf(bus: ScrollBus, n: { bus: string; path: string }): Promise<string> {
  const r = (await bus.call(n.bus, n.path, ACCESSIBLE, "GetRoleName"))[0];
  return typeof r === "string" ? r.toLowerCase() : "";
}

function inside(r: Rect | null, view: Rect): boolean {
  return r !== null && r[1] >= view[1] && r[3] <= view[3] && r[3] > r[1];
}

/** The vertical scroll bar among the scrolled window's children. */
async function verticalScrollBar(
  bus: ScrollBus,
  pane: ScrollNode,
): Promise<{ bus: string; path: string } | null> {
  const body = await bus.call(pane.bus, pane.path, ACCESSIBLE, "GetChildren");
  const list = Array.isArray(body[0]) ? (body[0] as unknown[]) : [];
  for (const item of list) {
    if (!Array.isArray(item) || typeof item[0] !== "string" || typeof item[1] !== "string") continue;
    const k = { bus: item[0], path: item[1] };
    if ((await roleOf(bus, k)) !== "scroll bar") continue;
    if (hasAtspiState(await stateWords(bus, k), ATSPI_STATE.VERTICAL)) return k;
  }
  return null;
}

/** Brings a table cell into its scrolled window's viewport; pattern_not_supported when it cannot. */
export async function scrollCellIntoView(
  bus: ScrollBus,
  node: ScrollNode,
  signal?: AbortSignal,
): Promise<void> {
  // GTK nests the renderers of an expander column as cells inside the row's cell.
  let cell = node;
  while (cell.parent !== null && (await roleOf(bus, cell.parent)) === "table cell") cell = cell.parent;
  const table = cell.parent;
  const pane = table?.parent ?? null;
  if (table === null || pane === null) throw uiError("pattern_not_supported");
  const view = await extents(bus, pane);
  if (view === null) throw uiError("pattern_not_supported");
  if (inside(await extents(bus, cell), view)) return;
  const index = (await bus.call(cell.bus, cell.path, ACCESSIBLE, "GetIndexInParent"))[0];
  if (typeof index !== "number" || index < 0) throw uiError("element_stale");
  const row = (await bus.call(table.bus, table.path, TABLE, "GetRowAtIndex", "i", [index]))[0];
  const rows = await bus.getProperty(table.bus, table.path, TABLE, "NRows");
  if (typeof row !== "number" || typeof rows !== "number" || row < 0 || rows <= 0)
    throw uiError("pattern_not_supported");
  const bar = await verticalScrollBar(bus, pane);
  if (bar === null) throw uiError("pattern_not_supported");
  const min = await bus.getProperty(bar.bus, bar.path, VALUE, "MinimumValue");
  const max = await bus.getProperty(bar.bus, bar.path, VALUE, "MaximumValue");
  if (typeof min !== "number" || typeof max !== "number" || max < min) throw uiError("pattern_not_supported");
  const target = min + ((max - min) * row) / Math.max(1, rows - 1);
  await bus.call(bar.bus, bar.path, "org.freedesktop.DBus.Properties", "Set", "ssv", [
    VALUE,
    "CurrentValue",
    new dbus.Variant("d", target),
  ]);
  const until = Date.now() + SETTLE_MS;
  for (;;) {
    if (inside(await extents(bus, cell), view)) return;
    if (Date.now() > until || signal?.aborted)
      throw uiError("pattern_not_supported", "The element could not be brought into view.");
    await new Promise((r) => setTimeout(r, 50));
  }
}
