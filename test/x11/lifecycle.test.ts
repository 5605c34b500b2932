import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform, WindowInfo } from "../../src/shared/platform.js";
import { LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import {
  type App,
  approveConsentDialog,
  buttonCentre,
  pidAlive,
  startApp,
  startSession,
  UNSAFE_XTEST,
  waitFor,
  waitForWindow,
  type X11Session,
  x11CliSuite,
  xwdRoot,
} from "./support.js";

/**
 * Process-instance lifecycle over stdio against the built CLI on a private Xvfb desktop:
 * an approved app is killed and the same executable started again (new PID, same title; with a
 * new XID, and with the XID the X server hands out again) — the old grant and the old
 * confirmation token never carry over. Then the same flow with UIINSPECT_WORKER_ISOLATION=process.
 */

const TITLE = "uix life app";
const GONE = ["target_gone", "target_not_found"];

describe.skipIf(!x11CliSuite("lifecycle"))(
  "x11 process-instance lifecycle and process isolation (built CLI over stdio)",
  () => {
    let session: X11Session;
    let p: Platform;
    let policy: string;
    let h: McpHarness;
    let approved: { app: App; w: WindowInfo } | null = null;

    beforeAll(async () => {
      session = startSession();
      const { createX11Platform } = await import("../../src/platforms/x11/index.js");
      p = await createX11Platform({ workerKind: "other" });
      const probe = startApp("zenity", ["--info", "--title=uix life probe", "--text=probe"]);
      const w = await waitForWindow(p, "uix life probe");
      const exe = w.instance!.exe_path;
      probe.child.kill("SIGKILL");
      await probe.exited;
      const dir = scratchDir("life");
      policy = join(dir, "policy.json");
      writeFileSync(
        policy,
        JSON.stringify({
          schema_version: 1,
          policy_id: "x11-lifecycle",
          application: { executable_path: exe, title_patterns: ["uix life *"] },
          allowed_actions: ["observe", "click", "close"],
          safe_regions: [{ name: "corner", rect: [0, 0, 120, 60] }],
        }),
      );
      h = await McpHarness.start({
        ...LOOSE_BUDGETS,
        ...UNSAFE_XTEST,
        DESKTOP_AUTOMATION_POLICY_FILE: policy,
      });
    }, 180_000);

    afterAll(async () => {
      await h?.close();
      await p?.dispose();
      session?.stop();
    });

    async function approve(m: McpHarness, hwnd: string): Promise<Record<string, unknown>> {
      const pending = m.call("request_access", { hwnd });
      await approveConsentDialog();
      const r = await pending;
      expect(r.isError).toBe(false);
      return r.structured;
    }

    function startTarget(title = TITLE): App {
      return startApp("zenity", ["--question", `--title=${title}`, "--text=Proceed?"]);
    }

    async function kill(app: App, w: WindowInfo): Promise<void> {
      app.child.kill("SIGKILL");
      await app.exited;
      await waitFor("window gone", async () => ((await p.desktop.getWindow(w.hwnd)) === null ? true : null));
    }

    it("restart under a new XID: the old hwnd is gone, the new instance needs its own consent, the old token is invalid", async () => {
      const a = startTarget();
      const wa = await waitForWindow(p, TITLE);
      expect((await approve(h, wa.hwnd)).source).toBe("dialog");
      const token = await h.ok("request_confirmation", { action_class: "close", hwnd: wa.hwnd });
      expect((await h.call("screenshot_window", { hwnd: wa.hwnd, region_name: "corner" })).isError).toBe(
        false,
      );

      await kill(a, wa);
      expect(GONE).toContain((await h.call("get_window_state", { hwnd: wa.hwnd })).code);
      expect(GONE).toContain(
        (await h.call("screenshot_window", { hwnd: wa.hwnd, region_name: "corner" })).code,
      );

      // Another X client takes the freed client slot, so the restarted app gets a new XID.
      startApp("xterm", ["-T", "uix spacer", "-geometry", "20x4+900+600"]);
      await waitForWindow(p, "uix spacer");
      const b = startTarget();
      const wb = await waitForWindow(p, TITLE);
      expect(wb.hwnd).not.toBe(wa.hwnd);
      expect(wb.pid).not.toBe(wa.pid);
      expect(wb.instance!.exe_path).toBe(wa.instance!.exe_path);
      expect(GONE).toContain((await h.call("get_window_state", { hwnd: wa.hwnd })).code);
      expect(GONE).toContain((await h.call("click_window", { hwnd: wa.hwnd, x: 10, y: 10 })).code);
      // Same executable, same title: still a stranger until a person approves it.
      expect((await h.call("screenshot_window", { hwnd: wb.hwnd, region_name: "corner" })).code).toBe(
        "consent_required",
      );
      expect((await h.call("click_window", { hwnd: wb.hwnd, x: 10, y: 10 })).code).toBe("consent_required");
      expect((await h.call("close_window", { hwnd: wb.hwnd, confirmation_token: token.token_id })).code).toBe(
        "consent_required",
      );
      // A new dialog (not the kept decision of the dead instance).
      expect((await approve(h, wb.hwnd)).source).toBe("dialog");
      const close = await h.call("close_window", { hwnd: wb.hwnd, confirmation_token: token.token_id });
      expect(close.code).toBe("confirmation_invalid");
      expect(pidAlive(b.child.pid!)).toBe(true);
      expect(await p.desktop.getWindow(wb.hwnd)).not.toBeNull();
      expect((await h.call("screenshot_window", { hwnd: wb.hwnd, region_name: "corner" })).isError).toBe(
        false,
      );
      approved = { app: b, w: wb };
    });

    it("restart under the same XID (the X server reuses the client's id): no grant or token carries over", async () => {
      // The instance approved above (new consent dialogs are limited to 3 a minute per client).
      if (!approved) throw new Error("needs the approved instance of the previous test");
      const { app: b, w: wb } = approved;
      const token = await h.ok("request_confirmation", { action_class: "close", hwnd: wb.hwnd });
      await kill(b, wb);
      // Nothing connects in between: the restarted app gets the freed client slot, so the same XID.
      const c = startTarget();
      const wc = await waitForWindow(p, TITLE);
      expect(wc.pid).not.toBe(wb.pid);
      expect(wc.hwnd).toBe(wb.hwnd);
      // The hwnd the client holds now names another process instance: target_changed (docs/spec.md §3),
      // which revokes the grant; from then on the hwnd is a stranger (consent_required).
      const shot = await h.call("screenshot_window", { hwnd: wc.hwnd, region_name: "corner" });
      expect(shot.code).toBe("target_changed");
      const click = await h.call("click_window", { hwnd: wc.hwnd, x: 10, y: 10 });
      expect(click.code).toBe("consent_required");
      const state = (await h.ok("get_access_state")).grants as Array<{ pid?: number }>;
      expect(state.some((g) => g.pid === wb.pid)).toBe(false);
      expect((await approve(h, wc.hwnd)).source).toBe("dialog");
      const close = await h.call("close_window", { hwnd: wc.hwnd, confirmation_token: token.token_id });
      expect(close.code).toBe("confirmation_invalid");
      expect(pidAlive(c.child.pid!)).toBe(true);
      // A token for this instance works (and proves the refusal above was about the token).
      const fresh = await h.ok("request_confirmation", { action_class: "close", hwnd: wc.hwnd });
      const closed = await h.call("close_window", { hwnd: wc.hwnd, confirmation_token: fresh.token_id });
      expect(closed.isError).toBe(false);
      expect(await c.exited).not.toBeNull();
    });

    it("UIINSPECT_WORKER_ISOLATION=process: list, screenshot and click through child-process workers", async () => {
      const iso = await McpHarness.start(
        {
          ...LOOSE_BUDGETS,
          ...UNSAFE_XTEST,
          DESKTOP_AUTOMATION_POLICY_FILE: policy,
          UIINSPECT_WORKER_ISOLATION: "process",
        },
        { name: "uiinspect-iso", version: "1.0.0" },
      );
      try {
        const pid = (iso.client.transport as StdioClientTransport | undefined)?.pid;
        expect(pid).toBeTruthy();
        const app = startApp("zenity", ["--question", "--title=uix life iso", "--text=Proceed?"]);
        const w = await waitForWindow(p, "uix life iso");
        const list = (await iso.ok("list_windows")).windows as Array<{ hwnd: string; pid: number }>;
        expect(list.find((x) => x.hwnd === w.hwnd)?.pid).toBe(app.child.pid);
        // The workers are child processes of the server (node running the worker host).
        const children = execFileSync("ps", ["-o", "args=", "--ppid", String(pid)], { encoding: "utf8" });
        expect(children).toContain("workers/capture/main.js");
        expect(children).toContain("workers/input/main.js");
        await approve(iso, w.hwnd);
        await p.desktop.activateWindow(w.hwnd);
        await waitFor("iso window in front", async () => (await p.desktop.getWindow(w.hwnd))?.foreground);
        const live = (await p.desktop.getWindow(w.hwnd))!;
        // Screenshot: the region's pixels equal an independent root capture (before or after).
        let matched = false;
        for (let attempt = 0; attempt < 3 && !matched; attempt++) {
          const before = xwdRoot();
          const shot = await iso.call("screenshot_window", { hwnd: w.hwnd, region_name: "corner" });
          const after = xwdRoot();
          expect(shot.isError).toBe(false);
          const img = shot.content.find((c) => c.type === "image")!;
          const png = PNG.sync.read(Buffer.from(img.data!, "base64"));
          expect([png.width, png.height]).toEqual([120, 60]);
          let differ = 0;
          for (let y = 0; y < png.height; y++) {
            for (let x = 0; x < png.width; x++) {
              const d = (y * png.width + x) * 4;
              const s = ((live.rect[1] + y) * before.width + live.rect[0] + x) * 4;
              const eq = (root: Uint8Array) =>
                png.data[d] === root[s] && png.data[d + 1] === root[s + 1] && png.data[d + 2] === root[s + 2];
              if (!eq(before.rgba) && !eq(after.rgba)) differ++;
            }
          }
          matched = differ === 0;
        }
        expect(matched).toBe(true);
        // Click the dialog's "Yes" through the input worker process: zenity exits 0.
        const yes = await buttonCentre(p, live, "Yes");
        const click = await iso.call("click_window", {
          hwnd: w.hwnd,
          x: yes.x - live.rect[0],
          y: yes.y - live.rect[1],
        });
        expect(click.isError).toBe(false);
        expect(await app.exited).toBe(0);
        expect((await iso.ok("health_check")).platform).toBe("x11");
      } finally {
        await iso.close();
      }
    });
  },
);
