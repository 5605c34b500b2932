import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import { grabServer, openX11Desk, type X11Desk } from "./desk.js";
import { approveConsentDialog, startApp, UNSAFE_XTEST, waitForWindow, x11CliSuite } from "./support.js";

/**
 * Another local program grabs the X server while health_check asks the desktop. Every X request
 * of ours then waits for the grab to end: health_check gives up on its own wait (5 s) and says so
 * (`worker_timeout` in its platform facts), but the capture worker is slow, not silent. Torn
 * down on that short wait, as it was, it took a screenshot in flight with it, and every call
 * there, although the worker's own deadline (UIINSPECT_WORKER_DEADLINE_MS, 15 s) had not come.
 * The grab here is held 8 s: past the 5 s wait and its 1 s grace, within the deadline.
 */

const TITLE = "uix health grab";
const GRAB_MS = 8000;

interface WorkerFacts {
  kind: string;
  restarts: number;
  crashes: number;
  timeouts: number;
}

describe.skipIf(!x11CliSuite("health-grab"))(
  "x11: health_check while another program grabs the X server (built CLI over stdio, zenity)",
  () => {
    let desk: X11Desk;
    let h: McpHarness;
    let hwnd: string;

    beforeAll(async () => {
      desk = await openX11Desk();
      startApp("zenity", ["--entry", `--title=${TITLE}`, "--text=Type here"]);
      const w = await waitForWindow(desk.p, TITLE);
      hwnd = w.hwnd;
      h = await McpHarness.start({
        ...UNSAFE_XTEST,
        ...LOOSE_BUDGETS,
        DESKTOP_AUTOMATION_ALLOWED_TITLES: TITLE,
        DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: w.instance?.exe_path ?? "",
        DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe",
        DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "true",
      });
      const pending = h.call("request_access", { hwnd });
      await approveConsentDialog();
      expect((await pending).structured.decision).toBe("approved");
      expect((await h.call("screenshot_window", { hwnd })).code ?? "ok").toBe("ok");
    }, 180_000);

    afterAll(async () => {
      await h?.close();
      await desk?.close();
    });

    const capture = async (): Promise<WorkerFacts> => {
      const health = await h.ok("health_check");
      const w = (health.workers as WorkerFacts[]).find((x) => x.kind === "capture");
      if (!w) throw new Error("no capture worker in health_check");
      return w;
    };

    it("health_check answers that the desktop did not, and the worker and the shot in flight live on", async () => {
      const before = await capture();
      // Whatever happens below, the grab ends.
      const grab = grabServer(GRAB_MS + 4000);
      try {
        const shot = h.call("screenshot_window", { hwnd });
        const health = h.call("health_check", {});
        const answered = await health;
        expect(grab.held, "health_check answered under the grab").toBe(true);
        expect(answered.structured.status).not.toBe("ok");
        expect((answered.structured.platform_facts as { error?: string }).error).toBe("worker_timeout");
        // Past the old teardown (the 5 s wait and 1 s of grace), still under the grab.
        await sleep(GRAB_MS - 5000);
        expect(grab.held).toBe(true);
        grab.end();
        const r = await shot;
        expect(r.code ?? "ok", JSON.stringify(r.structured)).toBe("ok");
      } finally {
        grab.end();
      }
      const after = await capture();
      expect(after.timeouts, "capture worker timeouts").toBe(before.timeouts);
      expect(after.restarts, "capture worker restarts").toBe(before.restarts);
      expect(after.crashes).toBe(before.crashes);
      const again = await h.ok("health_check");
      expect((again.platform_facts as { error?: string }).error).toBeUndefined();
    }, 60_000);
  },
);
