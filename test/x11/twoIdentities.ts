import { expect } from "vitest";
import type { WindowInfo } from "../../src/shared/platform.js";
import {
  AUDIENCE,
  ISSUER,
  makeIssuer,
  RemoteClient,
  type RemoteServerProc,
  startRemote,
} from "../support/remote.js";
import { scratchDir } from "../support/scratch.js";
import type { X11Desk } from "./desk.js";
import { type App, approveConsentDialog, startApp, UNSAFE_XTEST, waitForWindow } from "./support.js";

const SCOPE = "uiinspect:observe uiinspect:inspect uiinspect:click";

/** A remote server (Streamable HTTP, OAuth) on the session's desktop and two identities of it. */
export interface TwoIdentities {
  remote: RemoteServerProc;
  alice: RemoteClient;
  bob: RemoteClient;
  close(): Promise<void>;
}

/**
 * Starts the server with a policy of one window (its title and executable), connects "alice"
 * and "bob", and has each granted on the window through the real consent dialog.
 */
export async function twoIdentitiesOn(
  w: WindowInfo,
  env: Record<string, string> = {},
): Promise<TwoIdentities> {
  const issuer = await makeIssuer(scratchDir("identities"));
  const remote = await startRemote(
    null,
    ["--oauth-issuer", ISSUER, "--oauth-audience", AUDIENCE, "--oauth-jwks", issuer.jwksFile],
    {
      ...UNSAFE_XTEST,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: w.title,
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: w.instance?.exe_path ?? "",
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe,inspect,click",
      UIINSPECT_CONSENT_TIMEOUT_MS: "60000",
      ...env,
    },
  );
  const connect = async (sub: string) =>
    RemoteClient.connect(remote.url, { token: await issuer.sign({ sub, scope: SCOPE }) });
  const alice = await connect("alice");
  const bob = await connect("bob");
  for (const c of [alice, bob]) {
    const pending = c.call("request_access", { hwnd: w.hwnd });
    await approveConsentDialog();
    expect((await pending).structured.decision).toBe("approved");
  }
  return {
    remote,
    alice,
    bob,
    async close() {
      await alice.close();
      await bob.close();
      await remote.stop();
    },
  };
}

/** zenity's form (entries Login and Mail, Cancel and OK; OK ends it) on the desk. */
export async function startForm(desk: X11Desk, title: string): Promise<{ app: App; w: WindowInfo }> {
  const app = startApp("zenity", ["--forms", `--title=${title}`, "--add-entry=Login", "--add-entry=Mail"]);
  return { app, w: await waitForWindow(desk.p, title) };
}

/** The ref of the form's OK button, as identity `c` finds it. */
export async function okButtonRef(c: RemoteClient, hwnd: string): Promise<string> {
  const found = (await c.ok("find_elements", { hwnd, name_contains: "OK", detail: "full" }))
    .elements as Array<{
    ref: string;
    role: string;
    name: string | null;
  }>;
  const button = found.find((e) => e.role.includes("button") && e.name === "OK");
  if (!button) throw new Error(`no OK button in ${JSON.stringify(found.map((e) => [e.role, e.name]))}`);
  return button.ref;
}
