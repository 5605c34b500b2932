import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isUiError, uiError } from "../../src/shared/errors.js";
import type { Platform, WindowInfo } from "../../src/shared/platform.js";
import type { ConsentDialogContent } from "../../src/supervisor/consent/prompter.js";
import { ZENITY_TITLE, ZenityPrompter, zenityArgs } from "../../src/supervisor/consent/zenityPrompter.js";
import {
  buttonCentre,
  clickAt,
  pidAlive,
  startSession,
  waitFor,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
  xdotool,
} from "./support.js";

const content: ConsentDialogContent = {
  kind: "consent",
  executable_path: "/usr/bin/xterm",
  pid: 4242,
  process_start: "2026-11-30T08:00:00.000Z",
  capabilities: [{ name: "observe", description: "see the window" }],
  client_label: "<b>Some Client</b> & co",
  client_label_self_reported: true,
  expires_at: "2026-11-30T08:05:00.000Z",
  default_button: "deny",
  text: "Allow <b>Some Client</b> & co (self-reported) to see the window of /usr/bin/xterm (PID 4242)?",
};

describe("zenity consent prompter arguments", () => {
  it("shows only the server text, plain, with Deny as the default and its own timeout", () => {
    const args = zenityArgs(content, 65000);
    expect(args).toContain("--question");
    expect(args).toContain("--default-cancel");
    expect(args).toContain("--no-markup");
    expect(args).toContain("--ok-label=Allow");
    expect(args).toContain("--cancel-label=Deny");
    expect(args).toContain(`--title=${ZENITY_TITLE}`);
    expect(args).toContain(`--text=${content.text}`);
    expect(args).toContain("--timeout=65");
  });
});

describe.skipIf(!X11_AVAILABLE)("zenity consent prompter on Xvfb", () => {
  let session: X11Session;
  let p: Platform;

  beforeAll(async () => {
    session = startSession();
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "other" });
  });

  afterAll(async () => {
    await p?.desktop.dispose();
    session?.stop();
  });

  async function clickButton(w: WindowInfo, name: string): Promise<void> {
    const { x, y } = await buttonCentre(p, w, name);
    clickAt(x, y);
  }

  it("approves when the person clicks Allow", async () => {
    const answer = new ZenityPrompter().prompt(content, new AbortController().signal);
    const w = await waitForWindow(p, ZENITY_TITLE);
    await clickButton(w, "Allow");
    expect(await answer).toBe("approve");
  });

  it("denies when the person clicks Deny, and Enter alone picks the default Deny", async () => {
    const first = new ZenityPrompter().prompt(content, new AbortController().signal);
    await clickButton(await waitForWindow(p, ZENITY_TITLE), "Deny");
    expect(await first).toBe("deny");
    await waitFor("dialog gone", async () =>
      (await p.desktop.listWindows()).some((w) => w.title === ZENITY_TITLE) ? null : true,
    );
    const second = new ZenityPrompter().prompt(content, new AbortController().signal);
    const w = await waitForWindow(p, ZENITY_TITLE);
    await waitFor("dialog focused", async () =>
      (await p.desktop.getWindow(w.hwnd))?.foreground ? true : null,
    );
    xdotool("key", "Return");
    expect(await second).toBe("deny");
  });

  it("closes the dialog (process group killed) when the signal aborts, rejecting with the reason", async () => {
    const ctl = new AbortController();
    const answer = new ZenityPrompter().prompt(content, ctl.signal);
    const w = await waitForWindow(p, ZENITY_TITLE);
    ctl.abort(uiError("consent_timeout"));
    const err = await answer.then(
      () => null,
      (e: unknown) => e,
    );
    expect(isUiError(err) && err.code).toBe("consent_timeout");
    await waitFor("dialog closed", async () => ((await p.desktop.getWindow(w.hwnd)) === null ? true : null));
    await waitFor("zenity process gone", async () => (pidAlive(w.pid) ? null : true));
  });

  it("denies when zenity's own timeout fires", async () => {
    const answer = new ZenityPrompter({ timeoutMs: 1000 }).prompt(content, new AbortController().signal);
    expect(await answer).toBe("deny");
  });
});
