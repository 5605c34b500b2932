import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform, WindowInfo } from "../../src/shared/platform.js";
import { CLI, LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import {
  type App,
  approveConsentDialog,
  atspiBus,
  atspiText,
  parseXwd,
  startApp,
  startSession,
  UNSAFE_XTEST,
  waitFor,
  waitForWindow,
  X11_AVAILABLE,
  X11_REQUIRED,
  type X11Session,
  xdotool,
  xwdRootRaw,
} from "./support.js";

/**
 * End to end over stdio: the built CLI (`node dist/cli.js serve`, UIINSPECT_PLATFORM unset → x11)
 * on a private Xvfb desktop with real apps; consent answered by clicking the real zenity dialog.
 */

const HAVE_CLI = existsSync(CLI);
if (X11_AVAILABLE && !HAVE_CLI && !X11_REQUIRED) {
  process.stderr.write("x11 e2e skipped: dist/cli.js is missing (npm run build)\n");
}

describe.skipIf(!X11_AVAILABLE || (!HAVE_CLI && !X11_REQUIRED))(
  "x11 end to end over stdio (built CLI)",
  () => {
    let session: X11Session;
    let p: Platform;
    let h: McpHarness;
    let entryApp: App;
    let formsApp: App;
    let entry: WindowInfo;
    let forms: WindowInfo;
    const mask: [number, number, number, number] = [20, 60, 120, 90];

    beforeAll(async () => {
      session = startSession();
      const { createX11Platform } = await import("../../src/platforms/x11/index.js");
      p = await createX11Platform({ workerKind: "other" });
      startApp("xterm", ["-T", "uix e2e term", "-geometry", "50x8+700+500"]);
      entryApp = startApp("zenity", ["--entry", "--title=uix e2e entry", "--text=Type", "--width=420"]);
      formsApp = startApp("zenity", [
        "--forms",
        "--title=uix e2e forms",
        "--add-entry=Login",
        "--add-password=Secret",
      ]);
      await waitForWindow(p, "uix e2e term");
      entry = await waitForWindow(p, "uix e2e entry");
      forms = await waitForWindow(p, "uix e2e forms");
      const dir = scratchDir("e2e");
      const policy = join(dir, "policy.json");
      writeFileSync(
        policy,
        JSON.stringify({
          schema_version: 1,
          policy_id: "x11-e2e",
          application: { executable_path: entry.instance!.exe_path, title_patterns: ["uix e2e *"] },
          allowed_actions: ["observe", "inspect", "hover", "click", "interact", "key", "text", "close"],
          safe_regions: [
            { name: "body", rect: [0, 0, entry.rect[2] - entry.rect[0], entry.rect[3] - entry.rect[1]] },
          ],
          screenshot_masks: [{ rect: mask }],
        }),
      );
      h = await McpHarness.start({
        ...UNSAFE_XTEST,
        ...LOOSE_BUDGETS,
        DESKTOP_AUTOMATION_POLICY_FILE: policy,
        UIINSPECT_CONSENT_TIMEOUT_MS: "60000",
        // The input worker restores a remapped spare keycode after this settle time; GTK on a loaded
        // machine may translate the key later than the default 300 ms and drop —, ✓ or 😀.
        UIINSPECT_X11_REMAP_SETTLE_MS: "1500",
      });
    }, 120_000);

    afterAll(async () => {
      await h?.close();
      await p?.dispose();
      session?.stop();
    });

    it("reports the x11 platform and lists only windows the policy allows", async () => {
      const health = await h.ok("health_check");
      expect(health.platform).toBe("x11");
      const list = (await h.ok("list_windows")).windows as Array<{
        title: string;
        hwnd: string;
        pid: number;
      }>;
      const titles = list.map((w) => w.title).sort();
      expect(titles).toEqual(["uix e2e entry", "uix e2e forms"]);
      expect(list.find((w) => w.title === "uix e2e entry")?.pid).toBe(entryApp.child.pid);
    });

    it("asks through our own consent dialog; clicking Allow grants", async () => {
      const pending = h.call("request_access", { hwnd: entry.hwnd });
      await approveConsentDialog();
      const r = await pending;
      expect(r.isError).toBe(false);
      expect(r.structured.decision).toBe("approved");
      expect(r.structured.source).toBe("dialog");
      const forms2 = h.call("request_access", { hwnd: forms.hwnd });
      await approveConsentDialog();
      expect((await forms2).structured.decision).toBe("approved");
    });

    it("screenshots a window with a mask; unmasked pixels equal an independent root capture", async () => {
      await p.desktop.activateWindow(entry.hwnd);
      await waitFor("entry in front", async () => (await p.desktop.getWindow(entry.hwnd))?.foreground);
      const live = (await p.desktop.getWindow(entry.hwnd))!;
      // A caret or focus ring may change a few pixels between two captures: compare against xwd
      // taken just before and just after, over a few attempts. Wrong pixels fail every attempt.
      let last = "";
      for (let attempt = 0; attempt < 6; attempt++) {
        if (attempt > 0) await new Promise((r) => setTimeout(r, 250));
        const beforeRaw = xwdRootRaw();
        const r = await h.call("screenshot_window", { hwnd: entry.hwnd, region_name: "body" });
        const afterRaw = xwdRootRaw();
        const before = parseXwd(beforeRaw);
        const after = parseXwd(afterRaw);
        expect(r.structured.error ?? null).toBeNull();
        const img = r.content.find((c) => c.type === "image")!;
        const png = PNG.sync.read(Buffer.from(img.data!, "base64"));
        expect(png.width).toBe(live.rect[2] - live.rect[0]);
        expect(png.height).toBe(live.rect[3] - live.rect[1]);
        let same = 0;
        let differ = 0;
        let maskedEqual = 0;
        for (let y = 0; y < png.height; y++) {
          for (let x = 0; x < png.width; x++) {
            const d = (y * png.width + x) * 4;
            const s = ((live.rect[1] + y) * before.width + live.rect[0] + x) * 4;
            const eqTo = (root: Uint8Array) =>
              png.data[d] === root[s] && png.data[d + 1] === root[s + 1] && png.data[d + 2] === root[s + 2];
            const eq = eqTo(before.rgba) || eqTo(after.rgba);
            const inMask = x >= mask[0] && x < mask[2] && y >= mask[1] && y < mask[3];
            if (inMask) {
              if (eq) maskedEqual++;
            } else if (eq) same++;
            else differ++;
          }
        }
        // The masked area never shows the window's pixels (at most a few coincide with the fill).
        expect(maskedEqual).toBeLessThan(((mask[2] - mask[0]) * (mask[3] - mask[1])) / 2);
        expect(same).toBeGreaterThan(0);
        if (differ === 0) return;
        last = `${differ} unmasked pixels differ`;
      }
      throw new Error(last);
    });

    it("refuses a click on a point an always-on-top window covers (checked in the worker before the effect)", async () => {
      const term = (await p.desktop.listWindows()).find((w) => w.title === "uix e2e term")!;
      xdotool("windowmove", "--sync", term.hwnd, String(forms.rect[0] + 10), String(forms.rect[1] + 40));
      const { XConnection } = await import("../../src/platforms/x11/xconn.js");
      const x11 = XConnection.open();
      try {
        // _NET_WM_STATE add _NET_WM_STATE_ABOVE: the xterm stays over the foreground forms window.
        x11.sendClientMessage(
          x11.root,
          Number(term.hwnd),
          x11.atoms._NET_WM_STATE,
          [1, x11.atoms._NET_WM_STATE_ABOVE, 0, 2, 0],
          true,
        );
      } finally {
        x11.close();
      }
      await p.desktop.activateWindow(forms.hwnd);
      const covered = await waitFor("xterm above the foreground forms window", async () => {
        const all = await p.desktop.listWindows();
        const t = all.find((w) => w.hwnd === term.hwnd)!;
        const f = all.find((w) => w.hwnd === forms.hwnd)!;
        return f.foreground && t.on_top && t.z < f.z && t.rect[0] < f.rect[2] && t.rect[1] < f.rect[3]
          ? t
          : null;
      });
      const f = (await p.desktop.getWindow(forms.hwnd))!;
      const covX = covered.rect[0] + 5 - f.rect[0];
      const covY = covered.rect[1] + 5 - f.rect[1];
      const r = await h.call("click_window", { hwnd: forms.hwnd, x: covX, y: covY });
      expect(r.isError).toBe(true);
      expect(r.code).toBe("occluded");
      xdotool("windowmove", "--sync", term.hwnd, "900", "600");
    });

    it("clicks into the GTK entry and types text (confirmed), verified through AT-SPI", async () => {
      const s = await p.accessibility.openSession(entry);
      let node: { bus: string; path: string } | null = null;
      let rect: number[] | null = null;
      const queue = [await s.root()];
      while (queue.length > 0 && !node) {
        const n = queue.shift();
        const f = await s.facts(n);
        if (f.role === "edit") {
          node = n as { bus: string; path: string };
          rect = f.rect;
        }
        queue.push(...(await s.children(n)));
      }
      await s.dispose();
      await p.desktop.activateWindow(entry.hwnd);
      await waitFor("entry in front", async () => (await p.desktop.getWindow(entry.hwnd))?.foreground);
      const live = (await p.desktop.getWindow(entry.hwnd))!;
      const x = Math.floor((rect![0]! + rect![2]!) / 2) - live.rect[0];
      const y = Math.floor((rect![1]! + rect![3]!) / 2) - live.rect[1];
      const click = await h.call("click_window", { hwnd: entry.hwnd, x, y });
      expect(click.isError).toBe(false);
      const token = await h.ok("request_confirmation", { action_class: "text", hwnd: entry.hwnd });
      const typed = "typed over MCP — ✓ 😀";
      const sent = await h.call("send_text", {
        hwnd: entry.hwnd,
        text: typed,
        confirmation_token: token.token_id,
      });
      expect(sent.isError).toBe(false);
      const bus = await atspiBus();
      try {
        await waitFor("typed text", async () => ((await atspiText(bus, node!)) === typed ? true : null));
      } finally {
        bus.disconnect();
      }
    });

    it("inspects the forms window with the password field redacted and invokes a button", async () => {
      const tree = await h.ok("inspect_tree", { detail: "full", hwnd: forms.hwnd });
      const all: Array<Record<string, unknown>> = [];
      const visit = (n: Record<string, unknown>) => {
        all.push(n);
        for (const c of (n.children as Array<Record<string, unknown>> | undefined) ?? []) visit(c);
      };
      visit(tree.root as Record<string, unknown>);
      const pw = all.filter((n) => n.is_password === true);
      expect(pw.length).toBe(1);
      expect(pw[0]!.name).toBeNull();
      const found = await h.ok("find_elements", {
        detail: "full",
        hwnd: entry.hwnd,
        role: "button",
        name_contains: "OK",
      });
      const ok = (found.elements as Array<{ ref: string }>)[0]!;
      const r = await h.call("invoke_element", { ref: ok.ref });
      expect(r.isError).toBe(false);
      expect(await entryApp.exited).toBe(0);
      expect(entryApp.stdout()).toBe("typed over MCP — ✓ 😀\n");
    });

    it("closes a window with WM_DELETE_WINDOW after confirmation; then the target is gone", async () => {
      const token = await h.ok("request_confirmation", { action_class: "close", hwnd: forms.hwnd });
      const r = await h.call("close_window", { hwnd: forms.hwnd, confirmation_token: token.token_id });
      expect(r.isError).toBe(false);
      await formsApp.exited;
      // zenity exits without destroying its window: it lives until the X server processes the
      // closed connection.
      await waitFor("forms window gone", async () =>
        (await p.desktop.getWindow(forms.hwnd)) === null ? true : null,
      );
      const again = await h.call("get_window_state", { hwnd: forms.hwnd });
      expect(again.isError).toBe(true);
      expect(["target_gone", "target_not_found"]).toContain(again.code);
      // The server keeps serving.
      expect((await h.ok("health_check")).platform).toBe("x11");
    });

    it("answers a window whose process was killed mid-session with a code and keeps serving", async () => {
      const victim = startApp("zenity", ["--info", "--title=uix e2e victim", "--text=bye"]);
      const w = await waitForWindow(p, "uix e2e victim");
      const before = await h.call("get_window_state", { hwnd: w.hwnd });
      expect(before.isError).toBe(false);
      victim.child.kill("SIGKILL");
      await victim.exited;
      await waitFor("victim window gone", async () =>
        (await p.desktop.getWindow(w.hwnd)) === null ? true : null,
      );
      const after = await h.call("get_window_state", { hwnd: w.hwnd });
      expect(after.isError).toBe(true);
      expect(["target_gone", "target_not_found"]).toContain(after.code);
      const shot = await h.call("screenshot_window", { hwnd: w.hwnd, region_name: "body" });
      expect(shot.isError).toBe(true);
      expect((await h.ok("list_windows")).windows).toBeDefined();
    });
  },
);
