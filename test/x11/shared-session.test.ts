import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { XConnection } from "../../src/platforms/x11/xconn.js";
import type { Platform } from "../../src/shared/platform.js";
import {
  AUDIENCE,
  ISSUER,
  makeIssuer,
  RemoteClient,
  type RemoteServerProc,
  startRemote,
} from "../support/remote.js";
import { scratchDir } from "../support/scratch.js";
import {
  type App,
  approveConsentDialog,
  startApp,
  startSession,
  UNSAFE_XTEST,
  waitFor,
  waitForWindow,
  type X11Session,
  x11CliSuite,
} from "./support.js";

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
const SCOPE = "uiinspect:observe uiinspect:inspect uiinspect:click";

interface Element {
  ref: string;
  role: string;
  name: string | null;
}

describe.skipIf(!x11CliSuite("shared-session"))(
  "x11: two identities on one instance share its one automation session (remote server, zenity)",
  () => {
    let session: X11Session;
    let p: Platform;
    let x: XConnection;
    let app: App;
    let hwnd: string;
    let remote: RemoteServerProc;
    let alice: RemoteClient;
    let bob: RemoteClient;
    /** The server's X clients before any uia worker ran. */
    let baseline: number;

    beforeAll(async () => {
      session = startSession();
      const { createX11Platform } = await import("../../src/platforms/x11/index.js");
      const { XConnection: Conn } = await import("../../src/platforms/x11/xconn.js");
      p = await createX11Platform({ workerKind: "other" });
      x = Conn.open();
      app = startApp("zenity", ["--forms", `--title=${TITLE}`, "--add-entry=Login", "--add-entry=Mail"]);
      const w = await waitForWindow(p, TITLE);
      hwnd = w.hwnd;
      const issuer = await makeIssuer(scratchDir("shared"));
      remote = await startRemote(
        null,
        ["--oauth-issuer", ISSUER, "--oauth-audience", AUDIENCE, "--oauth-jwks", issuer.jwksFile],
        {
          ...UNSAFE_XTEST,
          DESKTOP_AUTOMATION_ALLOWED_TITLES: TITLE,
          DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: w.instance?.exe_path ?? "",
          DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe,inspect,click",
          UIINSPECT_CONSENT_TIMEOUT_MS: "60000",
        },
      );
      alice = await RemoteClient.connect(remote.url, {
        token: await issuer.sign({ sub: "alice", scope: SCOPE }),
      });
      bob = await RemoteClient.connect(remote.url, {
        token: await issuer.sign({ sub: "bob", scope: SCOPE }),
      });
      for (const c of [alice, bob]) {
        const pending = c.call("request_access", { hwnd });
        await approveConsentDialog();
        expect((await pending).structured.decision).toBe("approved");
      }
      // After consent (the capture worker and the prompter hold theirs by then), before any walk.
      baseline = clients();
    }, 180_000);

    afterAll(async () => {
      await alice?.close();
      await bob?.close();
      await remote?.stop();
      x?.close();
      await p?.dispose();
      session?.stop();
    });

    const clients = () => x.clientCountsByPid().get(remote.proc.pid ?? 0) ?? 0;
    const okButton = async (c: RemoteClient): Promise<string> => {
      const found = (await c.ok("find_elements", { hwnd, name_contains: "OK", detail: "full" }))
        .elements as Element[];
      const button = found.find((e) => e.role.includes("button") && e.name === "OK");
      if (!button) throw new Error(`no OK button in ${JSON.stringify(found.map((e) => [e.role, e.name]))}`);
      return button.ref;
    };
    const appAlive = async () => (await p.desktop.getWindow(hwnd)) !== null && app.child.exitCode === null;

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
