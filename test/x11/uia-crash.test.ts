import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RemoteClient } from "../support/remote.js";
import { childProcesses } from "../support/serverProcess.js";
import { openX11Desk, type X11Desk } from "./desk.js";
import { type App, waitFor, x11CliSuite } from "./support.js";
import { okButtonRef, startForm, type TwoIdentities, twoIdentitiesOn } from "./twoIdentities.js";

/**
 * The instance's one uia worker killed under two identities' walks, on a real X server and a
 * real GTK app (zenity's form), with the workers as child processes (UIINSPECT_WORKER_ISOLATION=
 * process) so that the kill is the kernel's SIGKILL, not a fault the worker plays itself. The app
 * is stopped first, so both walks are inside the worker, waiting on the app's replies, when it
 * dies. Both calls answer worker_crashed with nothing of the form; every ref handed out before is
 * stale and presses nothing (the form's OK would end the app); one new worker serves both
 * identities; the dead one left no process and no X client behind.
 */

const TITLE = "uix crash form";
const LABELS = ["Login", "Mail"];
const UIA_ENTRY = "workers/uia/main.js";

describe.skipIf(!x11CliSuite("uia-crash"))(
  "x11: the instance's shared uia worker (a child process) killed under two identities' walks",
  () => {
    let desk: X11Desk;
    let app: App;
    let hwnd: string;
    let ids: TwoIdentities;

    beforeAll(async () => {
      desk = await openX11Desk();
      const form = await startForm(desk, TITLE);
      app = form.app;
      const w = form.w;
      hwnd = w.hwnd;
      ids = await twoIdentitiesOn(w, {
        UIINSPECT_WORKER_ISOLATION: "process",
        // Far beyond the kill below: the answer must come from the crash, not a deadline.
        UIINSPECT_WORKER_DEADLINE_MS: "120000",
        UIINSPECT_TREE_DEADLINE_MS: "60000",
      });
    }, 180_000);

    afterAll(async () => {
      if (app?.child.exitCode === null && app.child.pid) process.kill(app.child.pid, "SIGCONT");
      await ids?.close();
      await desk?.close();
    });

    const uiaWorkers = () => childProcesses(ids.remote.proc.pid, UIA_ENTRY);
    const okButton = (c: RemoteClient) => okButtonRef(c, hwnd);
    const uiaStats = async () => {
      const health = await ids.alice.ok("health_check");
      const w = (health.workers as Array<{ kind: string; inflight: number; crashes: number }>).find(
        (k) => k.kind === "uia",
      );
      if (!w) throw new Error("no uia worker in health_check");
      return w;
    };
    const appAlive = async () =>
      (await desk.p.desktop.getWindow(hwnd)) !== null && app.child.exitCode === null;

    it("both walks in flight answer worker_crashed; the old refs are stale; one new worker serves both", async () => {
      const { alice, bob } = ids;
      await alice.ok("inspect_tree", { hwnd });
      await bob.ok("inspect_tree", { hwnd });
      const aliceOk = await okButton(alice);
      const bobOk = await okButton(bob);
      const before = uiaWorkers();
      expect(before, "one uia worker for the instance").toHaveLength(1);
      const dead = before[0] ?? 0;
      expect(desk.clientsOf(dead), "the worker holds its own X connections").toBeGreaterThan(0);

      const appPid = app.child.pid ?? 0;
      process.kill(appPid, "SIGSTOP");
      let answers: Array<{ code?: string | undefined }>;
      try {
        const walks = [
          alice.call("inspect_tree", { hwnd, detail: "full" }),
          bob.call("find_elements", { hwnd, name_contains: "OK", detail: "full" }),
        ];
        // Both messages are with the worker, which waits on the stopped app's replies.
        await waitFor("both walks in the worker", async () =>
          (await uiaStats()).inflight >= 2 ? true : null,
        );
        await sleep(300);
        process.kill(dead, "SIGKILL");
        answers = await Promise.all(walks);
      } finally {
        process.kill(appPid, "SIGCONT");
      }
      for (const r of answers) {
        expect(r.code, JSON.stringify(r)).toBe("worker_crashed");
        for (const l of LABELS) expect(JSON.stringify(r)).not.toContain(l);
      }
      expect((await uiaStats()).crashes).toBe(1);
      await waitFor(
        "the killed worker reaped",
        async () => (existsSync(`/proc/${dead}`) ? null : true),
        10_000,
      );
      expect(desk.clientsOf(dead), "no X client of the dead worker").toBe(0);

      // Every ref of the old session, one's own or the other's, is stale and presses nothing.
      for (const [c, ref] of [
        [alice, aliceOk],
        [bob, bobOk],
        [alice, bobOk],
      ] as const) {
        expect((await c.call("click_element", { ref })).code).toBe("element_stale");
      }
      await sleep(500);
      expect(await appAlive()).toBe(true);

      // One new worker serves both identities again.
      const a = await alice.ok("inspect_tree", { hwnd, detail: "full" });
      const b = await bob.ok("inspect_tree", { hwnd, detail: "full" });
      expect(b.node_count).toBe(a.node_count);
      const after = uiaWorkers();
      expect(after).toHaveLength(1);
      expect(after[0]).not.toBe(dead);
      const again = await okButton(bob);
      expect(again).not.toBe(bobOk);
      // The control: the new ref does press OK, and the form ends.
      expect((await bob.call("click_element", { ref: again })).isError).toBe(false);
      await waitFor("the form ended by its OK", async () => ((await appAlive()) ? null : true), 10_000);
    }, 120_000);
  },
);
