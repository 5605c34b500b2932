import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import { openX11Desk, type X11Desk } from "./desk.js";
import {
  approveConsentDialog,
  startApp,
  UNSAFE_XTEST,
  waitFor,
  waitForWindow,
  x11CliSuite,
} from "./support.js";

/**
 * A worker thread that is stopped (terminated: idle retirement, release, teardown) runs none of
 * its own clean-up, and Node closes only what the thread opened through Node. Its X connections,
 * opened in native code, stayed open in the server's process: two more X clients for every uia
 * worker that ever ran, until the X server's client limit, and a grab such a connection held
 * stayed held. The host now closes them once the thread has ended (src/supervisor/hosting/nativeFds.ts).
 * Counted from the X server's own view: X-Resource's clients per PID.
 */
describe.skipIf(!x11CliSuite("worker-teardown"))(
  "x11 worker threads leave no X client behind (built CLI over stdio)",
  () => {
    let desk: X11Desk;
    let h: McpHarness;
    let serverPid: number;
    let hwnd: string;

    beforeAll(async () => {
      desk = await openX11Desk();
      startApp("zenity", ["--entry", "--title=uix teardown entry", "--text=Type here"]);
      const w = await waitForWindow(desk.p, "uix teardown entry");
      hwnd = w.hwnd;
      h = await McpHarness.start({
        ...UNSAFE_XTEST,
        ...LOOSE_BUDGETS,
        DESKTOP_AUTOMATION_ALLOWED_TITLES: "uix teardown entry",
        DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: w.instance?.exe_path ?? "",
        DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe,inspect",
        // Retired soon after each walk: every walk below starts a fresh uia worker.
        UIINSPECT_UIA_IDLE_RETIRE_MS: "400",
      });
      const pid = (h.client.transport as StdioClientTransport | undefined)?.pid;
      if (!pid) throw new Error("no server pid");
      serverPid = pid;
      const pending = h.call("request_access", { hwnd });
      await approveConsentDialog();
      const r = await pending;
      expect(r.structured.decision).toBe("approved");
    }, 180_000);

    afterAll(async () => {
      await h?.close();
      await desk?.close();
    });

    const clients = () => desk.clientsOf(serverPid);
    const retirements = async () => {
      const health = await h.ok("health_check");
      const workers = (health.workers ?? []) as Array<{ idle_retirements?: number }>;
      return workers.find((w) => w.idle_retirements !== undefined)?.idle_retirements ?? 0;
    };

    it("a retired uia worker's X connections are closed: the server's X clients come back to where they were", async () => {
      const before = clients();
      for (let round = 1; round <= 4; round++) {
        const tree = await h.ok("inspect_tree", { detail: "full", hwnd, max_depth: 3, max_nodes: 100 });
        expect(tree.node_count as number).toBeGreaterThan(0);
        // The walk's worker holds its own two X connections while it lives.
        expect(clients()).toBeGreaterThan(before);
        await waitFor(
          `retirement ${round}`,
          async () => ((await retirements()) >= round ? true : null),
          15_000,
        );
        await waitFor(
          `X clients back to ${before} after round ${round}`,
          async () => (clients() === before ? true : null),
          5_000,
        );
      }
    });
  },
);
