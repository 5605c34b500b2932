import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Platform } from "../../src/shared/platform.js";
import { LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import {
  CONSENT_TITLE,
  REPO,
  startApp,
  startSession,
  UNSAFE_XTEST,
  waitFor,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
  xdotool,
} from "./support.js";

/**
 * Attacks on our consent dialog itself, each from another local process on a real desktop (Xvfb +
 * openbox) against the built server. Xvfb has only XTEST devices, so "the person" is XTest input
 * with the unsafe test setting on: every attack here would approve if the dialog trusted what it
 * was shown or when it read its events, and the last step of each proves that the same person's
 * honest gesture (rest the pointer on Allow for the delay, then click) still approves.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const REST_MS = 1300;

function windowIds(title: string): string[] {
  try {
    return xdotool("search", "--onlyvisible", "--name", title).split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

async function dialogShown(): Promise<string> {
  return waitFor("the consent dialog", async () => windowIds(CONSENT_TITLE).at(-1) ?? null, 30_000);
}

/** The client window's root position and size (xwininfo; xdotool adds the frame offset twice). */
function geometry(wid: string): { x: number; y: number; w: number; h: number } {
  const g = execFileSync("xwininfo", ["-id", wid], { encoding: "utf8", env: process.env });
  const v = (k: string) => Number(new RegExp(`${k}:\\s+(-?\\d+)`).exec(g)?.[1]);
  return { x: v("Absolute upper-left X"), y: v("Absolute upper-left Y"), w: v("Width"), h: v("Height") };
}

function allowOf(wid: string): { x: number; y: number } {
  const g = geometry(wid);
  return { x: g.x + g.w - 55, y: g.y + g.h - 24 };
}

/** A person's click: onto the spot, rest there for the delay, press and release. */
async function restAndClick(at: { x: number; y: number }): Promise<void> {
  xdotool("mousemove", "--sync", String(at.x), String(at.y));
  await sleep(REST_MS);
  xdotool("click", "1");
}

/** The X server's input focus window (decimal id, as xdotool search prints them). */
function focusedWindow(): string {
  return xdotool("getwindowfocus").trim();
}

/** The dialog processes of this display (node running our dialog file), by /proc. */
function dialogPids(): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (!argv.some((a) => a.endsWith("/platforms/x11/dialog/main.js"))) continue;
      const env = readFileSync(`/proc/${name}/environ`, "utf8").split("\0");
      if (env.includes(`DISPLAY=${process.env.DISPLAY}`)) out.push(Number(name));
    } catch {
      // gone or not ours
    }
  }
  return out;
}

describe.skipIf(!X11_AVAILABLE)(
  "our dialog proves its own window and keeps the delay (x11, built CLI)",
  () => {
    let session: X11Session;
    let p: Platform;
    let hwnd: string;
    let exe: string;
    let scratch: string;
    let attackerBin: string;
    const servers: McpHarness[] = [];
    const attackers: ChildProcess[] = [];

    beforeAll(async () => {
      session = startSession();
      const { createX11Platform } = await import("../../src/platforms/x11/index.js");
      p = await createX11Platform({ workerKind: "other" });
      scratch = scratchDir("di");
      attackerBin = join(scratch, "dialog-attacker");
      execFileSync("cc", ["-o", attackerBin, join(REPO, "test/x11/fixtures/dialog-attacker.c"), "-lX11"]);
      const a = startApp("xterm", [
        "-T",
        "uix di A",
        "-geometry",
        "60x8+20+20",
        "-e",
        "sh",
        "-c",
        "cat >/dev/null",
      ]);
      hwnd = (await waitForWindow(p, "uix di A")).hwnd;
      exe = realpathSync(`/proc/${a.child.pid}/exe`);
    }, 120_000);

    afterEach(async () => {
      for (const c of attackers.splice(0))
        if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
      await Promise.all(servers.splice(0).map((s) => s.close()));
      await waitFor(
        "no dialog left",
        async () => (windowIds(CONSENT_TITLE).length === 0 ? true : null),
        20_000,
      );
    });

    afterAll(async () => {
      await p?.dispose();
      session?.stop();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    });

    async function serve(timeoutMs = 20_000): Promise<McpHarness> {
      const h = await McpHarness.start({
        ...LOOSE_BUDGETS,
        ...UNSAFE_XTEST,
        DESKTOP_AUTOMATION_ALLOWED_TITLES: "uix *",
        DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: exe,
        DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe,click,key",
        UIINSPECT_CONSENT_TIMEOUT_MS: String(timeoutMs),
      });
      servers.push(h);
      return h;
    }

    function attack(args: string[]): Promise<string> {
      const child = spawn(attackerBin, args, { env: process.env, stdio: ["ignore", "pipe", "inherit"] });
      attackers.push(child);
      let out = "";
      child.stdout?.setEncoding("utf8");
      child.stdout?.on("data", (d: string) => {
        out += d;
      });
      return waitFor("attacker ready", async () => /^ready.*$/m.exec(out)?.[0] ?? null);
    }

    /** Parks the pointer on the target, away from the dialog, and lets it rest there. */
    async function pointerAway(): Promise<void> {
      const r = (await p.desktop.getWindow(hwnd))?.rect;
      if (!r) throw new Error("no target");
      xdotool("mousemove", "--sync", String(r[0] + 40), String(r[1] + 60));
    }

    it("a window another client creates inside the dialog (a fake prompt over it) closes it as a denial that says so", async () => {
      const h = await serve();
      await pointerAway();
      const pending = h.call("request_access", { hwnd });
      const wid = await dialogShown();
      const allow = allowOf(wid);
      await sleep(REST_MS);
      await attack(["child", wid]);
      // The person reads the fake prompt and clicks its "OK", which sits where Allow is.
      await restAndClick(allow);
      const r = await pending;
      expect(r.structured.decision, JSON.stringify(r.structured)).toBe("denied");
      expect(r.structured.reason).toBe("dialog_tampered");
      expect(String(r.structured.note)).toMatch(/another program changed the consent dialog's window/i);
    }, 120_000);

    it("the dialog unmapped and reparented into another client's small window closes as a denial that says so", async () => {
      const h = await serve();
      await pointerAway();
      const pending = h.call("request_access", { hwnd });
      const wid = await dialogShown();
      await sleep(REST_MS);
      const ready = await attack(["reparent", wid]);
      const [, , ox, oy] = ready.split(" ").map(Number);
      // Only the real Allow shows, inside the attacker's 100x40 window; the person clicks it.
      await restAndClick({ x: (ox ?? 0) + 100 - 55, y: (oy ?? 0) + 40 - 24 });
      const r = await pending;
      expect(r.structured.decision, JSON.stringify(r.structured)).toBe("denied");
      expect(r.structured.reason).toBe("dialog_tampered");
    }, 120_000);

    it("a window another client creates inside the dialog's window-manager frame, over the dialog, closes it as a denial that says so", async () => {
      const h = await serve();
      await pointerAway();
      const pending = h.call("request_access", { hwnd });
      const wid = await dialogShown();
      const allow = allowOf(wid);
      await sleep(REST_MS);
      await attack(["frame-child", wid]);
      await restAndClick(allow);
      const r = await pending;
      expect(r.structured.decision, JSON.stringify(r.structured)).toBe("denied");
      expect(r.structured.reason).toBe("dialog_tampered");
    }, 120_000);

    it("a pointer warp onto Allow 120 ms before a click does not approve; resting there for the delay does", async () => {
      const h = await serve();
      await pointerAway();
      const pending = h.call("request_access", { hwnd });
      const wid = await dialogShown();
      const allow = allowOf(wid);
      await sleep(REST_MS); // the dialog is armed, the pointer rests elsewhere
      await attack(["warp", String(allow.x), String(allow.y)]);
      await sleep(120);
      xdotool("click", "1"); // the click the person meant for the other window
      await sleep(700);
      expect(windowIds(CONSENT_TITLE), "the warp+click answered the dialog").toContain(wid);
      // The same pointer, left on Allow for the delay, then clicked: a person's approval.
      await sleep(REST_MS);
      xdotool("click", "1");
      const r = await pending;
      expect(r.structured.decision, JSON.stringify(r.structured)).toBe("approved");
    }, 120_000);

    /** A request whose dialog is up and unfocused, the pointer rested on Allow for the delay (armed). */
    async function restingOnAllowUnfocused() {
      const h = await serve();
      await pointerAway();
      const pending = h.call("request_access", { hwnd });
      const wid = await dialogShown();
      const allow = allowOf(wid);
      xdotool("mousemove", "--sync", String(allow.x), String(allow.y));
      await sleep(REST_MS);
      expect(focusedWindow(), "the dialog took the focus when it appeared").not.toBe(wid);
      return { pending, wid };
    }

    it("another client focusing the dialog just before a click lands on Allow: the click does not approve; resting for the delay does", async () => {
      const { pending, wid } = await restingOnAllowUnfocused();
      await attack(["focus", wid]);
      expect(focusedWindow()).toBe(wid);
      xdotool("click", "1");
      await sleep(700);
      expect(windowIds(CONSENT_TITLE), "the click right after a foreign focus change answered").toContain(
        wid,
      );
      await sleep(REST_MS);
      xdotool("click", "1");
      const r = await pending;
      expect(r.structured.decision, JSON.stringify(r.structured)).toBe("approved");
    }, 120_000);

    it("a keyboard grab taken and let go while the dialog has the focus (its focus comes back, nothing changed) does not restart the delay", async () => {
      const { pending, wid } = await restingOnAllowUnfocused();
      await attack(["focus", wid]);
      await sleep(REST_MS); // the restart the focus change made has run out
      await attack(["grab-keyboard"]);
      expect(focusedWindow()).toBe(wid);
      xdotool("click", "1");
      const r = await pending;
      expect(r.structured.decision, JSON.stringify(r.structured)).toBe("approved");
    }, 120_000);

    it("the first click on an unfocused dialog, after the pointer rested on Allow for the delay, approves (the focus it causes does not restart the delay)", async () => {
      const { pending } = await restingOnAllowUnfocused();
      xdotool("click", "1");
      const r = await pending;
      expect(r.structured.decision, JSON.stringify(r.structured)).toBe("approved");
    }, 120_000);

    it("a dialog that appears while a person types elsewhere (Tab, Return) is never approved by keyboard and does not take the keys", async () => {
      const file = join(scratch, "login-typed");
      startApp("xterm", [
        "-T",
        "uix login",
        "-geometry",
        "60x8+20+300",
        "-e",
        "sh",
        "-c",
        `stty -echo; cat > ${file}`,
      ]);
      const login = await waitForWindow(p, "uix login");
      await p.desktop.activateWindow(login.hwnd);
      await waitFor("login in front", async () => (await p.desktop.getWindow(login.hwnd))?.foreground);
      const h = await serve(6000);
      const lines = 12;
      // "user Tab password Return", a line every ~0.6 s, before and long after the dialog maps.
      const typing = (async () => {
        for (let i = 0; i < lines; i++) {
          xdotool("type", "--delay", "40", `user${i}\tpw${i}\n`);
          await sleep(250);
        }
      })();
      await sleep(700);
      const pending = h.call("request_access", { hwnd });
      await dialogShown();
      await typing;
      const r = await pending;
      expect(r.code, JSON.stringify(r.structured)).toBe("consent_timeout");
      // Every line reached the window the person typed into.
      const typed = await waitFor(
        "the typed lines",
        async () => {
          const t = readFileSync(file, "utf8");
          return t.split("\n").length > lines ? t : null;
        },
        10_000,
      ).catch(() => readFileSync(file, "utf8"));
      for (let i = 0; i < lines; i++) expect(typed).toContain(`user${i}\tpw${i}\n`);
    }, 120_000);

    it("a click made while Allow was still disabled does not count when a stalled dialog reads it late", async () => {
      const h = await serve();
      await pointerAway();
      const pending = h.call("request_access", { hwnd });
      const wid = await dialogShown();
      const allow = allowOf(wid);
      await sleep(150); // the dialog has seen itself mapped; Allow is disabled for the delay
      const pids = dialogPids();
      expect(pids.length).toBe(1);
      const pid = pids[0] ?? 0;
      process.kill(pid, "SIGSTOP");
      try {
        xdotool("mousemove", "--sync", String(allow.x), String(allow.y));
        xdotool("click", "1");
        await sleep(2000);
      } finally {
        process.kill(pid, "SIGCONT");
      }
      await sleep(700);
      expect(windowIds(CONSENT_TITLE), "the early click counted when read late").toContain(wid);
      await sleep(REST_MS);
      xdotool("click", "1");
      const r = await pending;
      expect(r.structured.decision, JSON.stringify(r.structured)).toBe("approved");
    }, 120_000);
  },
);
