import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform } from "../../src/shared/platform.js";
import { LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import {
  type App,
  approveConsentDialog,
  CONSENT_TITLE,
  clickAt,
  runCli,
  startApp,
  startSession,
  stopOwnBroker,
  UNSAFE_XTEST,
  waitFor,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
  xdotool,
} from "./support.js";

/**
 * Our dialogs take only a person's input, adversarially, on a real desktop (Xvfb + openbox + AT-SPI) against the built server
 * over stdio: the agent's own input, another local program's XTest input, a covering window and a
 * fake `zenity` first on PATH never answer our consent or lease dialog, and the dialog is neither
 * listed nor a target. Xvfb has only XTEST devices, so with the default settings nothing a test
 * sends can approve; the tests that need an approval turn on the unsafe setting (its name says so)
 * and prove the same input then does approve, so the refusals are not a click that missed.
 */

const LEASE_TITLE = "uiinspect-mcp: unattended access lease";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The visible window ids titled `title` (xdotool; our server never looks dialogs up by title). */
function windowIds(title: string): string[] {
  try {
    return xdotool("search", "--onlyvisible", "--name", title).split("\n").filter(Boolean);
  } catch {
    return []; // xdotool exits 1 when nothing matches
  }
}

async function dialogShown(title = CONSENT_TITLE): Promise<string> {
  return waitFor(`dialog "${title}"`, async () => windowIds(title).at(-1) ?? null, 30_000);
}

/** The client window's root position and size (xwininfo; xdotool adds the frame offset twice). */
function geometry(wid: string): { x: number; y: number; w: number; h: number } {
  const g = execFileSync("xwininfo", ["-id", wid], { encoding: "utf8", env: process.env });
  const v = (k: string) => Number(new RegExp(`${k}:\\s+(-?\\d+)`).exec(g)?.[1]);
  return { x: v("Absolute upper-left X"), y: v("Absolute upper-left Y"), w: v("Width"), h: v("Height") };
}

/**
 * What another local program (or an agent's "computer use" server) would send: XTest click on
 * Allow, Tab+space. With the unsafe setting only a click after the pointer rested on Allow for
 * the delay approves (keys never do).
 */
function xtestApprove(wid: string): void {
  try {
    const g = geometry(wid);
    clickAt(g.x + g.w - 55, g.y + g.h - 24);
    xdotool("key", "Tab", "space");
  } catch {
    // The dialog went away in between: its answer decides.
  }
}

/** XTest input at 0 ms, 500 ms and 2 s after the dialog was seen mapped. */
async function xtestBurst(wid: string): Promise<void> {
  const t0 = Date.now();
  for (const at of [0, 500, 2000]) {
    await sleep(Math.max(0, t0 + at - Date.now()));
    xtestApprove(wid);
  }
}

describe.skipIf(!X11_AVAILABLE)("our dialogs take only a person's input (x11, built CLI)", () => {
  let session: X11Session;
  let p: Platform;
  let a: App;
  let hwndA: string;
  let hwndB: string;
  let exe: string;
  let scratch: string;
  const servers: McpHarness[] = [];

  beforeAll(async () => {
    session = startSession();
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "other" });
    // Each swallows what is typed into it (no shell to run it).
    a = startApp("xterm", ["-T", "uix cd A", "-geometry", "60x8+20+20", "-e", "sh", "-c", "cat >/dev/null"]);
    startApp("xterm", ["-T", "uix cd B", "-geometry", "60x8+20+420", "-e", "sh", "-c", "cat >/dev/null"]);
    hwndA = (await waitForWindow(p, "uix cd A")).hwnd;
    hwndB = (await waitForWindow(p, "uix cd B")).hwnd;
    exe = realpathSync(`/proc/${a.child.pid}/exe`);
    scratch = scratchDir("cd");
    // A "zenity" that would approve with nothing on screen, for the PATH tests.
    mkdirSync(join(scratch, "bin"));
    writeFileSync(
      join(scratch, "bin", "zenity"),
      `#!/bin/sh\necho ran >> '${join(scratch, "zenity-ran")}'\nexit 0\n`,
    );
    chmodSync(join(scratch, "bin", "zenity"), 0o755);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await p?.dispose();
    session?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  async function serve(env: Record<string, string> = {}): Promise<McpHarness> {
    const h = await McpHarness.start({
      ...LOOSE_BUDGETS,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "uix cd *",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: exe,
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe,click,key,text",
      // Several times what the dialog takes to map on a loaded machine (2-4 s at a load of 25 on
      // two cores): a dialog killed by the timeout before it showed fails the wait for it.
      UIINSPECT_CONSENT_TIMEOUT_MS: "15000",
      ...env,
    });
    servers.push(h);
    return h;
  }

  async function grant(h: McpHarness, hwnd: string): Promise<void> {
    const pending = h.call("request_access", { hwnd });
    await approveConsentDialog();
    const r = await pending;
    expect(r.structured.decision, JSON.stringify(r.structured)).toBe("approved");
  }

  async function toFront(hwnd: string): Promise<void> {
    await p.desktop.activateWindow(hwnd);
    await waitFor("target in front", async () => (await p.desktop.getWindow(hwnd))?.foreground);
  }

  /** Text is a protected class; a token is issued only while the target is in front (so: before any dialog). */
  async function textTokens(h: McpHarness, hwnd: string, n: number): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const t = await h.ok("request_confirmation", { hwnd, action_class: "text", ttl_seconds: 300 });
      out.push(String(t.token_id));
    }
    return out;
  }

  it("the agent's own send_text / send_key racing the dialog never answer it (both orders, XTest allowed)", async () => {
    // The unsafe setting is on here: the dialog would take our XTest input, so only the gate
    // (consent_pending before every event) can keep our typed Tab/space/Enter out of it.
    const h = await serve(UNSAFE_XTEST);
    await grant(h, hwndA);
    await toFront(hwndA);
    const [t1, t2, t3] = await textTokens(h, hwndA, 3);

    // Order 1: the text is in flight when the dialog opens.
    const text = "\t \n".repeat(700);
    const typing = h.call("send_text", { hwnd: hwndA, text, confirmation_token: t1 });
    const access = h.call("request_access", { hwnd: hwndB });
    await dialogShown();
    const keys = await Promise.all([
      h.call("send_key", { hwnd: hwndA, key: "tab" }),
      h.call("send_key", { hwnd: hwndA, key: "space" }),
      h.call("send_key_sequence", { hwnd: hwndA, keys: ["tab", "space", "enter"] }),
    ]);
    for (const k of keys) expect(k.code, JSON.stringify(k.structured)).toBe("consent_pending");
    const typed = await typing;
    expect([undefined, "consent_pending", "not_foreground"]).toContain(typed.code);
    const first = await access;
    expect(first.code, JSON.stringify(first.structured)).toBe("consent_timeout");

    // Order 2: the dialog is up first, then text with pauses and concurrent keys arrive.
    await waitFor("dialog closed", async () => (windowIds(CONSENT_TITLE).length === 0 ? true : null));
    await toFront(hwndA);
    const again = h.call("request_access", { hwnd: hwndB });
    await dialogShown();
    const racing = await Promise.all([
      h.call("send_text", { hwnd: hwndA, text: "\t ", confirmation_token: t2 }),
      h.call("send_key", { hwnd: hwndA, key: "enter" }),
      (async () => {
        await sleep(700);
        return h.call("send_text", {
          hwnd: hwndA,
          text: "\t \n",
          confirmation_token: t3,
        });
      })(),
      (async () => {
        await sleep(1500);
        return h.call("send_key_sequence", { hwnd: hwndA, keys: ["tab", "space"] });
      })(),
    ]);
    for (const r of racing) expect(r.code, JSON.stringify(r.structured)).toBe("consent_pending");
    const second = await again;
    expect(second.code, JSON.stringify(second.structured)).toBe("consent_timeout");
    const held = JSON.stringify(await h.ok("get_access_state", {}));
    expect(held).not.toContain(hwndB);
  }, 180_000);

  it("XTest clicks and keys 0 ms, 500 ms and 2 s after the dialog maps never approve by default (the same input approves only with the unsafe setting, by its 2 s click)", async () => {
    const control = await serve(UNSAFE_XTEST);
    const approved = control.call("request_access", { hwnd: hwndA });
    await xtestBurst(await dialogShown());
    const ctl = await approved;
    expect(ctl.structured.decision, JSON.stringify(ctl.structured)).toBe("approved");
    await waitFor("dialog closed", async () => (windowIds(CONSENT_TITLE).length === 0 ? true : null));

    const h = await serve();
    const health = await h.ok("health_check");
    expect(health.consent_dialog).toMatchObject({ unsafe_allow_xtest_consent: false });
    const refused = h.call("request_access", { hwnd: hwndA });
    await xtestBurst(await dialogShown());
    const r = await refused;
    expect(r.code, JSON.stringify(r.structured)).toBe("consent_timeout");
    // The timeout says why (counts and kinds only) and, on this XTest-only display, what tests set.
    const message = String((r.structured.error as { message?: string }).message);
    expect(message).toMatch(/ignored input: \d+ from an injected \(XTest\) device/);
    expect(message).toContain("UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT=1");
    expect(JSON.stringify(await h.ok("get_access_state", {}))).not.toContain(hwndA);
    // The unsafe setting is reported loudly while on.
    const loud = await control.ok("health_check");
    expect(loud.consent_dialog).toMatchObject({ unsafe_allow_xtest_consent: true });
    expect(String((loud.consent_dialog as { warning?: string }).warning)).toContain("UNSAFE");
  }, 180_000);

  it("a click on Allow while another window covers part of the dialog never approves; uncovered, it does", async () => {
    const h = await serve({ ...UNSAFE_XTEST, UIINSPECT_CONSENT_TIMEOUT_MS: "30000" });
    const pending = h.call("request_access", { hwnd: hwndB });
    const wid = await dialogShown();
    const g = geometry(wid);
    // An override-redirect window over the dialog's text (the buttons stay visible), kept on top
    // by raising it again every 100 ms, as an overlay that wants the click would.
    const before = new Set(rootChildren());
    const cover = startApp("xterm", [
      "-xrm",
      "*overrideRedirect: true",
      "-geometry",
      `20x2+${g.x + 10}+${g.y + 5}`,
    ]);
    const coverId = await waitFor(
      "the cover",
      async () => rootChildren().find((id) => !before.has(id)) ?? null,
    );
    let covering = true;
    const raise = (async () => {
      while (covering) {
        try {
          xdotool("windowraise", coverId);
        } catch {
          // gone
        }
        await sleep(100);
      }
    })();
    try {
      await waitFor("the cover above the dialog", async () => (coveredBy(wid, coverId) ? true : null));
      const until = Date.now() + 3000;
      while (Date.now() < until) {
        xtestApprove(wid);
        await sleep(300);
      }
      expect(windowIds(CONSENT_TITLE)).toContain(wid);
    } finally {
      covering = false;
      await raise;
      cover.child.kill("SIGTERM");
    }
    await waitFor("cover gone", async () => (rootChildren().includes(coverId) ? null : true));
    await approveConsentDialog();
    expect((await pending).structured.decision).toBe("approved");
  }, 180_000);

  it("a fake zenity first on PATH changes nothing: our own dialog is shown and only it answers (closing it denies)", async () => {
    const bin = join(scratch, "bin");
    const marker = join(scratch, "zenity-ran");
    // A consent timeout far beyond how long the dialog takes to appear on a loaded machine: a
    // short one ends the request (and kills the dialog process) before its window maps.
    const h = await serve({
      PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
      UIINSPECT_CONSENT_TIMEOUT_MS: "100000",
    });
    const pending = h.call("request_access", { hwnd: hwndA });
    const wid = await dialogShown();
    // The fake would have answered at once; our dialog is up instead. Closing it (another
    // client's WM_DELETE_WINDOW) is a denial.
    await p.desktop.closeWindow(wid);
    const r = await pending;
    expect(r.structured.decision, JSON.stringify(r.structured)).toBe("denied");
    expect(existsSync(marker)).toBe(false);
  }, 120_000);

  it("the dialog is never listed and never a target, even under a policy that allows node and every title", async () => {
    const h = await serve({
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "*",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: [exe, realpathSync(process.execPath)].join(";"),
      UIINSPECT_CONSENT_TIMEOUT_MS: "8000",
    });
    const pending = h.call("request_access", { hwnd: hwndB });
    const wid = await dialogShown();
    const listed = (await h.ok("list_windows")).windows as Array<{ hwnd: string; title: string }>;
    expect(listed.map((w) => w.hwnd)).not.toContain(wid);
    expect(listed.map((w) => w.title)).not.toContain(CONSENT_TITLE);
    expect(listed.map((w) => w.hwnd)).toContain(hwndA);
    for (const [tool, args] of [
      ["request_access", { hwnd: wid }],
      ["click_window", { hwnd: wid, x: 10, y: 10 }],
      ["get_window_state", { hwnd: wid }],
      ["request_access", { title_contains: "access request" }],
    ] as const) {
      const r = await h.call(tool, args);
      expect(r.isError, `${tool} ${JSON.stringify(r.structured)}`).toBe(true);
      expect(["target_not_allowed", "target_not_found"]).toContain(r.code);
    }
    expect((await pending).code).toBe("consent_timeout");
  }, 120_000);

  it("the lease dialog: XTest input and a fake zenity never activate a lease, and our input is refused while it is up", async () => {
    const root = mkdtempSync(join(scratch, "lease-"));
    const run = join(root, "run");
    mkdirSync(run, { mode: 0o700 });
    const bin = join(scratch, "bin");
    const marker = join(scratch, "zenity-ran");
    const leaseEnv = {
      HOME: root,
      XDG_RUNTIME_DIR: run,
      XDG_STATE_HOME: join(root, "state"),
    };
    const managerEnv: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ...leaseEnv,
      PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
      // Far beyond how long the dialog takes to appear on a loaded machine; the test closes it.
      UIINSPECT_CONSENT_TIMEOUT_MS: "100000",
    };
    delete managerEnv.UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT;
    // A server of the same user (same runtime dir) with access to A.
    const h = await serve({ ...UNSAFE_XTEST, ...leaseEnv });
    await grant(h, hwndA);
    await toFront(hwndA);
    const activation = runCli(["manager", "lease", "activate", "--hours", "24"], managerEnv);
    const wid = await dialogShown(LEASE_TITLE);
    // While the broker's dialog is up, our own input is refused (its presence file is checked
    // before every event), and XTest input from anyone is ignored by the dialog.
    const key = await h.call("send_key", { hwnd: hwndA, key: "space" });
    expect(key.code, JSON.stringify(key.structured)).toBe("consent_pending");
    await xtestBurst(wid);
    // Nothing above answered it; closing it (WM_DELETE_WINDOW from another client) is a denial.
    await p.desktop.closeWindow(wid).catch(() => {
      // Already gone: then its own answer decided, and the checks below say which.
    });
    const r = await activation;
    expect(r.code, r.out).not.toBe(0);
    const status = await runCli(["manager", "lease", "status"], managerEnv);
    expect(status.out).toMatch(/no unattended lease is active/i);
    expect(existsSync(marker)).toBe(false);
    stopOwnBroker(leaseEnv);
    // The dialog gone, input works again.
    await waitFor("lease dialog closed", async () => (windowIds(LEASE_TITLE).length === 0 ? true : null));
    await toFront(hwndA);
    const after = await h.call("send_key", { hwnd: hwndA, key: "space" });
    expect(after.isError, JSON.stringify(after.structured)).toBe(false);
  }, 180_000);
});

/** Top-level windows, bottom to top, as the X server stacks them (xwininfo lists them top first). */
function rootChildren(): string[] {
  const out = execFileSync("xwininfo", ["-root", "-children"], { encoding: "utf8", env: process.env });
  return [...out.matchAll(/^\s+(0x[0-9a-f]+)\s/gm)]
    .map((m) => String(Number.parseInt(m[1] ?? "0", 16)))
    .reverse();
}

/** Whether `cover` is stacked above the dialog's frame (its ancestor just below the root). */
function coveredBy(wid: string, cover: string): boolean {
  const kids = rootChildren();
  let frame = wid;
  for (let depth = 0; depth < 8 && !kids.includes(frame); depth++) {
    const tree = execFileSync("xwininfo", ["-id", frame, "-tree"], { encoding: "utf8", env: process.env });
    const parent = /Parent window id: (0x[0-9a-f]+)/.exec(tree)?.[1];
    if (!parent) return false;
    frame = String(Number.parseInt(parent, 16));
  }
  return kids.includes(frame) && kids.indexOf(cover) > kids.indexOf(frame);
}
