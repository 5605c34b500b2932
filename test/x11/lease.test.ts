import { existsSync, mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform } from "../../src/shared/platform.js";
import { answerDialog } from "../lease/helpers.js";
import { CLI, LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import {
  type App,
  runCli,
  startApp,
  startSession,
  stopOwnBroker,
  UNSAFE_XTEST,
  waitFor,
  waitForWindow,
  X11_AVAILABLE,
  X11_REQUIRED,
  type X11Session,
} from "./support.js";

/**
 * UIINSPECT_LEASE=broker end to end: the real manager (`cli.js manager lease …`), the real
 * broker it starts, its own dialog answered by a click, and two MCP servers (built CLI
 * over stdio, X11 backend) validating every operation against it and failing closed.
 */
const HAVE_CLI = existsSync(CLI);

/**
 * Clicks Allow (the bottom-right button) of the broker's own dialog like a person, placed
 * relative to the dialog (under a window manager it is reparented), repeated until it is gone.
 */
function approveLeaseDialog(): Promise<void> {
  const display = process.env.DISPLAY;
  if (!display) throw new Error("no DISPLAY for the lease dialog");
  return answerDialog(display, "approve");
}

describe.skipIf(!X11_AVAILABLE || (!HAVE_CLI && !X11_REQUIRED))(
  "unattended lease with MCP servers (x11)",
  () => {
    let session: X11Session;
    let p: Platform;
    let term: App;
    let env: Record<string, string>;
    const servers: McpHarness[] = [];

    beforeAll(async () => {
      session = startSession();
      const { createX11Platform } = await import("../../src/platforms/x11/index.js");
      p = await createX11Platform({ workerKind: "other" });
      term = startApp("xterm", ["-T", "uix lease term", "-geometry", "50x8+100+100"]);
      await waitForWindow(p, "uix lease term");
      const root = scratchDir("lease");
      const run = join(root, "run");
      mkdirSync(run, { mode: 0o700 });
      env = {
        ...(process.env as Record<string, string>),
        HOME: root,
        XDG_RUNTIME_DIR: run,
        XDG_STATE_HOME: join(root, "state"),
        // The broker's dialog ignores XTest (all Xvfb has) unless this unsafe test setting is on.
        ...UNSAFE_XTEST,
      };
      const pid = term.child.pid;
      if (pid === undefined) throw new Error("xterm did not start");
      const serverEnv = {
        HOME: root,
        XDG_RUNTIME_DIR: run,
        XDG_STATE_HOME: join(root, "state"),
        UIINSPECT_LEASE: "broker",
        DESKTOP_AUTOMATION_ALLOWED_TITLES: "uix lease*",
        DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: realpathSync(`/proc/${pid}/exe`),
        // hover and text are outside what a lease can carry: the lease grants only the overlap.
        DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe,inspect,click,hover,text",
        ...LOOSE_BUDGETS,
      };
      for (let i = 0; i < 2; i++)
        servers.push(await McpHarness.start(serverEnv, { name: `lease-server-${i}`, version: "1" }));
    }, 120_000);

    afterAll(async () => {
      await Promise.all(servers.map((s) => s.close()));
      await runCli(["manager", "lease", "revoke"], env).catch(() => undefined);
      stopOwnBroker(env);
      await p?.dispose();
      session?.stop();
    });

    it("no lease: fail closed; lease approved in its dialog: both servers get access without a consent dialog", async () => {
      for (const s of servers)
        expect((await s.call("request_access", { title_contains: "uix lease" })).code).toBe(
          "broker_unavailable",
        );
      const activation = runCli(["manager", "lease", "activate", "--hours", "1"], env);
      await approveLeaseDialog();
      const r = await activation;
      expect(r.code, r.out).toBe(0);
      for (const s of servers) {
        const a = await s.ok("request_access", { title_contains: "uix lease" });
        expect(a).toMatchObject({ decision: "approved", source: "lease" });
        // Default capabilities under the lease: the policy's ∩ the lease's, nothing beyond either.
        expect([...(a.capabilities as string[])].sort()).toEqual(["click", "inspect", "observe"]);
        const held = await s.ok("get_access_state", {});
        expect(JSON.stringify(held)).not.toMatch(/"(interact|key|hover|text)"/);
        // Asked for explicitly, a capability the lease cannot carry still needs a person.
        const text = await s.call("request_access", { title_contains: "uix lease", capabilities: ["text"] });
        expect(text.code).toBe("consent_required");
        const w = await s.ok("wait_for_title_change", { title_contains: "uix lease", timeout_ms: 0 });
        expect(w.changed).toBe(false);
        const health = await s.ok("health_check");
        expect(health.lease).toMatchObject({ mode: "broker", active: true, reachable: true });
      }
    }, 120_000);

    it("revoke: the next operation of every server fails closed", async () => {
      const r = await runCli(["manager", "lease", "revoke"], env);
      expect(r.code, r.out).toBe(0);
      for (const s of servers) {
        const w = await s.call("wait_for_title_change", { title_contains: "uix lease", timeout_ms: 0 });
        expect(w.code).toBe("lease_revoked");
      }
    }, 60_000);

    it("a lost broker: every server answers broker_unavailable", async () => {
      const activation = runCli(["manager", "lease", "activate", "--hours", "1"], env);
      await approveLeaseDialog();
      expect((await activation).code).toBe(0);
      await servers[0]!.ok("wait_for_title_change", { title_contains: "uix lease", timeout_ms: 0 });
      stopOwnBroker(env);
      await waitFor(
        "the broker to be gone",
        async () => {
          const w = await servers[0]!.call("wait_for_title_change", {
            title_contains: "uix lease",
            timeout_ms: 0,
          });
          return w.code === "broker_unavailable" ? true : null;
        },
        15_000,
      );
      for (const s of servers) {
        const w = await s.call("wait_for_title_change", { title_contains: "uix lease", timeout_ms: 0 });
        expect(w.code).toBe("broker_unavailable");
      }
    }, 90_000);
  },
);
