import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform, WindowInfo } from "../../src/shared/platform.js";
import { CLI, type McpHarness } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import { type Attacker, buildAttacker, settled, startAttacker } from "./attacker.js";
import {
  atspiCall,
  type Element,
  type GtkDesk,
  nodeOf,
  shown,
  startGtkDesk,
  stopGtkDesk,
  walkTree,
} from "./gtk.js";
import { atspiText, waitFor, X11_AVAILABLE, X11_REQUIRED, xdotool } from "./support.js";

/**
 * click_element on an item of a real GTK context menu (an override-redirect top-level of the
 * granted process, holding GTK's pointer and keyboard grab) that lies OUTSIDE the granted main
 * window: the point is part of the granted window, the grab is proven the target's own through
 * RECORD, the item's effect happens and the menu closes. And the attack: another process's
 * override-redirect window over that item → refused, nothing clicked (the attacker counts every
 * button event the X server sends it). Built CLI over stdio, effects read back through the
 * test's own AT-SPI connection.
 */

const HAVE_CLI = existsSync(CLI);
const HAVE_CC = spawnSync("sh", ["-c", "command -v cc"]).status === 0;

describe.skipIf(!X11_AVAILABLE || (!(HAVE_CLI && HAVE_CC) && !X11_REQUIRED))(
  "x11 click_element on the granted process's popup menu outside its main window (built CLI over stdio)",
  () => {
    let d: GtkDesk;
    let p: Platform;
    let h: McpHarness;
    let factory: WindowInfo;
    let dir: string;
    let attackerBin: string;
    const attackers: Attacker[] = [];

    const attack = (args: string[]) => startAttacker(attackerBin, args, attackers);

    beforeAll(async () => {
      dir = scratchDir("popup");
      attackerBin = buildAttacker(dir);
      d = await startGtkDesk("inspect,interact,click,text");
      ({ p, h, factory } = d);
      // Only the factory on screen: the demo would cover the space the menu opens into.
      xdotool("windowminimize", "--sync", d.demo.hwnd);
    }, 180_000);

    afterAll(async () => {
      for (const a of attackers.splice(0)) await a.stop();
      await stopGtkDesk(d ?? {});
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const live = async () => (await p.desktop.getWindow(factory.hwnd))!;
    const find = async (args: Record<string, unknown>) =>
      (await h.ok("find_elements", { detail: "full", hwnd: factory.hwnd, ...args })).elements as Element[];
    const entries = async () =>
      (await find({ role: "edit" })).filter((e) => shown(e) && e.states.includes("editable"));
    /** A window-relative point outside the main window's own rect. */
    const outside = (w: WindowInfo, e: Element) => {
      const cy = (e.rect![1] + e.rect![3]) >> 1;
      const cx = (e.rect![0] + e.rect![2]) >> 1;
      return cy < 0 || cx < 0 || cy >= w.rect[3] - w.rect[1] || cx >= w.rect[2] - w.rect[0];
    };

    /**
     * Puts the factory almost off the screen's right edge, only a strip of its left side showing,
     * and right-clicks near the left end of its first entry: GTK flips the context menu to the
     * left of the pointer, outside the main window. Returns the entry's AT-SPI node and the
     * enabled menu items whose centre lies outside the main window.
     */
    async function openMenuOutside(): Promise<{
      entryNode: { bus: string; path: string };
      items: Element[];
    }> {
      const screen = await p.desktop.virtualScreen();
      const w0 = await live();
      const first = (await entries())[0]!;
      expect(first, "an editable entry").toBeDefined();
      const at = { x: first.rect![0] + 10, y: (first.rect![1] + first.rect![3]) >> 1 };
      const left = screen[2] - 8 - at.x;
      // Openbox keeps a strip of the window on screen (it stops the move about 136 px short).
      if (w0.rect[0] < screen[2] - 400) {
        xdotool("windowmove", "--sync", factory.hwnd, String(left), "40");
        await waitFor("factory moved right", async () =>
          (await live()).rect[0] >= screen[2] - 400 ? true : null,
        );
      }
      await p.desktop.activateWindow(factory.hwnd);
      await waitFor("factory focused", async () => (await live()).foreground);
      const w = await live();
      expect(w.rect[0] + at.x, "the right-click point is on screen").toBeLessThan(screen[2]);
      const entry = (await find({ role: "edit" })).find(
        (e) => e.rect !== null && e.rect[0] === first.rect![0] && e.rect[1] === first.rect![1],
      )!;
      const entryNode = nodeOf(await walkTree(p, w, true), w, entry).h;
      // Text in the entry and none of it selected: "Select All" is sensitive, its effect visible.
      // Entering text is the text class: it takes a text token, as send_text does.
      const textToken = (await h.call("request_confirmation", { hwnd: factory.hwnd, action_class: "text" }))
        .structured.confirmation_token;
      expect(
        (
          await h.call("set_element_value", {
            ref: entry.ref,
            value: "hello popup",
            confirmation_token: textToken,
          })
        ).isError,
      ).toBe(false);
      await atspiCall(d.bus, entryNode, "org.a11y.atspi.Text", "SetCaretOffset", "i", [0]);
      xdotool("mousemove", "--sync", String(w.rect[0] + at.x), String(w.rect[1] + at.y));
      xdotool("click", "3");
      const menu = await waitFor("menu items", async () => {
        const items = (await find({ role: "menu_item", max_results: 100 })).filter(
          (e) => e.popup === true && e.rect !== null && !e.offscreen,
        );
        return items.length > 0 ? items : null;
      });
      const now = await live();
      const items = menu.filter((e) => e.states.includes("enabled") && outside(now, e));
      return { entryNode, items };
    }

    async function selection(node: { bus: string; path: string }): Promise<[number, number]> {
      const n = (await atspiCall(d.bus, node, "org.a11y.atspi.Text", "GetNSelections"))[0] as number;
      if (n === 0) return [0, 0];
      const r = await atspiCall(d.bus, node, "org.a11y.atspi.Text", "GetSelection", "i", [0]);
      return [r[0] as number, r[1] as number];
    }

    const menuOpen = async () =>
      (await find({ role: "menu_item", max_results: 100 })).some((e) => e.popup === true && !e.offscreen);

    it("another process's override-redirect window over the popup item: occluded, nothing clicked, the menu stays", async () => {
      const { entryNode, items } = await openMenuOutside();
      const item = items.find((e) => /select all/i.test(e.name ?? "")) ?? items[0]!;
      expect(item, "an enabled menu item outside the main window").toBeDefined();
      const w = await live();
      const sx = w.rect[0] + ((item.rect![0] + item.rect![2]) >> 1);
      const sy = w.rect[1] + ((item.rect![1] + item.rect![3]) >> 1);
      try {
        const cover = await attack(["popup", String(sx - 15), String(sy - 8), "30", "16"]);
        const r = await h.call("click_element", { ref: item.ref });
        expect(r.code).toBe("occluded");
        await settled(cover);
        expect(cover.count("button")).toBe(0);
        expect(await selection(entryNode)).toEqual([0, 0]);
        expect(await atspiText(d.bus, entryNode)).toBe("hello popup");
        expect(await menuOpen()).toBe(true);
      } finally {
        for (const a of attackers.splice(0)) await a.stop();
        xdotool("key", "Escape");
        await waitFor("menu closed", async () => ((await menuOpen()) ? null : true));
      }
    });

    it("click_element on a context-menu item outside the main window: the item's effect happens, the menu closes", async () => {
      const { entryNode, items } = await openMenuOutside();
      const selectAll = items.find((e) => /select all/i.test(e.name ?? ""));
      expect(selectAll, `"Select All" outside the main window among ${items.length} items`).toBeDefined();
      expect(await selection(entryNode)).toEqual([0, 0]);
      const r = await h.call("click_element", {
        ref: selectAll!.ref,
        expect: { gone: true, timeout_ms: 5000 },
      });
      expect(r.code ?? "ok").toBe("ok");
      expect(r.structured.verified).toBe(true);
      await waitFor("all selected", async () =>
        (await selection(entryNode))[1] === "hello popup".length ? true : null,
      );
      await waitFor("menu closed", async () => ((await menuOpen()) ? null : true));
    });
  },
);
