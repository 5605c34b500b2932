import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform, WindowInfo } from "../../src/shared/platform.js";
import { CLI, McpHarness } from "../support/mcp.js";
import {
  atspiCall,
  atspiStateSet,
  type Element,
  type GtkDesk,
  nodeOf,
  type Rect,
  shown,
  startGtkDesk,
  stopGtkDesk,
  walkTree,
} from "./gtk.js";
import { waitFor, X11_AVAILABLE, X11_REQUIRED, xdotool } from "./support.js";

/**
 * What an agent needs on real GTK 3 apps (gtk3-widget-factory, gtk3-demo) over stdio against the
 * built CLI on a private Xvfb desktop: states that match AT-SPI's own, a context menu (another
 * top-level window of the process) found and used through refs, wait_for_element, scroll_into_view,
 * select_option, expect's verified, and a listing priced to the policy. Every effect is read back
 * through the test's own AT-SPI connection, never through the server.
 */

const HAVE_CLI = existsSync(CLI);
const ST = { CHECKED: 4, ENABLED: 8, EXPANDED: 10, FOCUSABLE: 11, SENSITIVE: 24 } as const;

describe.skipIf(!X11_AVAILABLE || (!HAVE_CLI && !X11_REQUIRED))(
  "x11 agent tasks on GTK windows (built CLI over stdio)",
  () => {
    let d: GtkDesk;
    let p: Platform;
    let h: McpHarness;
    let factory: WindowInfo;
    let demo: WindowInfo;

    beforeAll(async () => {
      d = await startGtkDesk("inspect,interact,click,text");
      ({ p, h, factory, demo } = d);
    }, 180_000);

    afterAll(async () => {
      await stopGtkDesk(d ?? {});
    });

    const walk = (w: WindowInfo) => walkTree(p, w, true);
    const call = (
      node: { bus: string; path: string },
      iface: string,
      member: string,
      sig?: string,
      body?: unknown[],
    ) => atspiCall(d.bus, node, iface, member, sig, body);
    const states = (node: { bus: string; path: string }) => atspiStateSet(d.bus, node);

    async function extents(node: { bus: string; path: string }): Promise<Rect> {
      const [x, y, w, hh] = (
        await call(node, "org.a11y.atspi.Component", "GetExtents", "u", [0])
      )[0] as number[];
      return [x!, y!, x! + w!, y! + hh!];
    }

    const find = async (w: WindowInfo, args: Record<string, unknown>) =>
      (await h.ok("find_elements", { detail: "full", hwnd: w.hwnd, ...args })).elements as Element[];

    it("states of check buttons match AT-SPI's own; toggle with expect checked is verified and read back", async () => {
      const checks = (await find(factory, { role: "check_box", name_contains: "checkbutton" })).filter(shown);
      expect(checks.length).toBeGreaterThan(2);
      const nodes = await walk(factory);
      for (const c of checks) {
        const own = await states(nodeOf(nodes, factory, c).h);
        expect(c.states.includes("checked"), "checked").toBe(
          own.has(ST.CHECKED) && !c.states.includes("mixed"),
        );
        expect(c.states.includes("focusable")).toBe(own.has(ST.FOCUSABLE));
        const sensitive = own.has(ST.ENABLED) || own.has(ST.SENSITIVE);
        expect(c.states.includes("enabled")).toBe(sensitive);
        expect(c.states.includes("disabled")).toBe(!sensitive);
      }
      const c = checks.find((x) => x.states.includes("enabled") && !x.states.includes("mixed"))!;
      expect(c, JSON.stringify(checks.map((x) => x.states))).toBeDefined();
      const node = nodeOf(nodes, factory, c).h;
      if (c.states.includes("checked")) {
        // Start from unchecked, so that the verified toggle below is a real change to checked.
        expect((await h.call("toggle_element", { ref: c.ref })).isError).toBe(false);
        await waitFor("unchecked first", async () => (!(await states(node)).has(ST.CHECKED) ? true : null));
      }
      const r = await h.call("toggle_element", {
        ref: c.ref,
        expect: { state: "checked", timeout_ms: 5000 },
      });
      expect(r.isError).toBe(false);
      expect(r.structured.verified).toBe(true);
      expect((await states(node)).has(ST.CHECKED)).toBe(true);
      const again = (await find(factory, { role: "check_box", state: "checked" })).map((e) => e.ref);
      expect(again).toContain(c.ref); // the same node keeps its ref across searches
      // Back, verified by the absence of checked through a fresh read.
      expect((await h.call("toggle_element", { ref: c.ref })).isError).toBe(false);
      await waitFor("unchecked", async () => (!(await states(node)).has(ST.CHECKED) ? true : null));
    });

    it("expand_element on a gtk3-demo row: expanded after expand (verified), a repeated expand is a no-op that expect reports false", async () => {
      const rows = (await find(demo, { role: "cell", state: "collapsed", max_results: 200 }))
        .filter((e) => shown(e) && e.patterns.includes("expand_collapse"))
        .sort((a, b) => a.rect![1] - b.rect![1]);
      expect(rows.length).toBeGreaterThan(0);
      const row = rows[0]!;
      const live = (await p.desktop.getWindow(demo.hwnd))!;
      const node = nodeOf(await walk(demo), live, row).h;
      expect((await states(node)).has(ST.EXPANDED)).toBe(false);
      const r = await h.call("expand_element", {
        ref: row.ref,
        expect: { state: "expanded", timeout_ms: 5000 },
        changes: true,
      });
      expect(r.structured.verified).toBe(true);
      expect((await states(node)).has(ST.EXPANDED)).toBe(true);
      const changes = r.structured.changes as {
        added: unknown[];
        changed: Array<{ ref: string; states: string[] }>;
      };
      expect(changes.changed.find((c) => c.ref === row.ref)?.states).toContain("expanded");
      expect(changes.added.length).toBeGreaterThan(0); // the child rows
      const noop = await h.call("expand_element", {
        ref: row.ref,
        expect: { state: "collapsed", timeout_ms: 400 },
      });
      expect(noop.isError).toBe(false);
      expect(noop.structured.verified).toBe(false);
      expect((await states(node)).has(ST.EXPANDED)).toBe(true);
      expect(
        (await h.call("collapse_element", { ref: row.ref, expect: { state: "collapsed" } })).structured
          .verified,
      ).toBe(true);
    });

    it("a right-click context menu (another top-level of the process) appears for wait_for_element, its item is invoked by ref, the menu closes", async () => {
      const entries = (await find(factory, { role: "edit" })).filter(
        (e) => shown(e) && e.states.includes("editable"),
      );
      expect(entries.length).toBeGreaterThan(0);
      const entry = entries[0]!;
      // With text in it, the entry's "Select All" is sensitive.
      // Entering text is the text class: it takes a text token, as send_text does.
      const textToken = (await h.call("request_confirmation", { hwnd: factory.hwnd, action_class: "text" }))
        .structured.confirmation_token;
      expect(
        (await h.call("set_element_value", { ref: entry.ref, value: "hello", confirmation_token: textToken }))
          .isError,
      ).toBe(false);
      // Nothing is open yet, and something never there times out.
      expect(
        (
          await h.call("wait_for_element", {
            hwnd: factory.hwnd,
            name_contains: "Select All",
            timeout_ms: 300,
          })
        ).code,
      ).toBe("timeout");
      // The menu appears about 1 s after the wait started.
      const pending = h.call("wait_for_element", {
        hwnd: factory.hwnd,
        name_contains: "Select All",
        role: "menu_item",
        state: "enabled",
        timeout_ms: 25_000,
      });
      await new Promise((r) => setTimeout(r, 1000));
      const live = (await p.desktop.getWindow(factory.hwnd))!;
      xdotool("windowactivate", "--sync", factory.hwnd);
      const cx = live.rect[0] + ((entry.rect![0] + entry.rect![2]) >> 1);
      const cy = live.rect[1] + ((entry.rect![1] + entry.rect![3]) >> 1);
      xdotool("mousemove", "--sync", String(cx), String(cy));
      xdotool("click", "3");
      const r = await pending;
      expect(r.isError).toBe(false);
      const item = r.structured.element as Element;
      expect(item).toMatchObject({ role: "menu_item", popup: true });
      const tree = await h.ok("inspect_tree", {
        detail: "full",
        hwnd: factory.hwnd,
        max_depth: 1,
        max_nodes: 200,
      });
      expect((tree.popups as Element[]).length).toBeGreaterThan(0);
      expect((tree.popups as Element[])[0]?.popup).toBe(true);
      const invoked = await h.call("invoke_element", {
        ref: item.ref,
        expect: { gone: true, timeout_ms: 5000 },
      });
      expect(invoked.code ?? "ok").toBe("ok");
      expect(invoked.structured.verified).toBe(true);
      // The menu is closed: its items are no longer found (hidden popups are not searched).
      await waitFor("menu closed", async () => {
        const r = await h.ok("find_elements", {
          detail: "full",
          hwnd: factory.hwnd,
          name_contains: "Select All",
        });
        return (r.elements as unknown[]).length === 0 ? true : null;
      });
    });

    it("scroll_into_view brings a far gtk3-demo row inside the scrolled window's viewport", async () => {
      const live = (await p.desktop.getWindow(demo.hwnd))!;
      const height = live.rect[3] - live.rect[1];
      const rows = (await find(demo, { role: "cell", max_results: 500 })).filter(
        (e) =>
          e.patterns.includes("scroll_item") &&
          e.name &&
          e.rect !== null &&
          (e.rect[1] < 0 || e.rect[1] >= height),
      );
      expect(rows.length).toBeGreaterThan(0);
      const far = rows[rows.length - 1]!;
      expect(far.states).toContain("offscreen");
      const nodes = await walk(demo);
      const node = nodes.find(
        (n) => n.f.role === "cell" && n.f.name === far.name && n.f.rect?.[0] === far.rect![0] + live.rect[0],
      );
      expect(node).toBeDefined();
      const pane = nodes.find(
        (n) => n.f.class_name === "scroll pane" && n.f.rect && n.f.rect[3] - n.f.rect[1] > 100,
      )!;
      const view = await extents(pane.h);
      const r = await h.call("scroll_into_view", { ref: far.ref });
      expect(r.isError).toBe(false);
      await waitFor("row in view", async () => {
        const e = await extents(node!.h);
        return e[1] >= view[1] && e[3] <= view[3] ? true : null;
      });
      const after = (await find(demo, { role: "cell", name_contains: far.name!, max_results: 50 })).find(
        (e) => e.ref === far.ref,
      );
      expect(after?.states).not.toContain("offscreen");
    });

    it("select_option selects a combo-box entry by name (read back through AT-SPI's Selection)", async () => {
      const combos = (await find(factory, { role: "combo_box" })).filter(
        (e) => shown(e) && e.patterns.includes("selection"),
      );
      const nodes = await walk(factory);
      let combo: Element | null = null;
      let items: string[] = [];
      for (const c of combos) {
        const n = nodeOf(nodes, factory, c);
        const menu = nodes.find((x) => x.h.parent === n.h && x.f.role === "menu");
        const names = nodes
          .filter((x) => menu && x.h.parent === menu.h && x.f.role === "menu_item")
          .map((x) => x.f.name ?? "");
        if (names.length >= 3) {
          combo = c;
          items = names;
          break;
        }
      }
      expect(combo).not.toBeNull();
      const node = nodeOf(nodes, factory, combo!).h;
      const isSelected = async (i: number) =>
        (await call(node, "org.a11y.atspi.Selection", "IsChildSelected", "i", [i]))[0] === true;
      const pick = (await isSelected(2)) ? 1 : 2;
      const r = await h.call("select_option", { ref: combo!.ref, name: items[pick]!.toUpperCase() });
      expect(r.isError).toBe(false);
      await waitFor("selected", async () => ((await isSelected(pick)) ? true : null));
      expect((await h.call("select_option", { ref: combo!.ref, name: "no such entry" })).code).toBe(
        "target_not_found",
      );
    });

    it("tools/list under an observe-only policy lists no input tool", async () => {
      const o = await McpHarness.start({
        DESKTOP_AUTOMATION_ALLOWED_TITLES: "*",
        DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe",
      });
      try {
        const names = (await o.client.listTools()).tools.map((t) => t.name);
        expect(names).toContain("screenshot_window");
        for (const n of [
          "click_window",
          "send_text",
          "send_key",
          "drag_window",
          "invoke_element",
          "click_element",
          "select_option",
          "inspect_tree",
        ])
          expect(names).not.toContain(n);
      } finally {
        await o.close();
      }
    });
  },
);
