import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import type { WindowInfo } from "../../src/shared/platform.js";
import { type Attacker, settled } from "./attacker.js";
import { grantedTarget, waitFor, waitForWindow, x11CliSuite, xdotool } from "./support.js";

/**
 * The policy's title ceiling over every window of the granted process, end to end over stdio: one
 * process (test/x11/fixtures/attacker.c "family") shows its main window (the title the policy
 * allows), a second top-level whose title the policy refuses, stacked over part of the main
 * window and reaching beyond it, and a dialog transient for the main window beside it. The
 * dialog is a popup of the grant; the second top-level is a window of its own: no click, no
 * pixels, no point on it through the main window's grant.
 */

const HAVE_CC = spawnSync("sh", ["-c", "command -v cc"]).status === 0;

describe.skipIf(!x11CliSuite("title ceiling", { what: "no C compiler (cc)", ok: HAVE_CC }))(
  "x11 title ceiling over the granted process's other windows (built CLI over stdio)",
  () => {
    let family: Attacker;
    const f = grantedTarget({
      name: "ceiling",
      titlePatterns: ["uix family main"],
      actions: ["observe", "inspect", "hover", "click", "interact", "key"],
      async start(f) {
        family = await f.attack(["family", "uix family main", "uix refused", "uix popup"]);
        const main = await waitForWindow(f.p, "uix family main");
        await waitForWindow(f.p, "uix refused");
        await waitForWindow(f.p, "uix popup");
        return main;
      },
    });

    const win = async (hwnd: string) => (await f.p.desktop.getWindow(hwnd))!;
    const rel = (w: WindowInfo, sx: number, sy: number) => ({ x: sx - w.rect[0], y: sy - w.rect[1] });

    /** The main window focused, the refused one raised over it again without the focus. */
    async function arrange(): Promise<{ main: WindowInfo; other: WindowInfo; popup: WindowInfo }> {
      const main = f.target;
      await f.p.desktop.activateWindow(main.hwnd);
      await waitFor("main focused", async () => (await win(main.hwnd)).foreground);
      const otherId = String(family.more[0]);
      xdotool("windowraise", otherId);
      const popupId = String(family.more[1]);
      xdotool("windowraise", popupId);
      await waitFor("other above main", async () => {
        const all = await f.p.desktop.listWindows();
        const m = all.find((w) => w.hwnd === main.hwnd);
        const o = all.find((w) => w.hwnd === otherId);
        return m && o && o.z < m.z && m.foreground ? true : null;
      });
      return { main: await win(main.hwnd), other: await win(otherId), popup: await win(popupId) };
    }

    it("the refused top-level cannot be granted on its own", async () => {
      const r = await f.h.call("request_access", { hwnd: String(family.more[0]) });
      expect(r.code).toBe("target_not_allowed");
    });

    it("a click where the refused top-level covers the main window: occluded, it gets no press", async () => {
      const { main: m, other } = await arrange();
      const r = await f.h.call("click_window", {
        hwnd: m.hwnd,
        ...rel(m, other.rect[0] + 30, other.rect[1] + 40),
      });
      expect(r.code).toBe("occluded");
      await settled(family);
      expect(family.count("button other")).toBe(0);
      expect(family.count("button main")).toBe(0);
    });

    it("a point on the refused top-level beyond the main window: out_of_bounds, nothing pressed", async () => {
      const { main: m, other } = await arrange();
      expect(other.rect[2]).toBeGreaterThan(m.rect[2]);
      const r = await f.h.call("click_window", {
        hwnd: m.hwnd,
        ...rel(m, other.rect[2] - 10, other.rect[3] - 10),
      });
      expect(r.code).toBe("out_of_bounds");
      await settled(family);
      expect(family.count("button other")).toBe(0);
    });

    it("a screenshot of the main window where the refused top-level covers it: occluded, no pixels", async () => {
      await arrange();
      const r = await f.h.call("screenshot_window", { hwnd: f.target.hwnd, region_name: "body" });
      expect(r.code).toBe("occluded");
      expect(r.content.filter((c) => c.type === "image")).toHaveLength(0);
    });

    it("the dialog transient for the main window is its popup: a click on it lands there", async () => {
      const { main: m, popup } = await arrange();
      const before = family.count("button popup");
      const r = await f.h.call("click_window", {
        hwnd: m.hwnd,
        ...rel(
          m,
          Math.floor((popup.rect[0] + popup.rect[2]) / 2),
          Math.floor((popup.rect[1] + popup.rect[3]) / 2) + 10,
        ),
      });
      expect(r.code ?? "ok").toBe("ok");
      await waitFor("the popup pressed", async () => {
        await settled(family);
        return family.count("button popup") > before ? true : null;
      });
    });
  },
);
