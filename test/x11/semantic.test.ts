import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform, WindowInfo } from "../../src/shared/platform.js";
import type { McpHarness } from "../support/mcp.js";
import {
  atspiCall,
  atspiStateSet,
  type Element,
  type GtkDesk,
  type Node,
  nodeOf,
  type Rect,
  shown,
  startGtkDesk,
  stopGtkDesk,
  walkTree,
} from "./gtk.js";
import { waitFor, x11CliSuite } from "./support.js";

/**
 * Semantic actions over stdio against the built CLI on real GTK 3 windows (gtk3-widget-factory,
 * gtk3-demo) on a private Xvfb desktop. Every effect is read back by the test through its own
 * AT-SPI connection (states CHECKED / EXPANDED / SELECTED), never through the server.
 */

const ST_CHECKED = 4;
const ST_EXPANDABLE = 9;
const ST_EXPANDED = 10;
const ST_SELECTABLE = 22;
const ST_SELECTED = 23;
const ST_SHOWING = 25;

describe.skipIf(!x11CliSuite("semantic"))(
  "x11 semantic actions on GTK windows (built CLI over stdio)",
  () => {
    let d: GtkDesk;
    let p: Platform;
    let h: McpHarness;
    let factory: WindowInfo;
    let demo: WindowInfo;

    beforeAll(async () => {
      d = await startGtkDesk("inspect,interact,click");
      ({ p, h, factory, demo } = d);
      // Starting both GTK demos, the server and two consent dialogs, each button found by a full
      // AT-SPI walk, takes well over a minute on a loaded 2-core machine.
    }, 180_000);

    afterAll(async () => {
      await stopGtkDesk(d ?? {});
    });

    const walk = (w: WindowInfo) => walkTree(p, w);
    const states = (node: Node["h"]) => atspiStateSet(d.bus, node);

    async function childCount(node: Node["h"]): Promise<number> {
      const body = await atspiCall(d.bus, node, "org.freedesktop.DBus.Properties", "Get", "ss", [
        "org.a11y.atspi.Accessible",
        "ChildCount",
      ]);
      const v = body[0] as { value: unknown } | undefined;
      return Number(v?.value);
    }

    async function find(w: WindowInfo, args: Record<string, unknown>): Promise<Element[]> {
      return (await h.ok("find_elements", { detail: "full", hwnd: w.hwnd, ...args })).elements as Element[];
    }

    async function checkButtons(): Promise<Element[]> {
      const found = await find(factory, { role: "check_box", name_contains: "checkbutton" });
      return found.sort((a, b) => a.rect![1] - b.rect![1]);
    }

    it("find_elements by role and name: exactly the matching GTK widgets, window-relative", async () => {
      const checks = await checkButtons();
      expect(checks.length).toBe(6);
      const nodes = await walk(factory);
      for (const c of checks) {
        expect(c.role).toBe("check_box");
        expect(c.name).toBe("checkbutton");
        expect(c.patterns).toContain("toggle");
        expect(c.ref).toMatch(/\S/);
        nodeOf(nodes, factory, c);
      }
      const page2 = await find(factory, { role: "radio_button", name_contains: "page 2" });
      expect(page2.map((e) => e.name)).toEqual(["Page 2"]);
      expect(await find(factory, { role: "button", name_contains: "checkbutton" })).toEqual([]);
      expect(await find(factory, { name_contains: "no widget is called this" })).toEqual([]);
    });

    it("toggle_element flips a check button, read back through AT-SPI", async () => {
      const c = (await checkButtons())[0]!;
      const node = nodeOf(await walk(factory), factory, c);
      const before = (await states(node.h)).has(ST_CHECKED);
      const r = await h.call("toggle_element", { ref: c.ref });
      expect(r.isError).toBe(false);
      expect(r.structured.correlation_id).toMatch(/^[0-9a-f]{12}$/);
      await waitFor("toggled", async () => ((await states(node.h)).has(ST_CHECKED) !== before ? true : null));
      expect((await h.call("toggle_element", { ref: c.ref })).isError).toBe(false);
      await waitFor("toggled back", async () =>
        (await states(node.h)).has(ST_CHECKED) === before ? true : null,
      );
    });

    it("click_element clicks the centre of the live element (the check button under it flips)", async () => {
      await p.desktop.activateWindow(factory.hwnd);
      await waitFor("factory in front", async () => (await p.desktop.getWindow(factory.hwnd))?.foreground);
      const checks = await checkButtons();
      const c = checks[2]!;
      const nodes = await walk(factory);
      const target = nodeOf(nodes, factory, c);
      const others = checks.filter((x) => x !== c).map((x) => nodeOf(nodes, factory, x));
      const before = (await states(target.h)).has(ST_CHECKED);
      const othersBefore = await Promise.all(others.map(async (o) => (await states(o.h)).has(ST_CHECKED)));
      const r = await h.call("click_element", { ref: c.ref });
      expect(r.isError).toBe(false);
      await waitFor("clicked", async () =>
        (await states(target.h)).has(ST_CHECKED) !== before ? true : null,
      );
      // Only that one: the click landed on its centre, not on a neighbour.
      expect(await Promise.all(others.map(async (o) => (await states(o.h)).has(ST_CHECKED)))).toEqual(
        othersBefore,
      );
    });

    /** The gtk3-demo tree cell (from inspect_tree, with its ref) at a screen rect from AT-SPI. */
    async function demoCellAt(screen: Rect): Promise<Element | undefined> {
      const live = (await p.desktop.getWindow(demo.hwnd))!;
      const tree = await h.ok("inspect_tree", {
        detail: "full",
        hwnd: demo.hwnd,
        max_depth: 12,
        max_nodes: 2000,
      });
      const flat: Element[] = [];
      const visit = (e: Element) => {
        flat.push(e);
        for (const c of e.children ?? []) visit(c);
      };
      visit(tree.root as Element);
      return flat.find(
        (e) =>
          e.role === "cell" &&
          e.rect !== null &&
          e.rect[0] + live.rect[0] === screen[0] &&
          e.rect[1] + live.rect[1] === screen[1],
      );
    }

    it("expand_element / collapse_element on a gtk3-demo tree row, read back as EXPANDED and more rows", async () => {
      const nodes = await walk(demo);
      const tree = nodes.find((n) => n.f.role === "tree");
      expect(tree).toBeDefined();
      // The first top-level row GTK marks expandable (a demo group such as "Benchmark").
      let row: Node | null = null;
      for (const n of nodes) {
        if (n.f.role !== "cell" || !n.f.patterns.includes("expand_collapse") || !n.f.rect || n.f.rect[1] < 0)
          continue;
        const st = await states(n.h);
        if (st.has(ST_EXPANDABLE) && !st.has(ST_EXPANDED)) {
          row = n;
          break;
        }
      }
      expect(row).not.toBeNull();
      const el = await demoCellAt(row!.f.rect!);
      expect(el?.patterns).toContain("expand_collapse");
      const rowsBefore = await childCount(tree!.h);
      expect((await h.call("expand_element", { ref: el!.ref })).isError).toBe(false);
      await waitFor("expanded", async () => ((await states(row!.h)).has(ST_EXPANDED) ? true : null));
      await waitFor("child rows shown", async () => ((await childCount(tree!.h)) > rowsBefore ? true : null));
      // Expanding an expanded row changes nothing (the toggling action is not run again).
      expect((await h.call("expand_element", { ref: el!.ref })).isError).toBe(false);
      expect((await states(row!.h)).has(ST_EXPANDED)).toBe(true);
      expect((await h.call("collapse_element", { ref: el!.ref })).isError).toBe(false);
      await waitFor("collapsed", async () => (!(await states(row!.h)).has(ST_EXPANDED) ? true : null));
      await waitFor("child rows hidden", async () =>
        (await childCount(tree!.h)) === rowsBefore ? true : null,
      );
    });

    it("expand_element on a tree row that cannot expand (GTK still gives it an expand action): pattern_not_supported", async () => {
      const nodes = await walk(demo);
      // A top-level demo without children: a cell GTK does not mark EXPANDABLE.
      let leaf: Node | null = null;
      for (const n of nodes) {
        if (n.f.role !== "cell" || !n.f.rect || n.f.rect[1] < 0) continue;
        const st = await states(n.h);
        if (!st.has(ST_EXPANDABLE) && st.has(ST_SHOWING)) {
          leaf = n;
          break;
        }
      }
      expect(leaf).not.toBeNull();
      expect(leaf!.f.patterns).not.toContain("expand_collapse");
      const el = await demoCellAt(leaf!.f.rect!);
      expect(el).toBeDefined();
      expect(el!.patterns).not.toContain("expand_collapse");
      for (const tool of ["expand_element", "collapse_element"])
        expect((await h.call(tool, { ref: el!.ref })).code, tool).toBe("pattern_not_supported");
      expect((await states(leaf!.h)).has(ST_EXPANDED)).toBe(false);
    });

    it("expand_element on GTK's expander and combo box: pattern_not_supported (GTK exposes no expand action), state unchanged", async () => {
      // The combo boxes of page 1 offer only "press".
      const combos = (await find(factory, { role: "combo_box" })).filter(shown);
      expect(combos.length).toBeGreaterThan(0);
      for (const c of combos) expect(c.patterns).not.toContain("expand_collapse");
      const combo = combos[0]!;
      expect((await h.call("expand_element", { ref: combo.ref })).code).toBe("pattern_not_supported");
      // Page 2 holds a GtkExpander: switch pages through invoke_element on the "Page 2" radio.
      const page2 = (await find(factory, { role: "radio_button", name_contains: "page 2" }))[0]!;
      expect((await h.call("invoke_element", { ref: page2.ref })).isError).toBe(false);
      const expander = await waitFor("page 2 shown", async () => {
        const found = await find(factory, { role: "button", name_contains: "Expander" });
        return found.find((e) => e.name === "Expander" && shown(e)) ?? null;
      });
      expect(expander.patterns).not.toContain("expand_collapse");
      const node = nodeOf(await walk(factory), factory, expander);
      const before = (await states(node.h)).has(ST_EXPANDED);
      const r = await h.call(before ? "collapse_element" : "expand_element", { ref: expander.ref });
      expect(r.code).toBe("pattern_not_supported");
      expect((await states(node.h)).has(ST_EXPANDED)).toBe(before);
    });

    it("select_element selects a gtk3-demo tree row, read back as SELECTED (and the demo it names opens)", async () => {
      const nodes = await walk(demo);
      const live = (await p.desktop.getWindow(demo.hwnd))!;
      const rows = (await find(demo, { role: "cell", max_results: 200 }))
        .filter((e) => shown(e) && e.patterns.includes("selection_item"))
        .sort((a, b) => a.rect![1] - b.rect![1]);
      expect(rows.length).toBeGreaterThan(3);
      let row: Element | null = null;
      for (const e of rows.slice(1)) {
        if (!(await states(nodeOf(nodes, live, e).h)).has(ST_SELECTED)) {
          row = e;
          break;
        }
      }
      expect(row).not.toBeNull();
      const rowNode = nodeOf(nodes, live, row!);
      const titleBefore = live.title;
      expect((await h.call("select_element", { ref: row!.ref })).isError).toBe(false);
      await waitFor("row selected", async () => ((await states(rowNode.h)).has(ST_SELECTED) ? true : null));
      // gtk3-demo titles its window after the selected demo.
      await waitFor("demo title follows", async () =>
        (await p.desktop.getWindow(demo.hwnd))?.title !== titleBefore ? true : null,
      );
    });

    it("gtk3-demo rows scrolled out of view are reported offscreen (GTK keeps them SHOWING with G_MININT extents)", async () => {
      const rows = (await find(demo, { role: "cell", max_results: 500 })).filter((e) =>
        e.patterns.includes("selection_item"),
      );
      const live = (await p.desktop.getWindow(demo.hwnd))!;
      const height = live.rect[3] - live.rect[1];
      const outside = rows.filter((e) => e.rect !== null && (e.rect[1] < 0 || e.rect[1] >= height));
      const inside = rows.filter((e) => e.rect !== null && e.rect[1] >= 0 && e.rect[3] <= height);
      // More demos than fit in the window: some rows are scrolled away.
      expect(outside.length).toBeGreaterThan(0);
      expect(inside.length).toBeGreaterThan(0);
      for (const e of outside) expect(e.offscreen).toBe(true);
      for (const e of inside) expect(e.offscreen).toBe(false);
    });

    it("select_element on a GtkListBox row that cannot be selected (selection mode none): pattern_not_supported", async () => {
      // Page 2 is shown by an earlier test; its list box has rows "Row 1" … "Row 4".
      const items = await waitFor("list rows", async () => {
        const found = (await find(factory, { role: "list_item" })).filter(shown);
        return found.length >= 2 ? found.sort((a, b) => a.rect![1] - b.rect![1]) : null;
      });
      const nodes = await walk(factory);
      const row = items[1]!;
      const rowNode = nodeOf(nodes, factory, row);
      // GTK answers Selection.SelectChild true here and selects nothing; the rows are not SELECTABLE.
      expect((await states(rowNode.h)).has(ST_SELECTABLE)).toBe(false);
      expect(row.patterns).not.toContain("selection_item");
      expect((await h.call("select_element", { ref: row.ref })).code).toBe("pattern_not_supported");
      expect((await states(rowNode.h)).has(ST_SELECTED)).toBe(false);
    });
  },
);
