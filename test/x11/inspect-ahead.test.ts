import { spawnSync } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { ServerHarness } from "../support/mcp.js";
import {
  type App,
  approveConsentDialog,
  grantedTarget,
  startApp,
  waitFor,
  waitForWindow,
  x11CliSuite,
  xdotool,
} from "./support.js";

/**
 * inspect_tree and find_elements on a real GTK app (zenity's form) over stdio: on the caller's
 * open session the walk is sent with the instance of its grant while the supervisor resolves the
 * target from the capture worker's listing. It answers the call only once that listing's target
 * was authorized for exactly that session and instance; a call refused meanwhile (the window
 * retitled out of the policy, the process gone) releases nothing of it.
 */

const HAVE_CC = spawnSync("sh", ["-c", "command -v cc"]).status === 0;
const TITLE = "uix ahead form";
const SECOND_TITLE = "uix ahead second";
const CANARY = "uix canary 51d0";
const LABELS = ["Login", "Mail"];

async function latestCounters(h: ServerHarness, tool: string): Promise<Record<string, unknown> | undefined> {
  const events = (await h.ok("get_audit_events", { limit: 50 })).events as Array<Record<string, unknown>>;
  return events.find((e) => e.tool === tool)?.counters as Record<string, unknown> | undefined;
}

describe.skipIf(!x11CliSuite("observations sent ahead", { what: "no C compiler (cc)", ok: HAVE_CC }))(
  "x11 observations sent ahead of their authorization (built CLI over stdio, zenity)",
  () => {
    let app: App;
    const f = grantedTarget({
      name: "ahead",
      titlePatterns: ["uix ahead *"],
      actions: ["observe", "inspect"],
      async start(f) {
        app = startApp("zenity", ["--forms", `--title=${TITLE}`, "--add-entry=Login", "--add-entry=Mail"]);
        return waitForWindow(f.p, TITLE);
      },
    });

    it("the second inspect_tree is answered by the walk sent ahead: the same tree", async () => {
      const hwnd = f.target.hwnd;
      const first = await f.h.call("inspect_tree", { hwnd, detail: "full" });
      expect(first.code ?? "ok").toBe("ok");
      const second = await f.h.call("inspect_tree", { hwnd, detail: "full" });
      expect(second.code ?? "ok").toBe("ok");
      expect(await latestCounters(f.h, "inspect_tree")).toMatchObject({ ahead: true });
      expect(second.structured.node_count).toBe(first.structured.node_count);
      expect(second.content[0]?.text).toBe(first.content[0]?.text);
      for (const l of LABELS) expect(second.content[0]?.text).toContain(l);
      const found = await f.h.call("find_elements", { hwnd, name_contains: "Mail" });
      expect(found.structured.count).toBeGreaterThan(0);
      expect(await latestCounters(f.h, "find_elements")).toMatchObject({ ahead: true });
    });

    it("the window retitled out of the policy between calls: target_not_allowed, nothing of the walk", async () => {
      const hwnd = f.target.hwnd;
      await f.h.ok("inspect_tree", { hwnd });
      xdotool("set_window", "--name", CANARY, hwnd);
      try {
        await waitFor("the new title listed", async () => (await f.live()).title === CANARY || null);
        for (const tool of ["inspect_tree", "find_elements"]) {
          const r = await f.h.call(tool, {
            hwnd,
            detail: "full",
            ...(tool === "find_elements" ? { role: "text" } : {}),
          });
          expect(r.code).toBe("target_not_allowed");
          // The walk went to the app for it all the same (the audit says so) and nothing of it left.
          expect(await latestCounters(f.h, tool)).toMatchObject({ ahead_sent: true });
          const out = JSON.stringify(r);
          for (const s of [...LABELS, CANARY]) expect(out).not.toContain(s);
        }
        const audit = JSON.stringify(await f.h.ok("get_audit_events", { limit: 50 }));
        expect(audit).not.toContain(CANARY);
        expect(f.h.stderr.join("\n")).not.toContain(CANARY);
      } finally {
        xdotool("set_window", "--name", TITLE, hwnd);
      }
      await waitFor("the title back", async () => (await f.live()).title === TITLE || null);
      // The grant stood: the next call is answered (ahead again: its session stayed open).
      const again = await f.h.call("inspect_tree", { hwnd });
      expect(again.code ?? "ok").toBe("ok");
      expect(await latestCounters(f.h, "inspect_tree")).toMatchObject({ ahead: true });
    });

    it("a second target stopped while the walk sent ahead waits on it, then killed: refused, no node of it; the first target is served on", async () => {
      // A second zenity of the same policy, granted on its own: this case ends its process.
      const second = startApp("zenity", [
        "--forms",
        `--title=${SECOND_TITLE}`,
        "--add-entry=Login",
        "--add-entry=Mail",
      ]);
      const w = await waitForWindow(f.p, SECOND_TITLE);
      const consent = f.h.call("request_access", { hwnd: w.hwnd });
      await approveConsentDialog();
      expect((await consent).structured.decision).toBe("approved");
      await f.h.ok("inspect_tree", { hwnd: w.hwnd });
      const pid = second.child.pid ?? 0;
      process.kill(pid, "SIGSTOP");
      let pending: ReturnType<ServerHarness["call"]>;
      try {
        // Its window is still listed (the X server holds it), so the call is authorized while the
        // walk sent ahead waits on an app that cannot answer; then the app dies under the walk.
        pending = f.h.call("inspect_tree", { hwnd: w.hwnd, detail: "full" });
        await sleep(500);
      } finally {
        second.child.kill("SIGKILL");
      }
      await second.exited;
      const r = await pending;
      expect(["target_gone", "target_not_found"], JSON.stringify(r)).toContain(r.code);
      for (const l of LABELS) expect(JSON.stringify(r)).not.toContain(l);
      expect(await latestCounters(f.h, "inspect_tree")).toMatchObject({ ahead_sent: true });
      const { structured } = await f.h.call("health_check");
      const workers = structured.workers as Array<{ kind: string; crashes: number; timeouts: number }>;
      expect(workers.find((x) => x.kind === "uia")).toMatchObject({ crashes: 0, timeouts: 0 });
      // The other instance's session is untouched: answered, and from a walk sent ahead again.
      const first = await f.h.call("inspect_tree", { hwnd: f.target.hwnd });
      expect(first.code ?? "ok").toBe("ok");
      expect(await latestCounters(f.h, "inspect_tree")).toMatchObject({ ahead: true });
    });

    it("the process killed between calls: refused, no node of it", async () => {
      const hwnd = f.target.hwnd;
      await f.h.ok("inspect_tree", { hwnd });
      app.child.kill("SIGKILL");
      await app.exited;
      await waitFor("the window gone", async () =>
        (await f.p.desktop.getWindow(hwnd)) === null ? true : null,
      );
      const r = await f.h.call("inspect_tree", { hwnd, detail: "full" });
      expect(["target_gone", "target_not_found"]).toContain(r.code);
      for (const l of LABELS) expect(JSON.stringify(r)).not.toContain(l);
      // Its session was still open: the walk went, to an app no longer on the bus.
      expect(await latestCounters(f.h, "inspect_tree")).toMatchObject({ ahead_sent: true });
    });
  },
);
