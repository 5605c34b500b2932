import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WindowInfo } from "../../src/shared/platform.js";
import type { McpHarness } from "../support/mcp.js";
import { type GtkDesk, startGtkDesk, stopGtkDesk } from "./gtk.js";
import { x11CliSuite } from "./support.js";

/**
 * The outline (inspect_tree and find_elements without detail "full" or `bounds`) walks without
 * the extents nobody is shown: only scrolled items (list items, table cells and rows, tree items)
 * are still asked theirs, because GTK keeps a row scrolled out of view SHOWING and says so only
 * with G_MININT extents. On real GTK 3 windows over stdio, the outline's text is the full tree's
 * text, line for line, gtk3-demo's scrolled-away rows `[offscreen]` included. (Those rows are
 * tree view cells the app's cache lacks, read node by node with their extents as before; the
 * rule for scrolled items the cache does hold is checked on a fake bus,
 * test/a11y/atspi-cache-walk.test.ts.)
 */

const LIMITS = { max_depth: 32, max_nodes: 2000 };

describe.skipIf(!x11CliSuite("outline"))("x11 outlines walked without the rects nobody is shown", () => {
  let d: GtkDesk;
  let h: McpHarness;
  let factory: WindowInfo;
  let demo: WindowInfo;

  beforeAll(async () => {
    d = await startGtkDesk("inspect");
    ({ h, factory, demo } = d);
  }, 180_000);

  afterAll(async () => {
    await stopGtkDesk(d ?? {});
  });

  const text = (r: Record<string, unknown>, c: { text?: string }[]) => ({ r, t: c[0]?.text ?? "" });
  async function both(tool: string, args: Record<string, unknown>) {
    const outline = await h.call(tool, args);
    const full = await h.call(tool, { ...args, detail: "full" });
    expect(outline.isError).toBe(false);
    expect(full.isError).toBe(false);
    return { outline: text(outline.structured, outline.content), full: text(full.structured, full.content) };
  }

  it("gtk3-demo: the outline is the full tree's text, its scrolled-away rows [offscreen] included", async () => {
    const { outline, full } = await both("inspect_tree", { hwnd: demo.hwnd, ...LIMITS });
    expect(outline.r.truncated).toBe(false);
    expect(outline.t).toBe(full.t);
    expect(outline.r.node_count).toBe(full.r.node_count);
    const offscreenCells = outline.t
      .split("\n")
      .filter((l) => l.includes("- cell") && l.includes("[offscreen]"));
    // More demos than fit in the window: some rows are scrolled away, and said to be.
    expect(offscreenCells.length).toBeGreaterThan(0);
    const found = await both("find_elements", {
      hwnd: demo.hwnd,
      role: "cell",
      state: "offscreen",
      max_results: 500,
    });
    expect(found.outline.t).toBe(found.full.t);
    expect(found.outline.r.count).toBeGreaterThan(0);
  });

  it("gtk3-widget-factory: the outline is the full tree's text", async () => {
    const { outline, full } = await both("inspect_tree", { hwnd: factory.hwnd, ...LIMITS });
    expect(outline.t).toBe(full.t);
    expect(outline.r.node_count).toBe(full.r.node_count);
    const found = await both("find_elements", {
      hwnd: factory.hwnd,
      name_contains: "button",
      max_results: 500,
    });
    expect(found.outline.t).toBe(found.full.t);
  });

  it("fields: bounds asks the rects again: the same lines with @x,y,w,h", async () => {
    const plain = await h.call("inspect_tree", { hwnd: factory.hwnd, ...LIMITS });
    const r = await h.call("inspect_tree", { hwnd: factory.hwnd, ...LIMITS, fields: ["bounds"] });
    const at = / @-?\d+,-?\d+,\d+,\d+/;
    const lines = (r.content[0]?.text ?? "").split("\n");
    expect(lines.filter((l) => at.test(l)).length).toBeGreaterThan(50);
    expect(lines.map((l) => l.replace(at, ""))).toEqual((plain.content[0]?.text ?? "").split("\n"));
  });
});
