import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rectArea } from "../../src/shared/geometry.js";
import { SHOTS_IN_FLIGHT } from "../../src/shared/shots.js";
import type { RemoteClient } from "../support/remote.js";
import { grabServer, openX11Desk, type X11Desk } from "./desk.js";
import { type App, approveConsentDialog, waitFor, x11CliSuite } from "./support.js";
import { okButtonRef, startForm, type TwoIdentities, twoIdentitiesOn } from "./twoIdentities.js";

/**
 * One automation session per process instance, on a real X server and a real GTK app (zenity's
 * form), for two OAuth identities of one remote server (Streamable HTTP): both walk in the
 * instance's one uia worker, counted from the X server's own view (X-Resource's clients of the
 * server's PID: a uia worker holds its own X connections); a ref handed to one identity acts
 * for no other (the form's OK button, which would end the app); releasing one identity drops
 * only its refs; the worker ends with the last grant on the instance. The form's OK, pressed
 * last through the one ref that may press it, ends the app: the refusals before would have shown.
 */

const TITLE = "uix shared form";
const SHOT_MEMORY = 1024 * 1024;

interface UiaStats {
  kind: string;
  inflight?: number;
  queued?: number;
}

describe.skipIf(!x11CliSuite("shared-session"))(
  "x11: two identities on one instance share its one automation session (remote server, zenity)",
  () => {
    let desk: X11Desk;
    let app: App;
    let hwnd: string;
    let ids: TwoIdentities;
    let alice: RemoteClient;
    let bob: RemoteClient;
    /** The server's X clients before any uia worker ran. */
    let baseline: number;

    beforeAll(async () => {
      desk = await openX11Desk();
      const form = await startForm(desk, TITLE);
      app = form.app;
      const w = form.w;
      hwnd = w.hwnd;
      ids = await twoIdentitiesOn(w, {
        DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "true",
        // The least budget there is: about three of the form's shots (8 bytes a pixel) at once.
        DESKTOP_AUTOMATION_SCREENSHOT_MEMORY_BUDGET_BYTES: String(SHOT_MEMORY),
      });
      ({ alice, bob } = ids);
      // After consent (the capture worker and the prompter hold theirs by then), before any walk.
      baseline = clients();
    }, 180_000);

    afterAll(async () => {
      await ids?.close();
      await desk?.close();
    });

    const clients = () => desk.clientsOf(ids.remote.proc.pid);
    const okButton = (c: RemoteClient) => okButtonRef(c, hwnd);
    const appAlive = async () =>
      (await desk.p.desktop.getWindow(hwnd)) !== null && app.child.exitCode === null;

    let aliceOk: string;
    let bobOk: string;

    it("both identities walk in the instance's one uia worker: the second opens no X connection", async () => {
      const first = await alice.ok("inspect_tree", { hwnd });
      const withWorker = clients();
      // The walk's worker holds its own X connections while it lives.
      expect(withWorker).toBeGreaterThan(baseline);
      const second = await bob.ok("inspect_tree", { hwnd });
      expect(second.node_count).toBe(first.node_count);
      expect(clients()).toBe(withWorker);
      aliceOk = await okButton(alice);
      bobOk = await okButton(bob);
      expect(bobOk).not.toBe(aliceOk);
      expect(clients()).toBe(withWorker);
    });

    it("a ref handed to one identity acts for no other: element_stale, and the form's OK is not pressed", async () => {
      for (const [c, ref] of [
        [bob, aliceOk],
        [alice, bobOk],
      ] as const) {
        expect((await c.call("click_element", { ref })).code).toBe("element_stale");
        // The worker's own part of the ref under the caller's own tag is no key either.
        const mine = c === bob ? bobOk : aliceOk;
        const forged = `${mine.split(".")[0]}.${ref.split(".")[1]}`;
        if (forged !== mine)
          expect((await c.call("click_element", { ref: forged })).code).toBe("element_stale");
      }
      await new Promise((r) => setTimeout(r, 500));
      expect(await appAlive()).toBe(true);
    });

    it("one identity's backlog of walks does not hold back the other's walk: it is served in turn", async () => {
      const backlog = 24;
      let answered = 0;
      const atWorker = async () => {
        const uia = ((await bob.ok("health_check")).workers as UiaStats[]).find((w) => w.kind === "uia");
        return (uia?.inflight ?? 0) + (uia?.queued ?? 0);
      };
      // The app stopped while the walks come in, so that all of them are there before any ends.
      const pid = app.child.pid ?? 0;
      process.kill(pid, "SIGSTOP");
      let walks: Array<ReturnType<RemoteClient["call"]>>;
      let mine: Promise<Awaited<ReturnType<RemoteClient["call"]>> & { before: number }>;
      try {
        walks = Array.from({ length: backlog }, () =>
          alice.call("inspect_tree", { hwnd, detail: "full" }).then((r) => {
            answered += 1;
            return r;
          }),
        );
        await waitFor("Alice's walks at the worker", async () =>
          (await atWorker()) >= backlog ? true : null,
        );
        mine = bob.call("inspect_tree", { hwnd, detail: "full" }).then((r) => ({ ...r, before: answered }));
        await waitFor("Bob's walk at the worker", async () => ((await atWorker()) > backlog ? true : null));
      } finally {
        process.kill(pid, "SIGCONT");
      }
      const bobs = await mine;
      for (const r of await Promise.all(walks)) expect(r.code ?? "ok").toBe("ok");
      expect(bobs.code ?? "ok").toBe("ok");
      // The app answers one call at a time: with every walk in flight at once, Bob's, the last
      // to come, would end about last.
      expect(bobs.before, "Alice's walks answered before Bob's").toBeLessThanOrEqual(backlog / 2);
    });

    it("one identity's backlog of screenshots does not hold back the other's: turns first, then the memory budget", async () => {
      const backlog = 24;
      let answered = 0;
      // Fewer shots fit the memory budget than are let in flight: were the bytes reserved before
      // the turn, Alice's backlog would hold the budget's one first-come queue ahead of Bob.
      const form = await desk.p.desktop.getWindow(hwnd);
      const shotBytes = form ? rectArea(form.rect) * 8 : 0;
      expect(shotBytes, "one shot fits the budget").toBeLessThanOrEqual(SHOT_MEMORY);
      expect(shotBytes * SHOTS_IN_FLIGHT, "the shots in flight do not").toBeGreaterThan(SHOT_MEMORY);
      // The X server grabbed by another client of ours while the shots come in: every shot
      // waits on it, so all of them are there before any ends. (Nothing that asks the X server
      // can tell meanwhile, health_check included: the waits are fixed, and the grab ends on
      // a timer whatever happens.)
      const grab = grabServer(8000);
      let shots: Array<ReturnType<RemoteClient["call"]>>;
      let mine: Promise<Awaited<ReturnType<RemoteClient["call"]>> & { before: number }>;
      try {
        shots = Array.from({ length: backlog }, () =>
          alice.call("screenshot_window", { hwnd }).then((r) => {
            answered += 1;
            return r;
          }),
        );
        await sleep(1500);
        mine = bob.call("screenshot_window", { hwnd }).then((r) => ({ ...r, before: answered }));
        await sleep(1000);
      } finally {
        grab.end();
      }
      const bobs = await mine;
      for (const r of await Promise.all(shots))
        expect(r.code ?? "ok", JSON.stringify(r.structured)).toBe("ok");
      expect(bobs.code ?? "ok").toBe("ok");
      expect(bobs.before, "Alice's shots answered before Bob's").toBeLessThanOrEqual(backlog / 2);
    });

    it("releasing one identity drops only its refs, also once it is granted again; the worker ends with the last grant", async () => {
      const withWorker = clients();
      expect(await alice.ok("release_access", { hwnd })).toMatchObject({ released: true });
      // The worker and Bob's session live on: his ref still resolves.
      const bobSub = await bob.ok("inspect_tree", { hwnd, root_ref: bobOk });
      expect(bobSub.node_count).toBeGreaterThan(0);
      expect(clients()).toBe(withWorker);
      // Alice granted again: her old ref stays stale and presses nothing; her new walk works.
      const pending = alice.call("request_access", { hwnd });
      await approveConsentDialog();
      expect((await pending).structured.decision).toBe("approved");
      expect((await alice.call("click_element", { ref: aliceOk })).code).toBe("element_stale");
      const again = await okButton(alice);
      expect(again).not.toBe(aliceOk);
      expect(clients()).toBe(withWorker);
      await new Promise((r) => setTimeout(r, 500));
      expect(await appAlive()).toBe(true);
      // The control: Bob's own ref of OK does press it, and the form ends (so the refusals
      // above would have shown).
      expect((await bob.call("click_element", { ref: bobOk })).isError).toBe(false);
      await waitFor("the form ended by its OK", async () => ((await appAlive()) ? null : true), 10_000);
      for (const c of [alice, bob]) await c.call("release_access", { hwnd });
      await waitFor(
        `the server's X clients back to ${baseline}`,
        async () => (clients() === baseline ? true : null),
        10_000,
      );
    });
  },
);
