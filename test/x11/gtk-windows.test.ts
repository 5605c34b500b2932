import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform, WindowInfo } from "../../src/shared/platform.js";
import { LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import { type Attacker, buildAttacker, settled, startAttacker } from "./attacker.js";
import {
  approveConsentDialog,
  REPO,
  startSession,
  UNSAFE_XTEST,
  waitFor,
  waitForWindow,
  type X11Session,
  x11CliSuite,
} from "./support.js";

/**
 * GTK 3 applications (python3-gi, test/x11/fixtures/gtk_windows.py) against the checks and the
 * accessibility side, end to end over stdio:
 *
 * - XEmbed: a GtkSocket in the granted window and a GtkPlug of another process in it, with a
 *   "Transfer funds" button. A click on it, a screenshot over it and typed text (GtkSocket
 *   forwards keys to its plug) are refused; the plug never hears of them.
 * - The title ceiling: the granted process's second top-level whose title the policy refuses is
 *   not a popup of the grant: its elements are not found through the main window; nor are those
 *   of a dialog transient for the main window that was shown before the grant; a transient
 *   dialog shown after the grant still is one.
 */

const PYTHON = "/usr/bin/python3";
const HAVE_GI =
  spawnSync(PYTHON, ["-c", "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk"], {
    stdio: "ignore",
  }).status === 0;
const FIXTURE = join(REPO, "test/x11/fixtures/gtk_windows.py");

interface Gi {
  child: ChildProcess;
  out: () => string;
}

describe.skipIf(
  !x11CliSuite("gtk windows", { what: "python3-gi with Gtk 3 (python3-gi gir1.2-gtk-3.0)", ok: HAVE_GI }),
)("x11 GTK embedding and the title ceiling on AT-SPI (built CLI over stdio)", () => {
  let session: X11Session;
  let p: Platform;
  let h: McpHarness;
  const procs: Gi[] = [];
  let sock: WindowInfo;
  let main: WindowInfo;
  let plugOut: () => string;
  let familyProc: Gi;
  let attackerBin: string;
  const attackers: Attacker[] = [];

  function gi(args: string[]): Gi {
    const child = spawn(PYTHON, [FIXTURE, ...args], {
      env: { ...process.env, GDK_BACKEND: "x11" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (d: string) => {
      out += d;
    });
    const g = { child, out: () => out };
    procs.push(g);
    return g;
  }

  async function grant(w: WindowInfo): Promise<void> {
    const pending = h.call("request_access", { hwnd: w.hwnd });
    await approveConsentDialog();
    expect((await pending).structured.decision).toBe("approved");
  }

  async function inFront(w: WindowInfo): Promise<WindowInfo> {
    await p.desktop.activateWindow(w.hwnd);
    return waitFor("focused", async () => {
      const now = await p.desktop.getWindow(w.hwnd);
      return now?.foreground ? now : null;
    });
  }

  /** The plug's window inside the socket, and its place on the screen (the X server's word). */
  function plugWindow(): { x: number; y: number; w: number; h: number } {
    const tree = spawnSync("xwininfo", ["-tree", "-id", sock.hwnd], { encoding: "utf8" }).stdout;
    const m = /^\s+0x[0-9a-f]+ "gtk_windows.py".*?(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)$/m.exec(
      tree,
    );
    if (!m) throw new Error("no plug inside the socket");
    return { w: Number(m[1]), h: Number(m[2]), x: Number(m[3]), y: Number(m[4]) };
  }

  beforeAll(async () => {
    session = startSession();
    const dir = scratchDir("gi");
    attackerBin = buildAttacker(dir);
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "other" });
    const socket = gi(["socket"]);
    const id = await waitFor("socket id", async () => /^socket (\d+)$/m.exec(socket.out())?.[1] ?? null);
    const plug = gi(["plug", id]);
    plugOut = plug.out;
    await waitFor("plug ready", async () => (plug.out().includes("ready") ? true : null));
    familyProc = gi(["family"]);
    sock = await waitForWindow(p, "uix gi socket");
    main = await waitForWindow(p, "uix gi main");
    await waitForWindow(p, "uix refused");
    await waitForWindow(p, "uix early");
    const policy = join(dir, "policy.json");
    writeFileSync(
      policy,
      JSON.stringify({
        schema_version: 1,
        policy_id: "x11-gi",
        application: { executable_path: sock.instance!.exe_path, title_patterns: ["uix gi *"] },
        allowed_actions: ["observe", "inspect", "hover", "click", "interact", "key", "text"],
        safe_regions: [{ name: "body", rect: [0, 0, 300, 180] }],
      }),
    );
    h = await McpHarness.start({
      ...LOOSE_BUDGETS,
      ...UNSAFE_XTEST,
      DESKTOP_AUTOMATION_POLICY_FILE: policy,
      UIINSPECT_CONSENT_TIMEOUT_MS: "60000",
    });
    await grant(sock);
    await grant(main);
  }, 120_000);

  afterAll(async () => {
    for (const a of attackers.splice(0)) await a.stop();
    for (const g of procs.splice(0)) if (g.child.exitCode === null) g.child.kill("SIGKILL");
    await h?.close();
    await p?.dispose();
    session?.stop();
  });

  it("a click on another process's GtkPlug inside the granted window: occluded, the plug's button is not pressed", async () => {
    const w = await inFront(sock);
    const plug = plugWindow();
    const r = await h.call("click_window", {
      hwnd: sock.hwnd,
      x: plug.x + Math.floor(plug.w / 2) - w.rect[0],
      y: plug.y + Math.floor(plug.h / 2) - w.rect[1],
    });
    expect(r.code).toBe("occluded");
    await new Promise((res) => setTimeout(res, 300));
    expect(plugOut()).not.toContain("clicked");
  });

  it("a screenshot of the window holding the plug: refused, none of the plug's pixels", async () => {
    await inFront(sock);
    const r = await h.call("screenshot_window", { hwnd: sock.hwnd, region_name: "body" });
    expect(r.code).toBe("occluded");
    expect(r.content.filter((c) => c.type === "image")).toHaveLength(0);
  });

  it("send_text into the window holding the plug: not_foreground (its socket would forward the keys)", async () => {
    await inFront(sock);
    const token = await h.ok("request_confirmation", { action_class: "text", hwnd: sock.hwnd });
    const r = await h.call("send_text", { hwnd: sock.hwnd, text: " ", confirmation_token: token.token_id });
    expect(r.code).toBe("not_foreground");
    await new Promise((res) => setTimeout(res, 300));
    expect(plugOut()).not.toContain("clicked");
  });

  it("the plug's elements are not reached through the granted window's tree", async () => {
    const found = await h.ok("find_elements", {
      detail: "full",
      hwnd: sock.hwnd,
      name_contains: "Transfer funds",
    });
    expect(found.elements).toEqual([]);
    const own = await h.ok("find_elements", { detail: "full", hwnd: sock.hwnd, name_contains: "Own button" });
    expect((own.elements as unknown[]).length).toBe(1);
  });

  it("the refused same-process top-level's elements are not found through the main window's grant", async () => {
    await inFront(main);
    const refused = await h.ok("find_elements", {
      detail: "full",
      hwnd: main.hwnd,
      name_contains: "Transfer funds",
    });
    expect(refused.elements).toEqual([]);
    const own = await h.ok("find_elements", {
      detail: "full",
      hwnd: main.hwnd,
      name_contains: "Main button",
    });
    expect((own.elements as unknown[]).length).toBe(1);
  });

  it("a transient dialog shown before the grant is no popup: its elements are not found or walked", async () => {
    await inFront(main);
    const found = await h.ok("find_elements", {
      detail: "full",
      hwnd: main.hwnd,
      name_contains: "Early button",
    });
    expect(found.elements).toEqual([]);
    const tree = await h.ok("inspect_tree", { detail: "full", hwnd: main.hwnd });
    expect(JSON.stringify(tree.popups ?? [])).not.toContain("Early button");
    const waited = await h.call("wait_for_element", {
      hwnd: main.hwnd,
      name_contains: "Early button",
      timeout_ms: 500,
    });
    expect(waited.code).toBe("timeout");
    const early = await waitForWindow(p, "uix early");
    expect((await h.call("request_access", { hwnd: early.hwnd })).code).toBe("target_not_allowed");
  });

  it("the main window's transient dialog shown after the grant is its popup: its elements are found, marked popup", async () => {
    familyProc.child.kill("SIGUSR2");
    await waitForWindow(p, "uix gi dialog");
    const found = await h.ok("find_elements", {
      detail: "full",
      hwnd: main.hwnd,
      name_contains: "Dialog button",
    });
    const els = found.elements as Array<{ popup?: boolean }>;
    expect(els.length).toBe(1);
    expect(els[0]?.popup).toBe(true);
  });

  it("expect after a click that reached the check box: verified true; the next click unticks it", async () => {
    await inFront(main);
    const [agree] = (await h.ok("find_elements", { detail: "full", hwnd: main.hwnd, name_contains: "Agree" }))
      .elements as Array<{
      ref: string;
    }>;
    const r = await h.ok("click_element", {
      ref: agree!.ref,
      expect: { state: "checked", timeout_ms: 3000 },
    });
    expect(r.verified).toBe(true);
    expect(r.unverified_reason).toBeUndefined();
    await h.ok("click_element", { ref: agree!.ref });
    await waitFor("unticked", async () => {
      const on = await h.ok("find_elements", {
        detail: "full",
        hwnd: main.hwnd,
        name_contains: "Agree",
        state: "checked",
      });
      return (on.elements as unknown[]).length === 0 ? true : null;
    });
  });

  it("a click with expect where another client's passive grab would take the press: input_grabbed, nothing pressed, the box untouched", async () => {
    await inFront(main);
    const [agree] = (await h.ok("find_elements", { detail: "full", hwnd: main.hwnd, name_contains: "Agree" }))
      .elements as Array<{
      ref: string;
    }>;
    expect(agree).toBeDefined();
    const grab = await startAttacker(attackerBin, ["passivegrab"], attackers);
    const r = await h.call("click_element", {
      ref: agree!.ref,
      expect: { state: "checked", timeout_ms: 1000 },
    });
    // The passive button probe refuses it before the press (the RECORD delivery proof, which
    // caught this after the press, stays behind it).
    expect(r.code).toBe("input_grabbed");
    await settled(grab);
    expect(grab.count("button")).toBe(0);
    await grab.stop();
    const on = await h.ok("find_elements", {
      detail: "full",
      hwnd: main.hwnd,
      name_contains: "Agree",
      state: "checked",
    });
    expect(on.elements as unknown[]).toHaveLength(0);
  });
});
