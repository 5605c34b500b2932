import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import dbus from "dbus-next";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform } from "../../src/shared/platform.js";
import { scratchDir } from "../support/scratch.js";
import { type Attacker, buildAttacker, startAttacker } from "./attacker.js";
import {
  atspiBus,
  atspiText,
  startApp,
  startSession,
  waitFor,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
} from "./support.js";

/**
 * A click is done only once the X server delivered it. openbox (like most WMs) takes a press on a
 * client window through a synchronous passive grab: the pointer stays frozen, its events queued,
 * until the WM replays the press (XAllowEvents ReplayPointer), while key events flow on to the
 * focused window. A WM slow to get to it (a loaded machine) let keys typed after the click reach
 * the entry before the press moved the caret. Here the WM is stopped outright (SIGSTOP) around
 * the click and resumed later, so the frozen pointer is certain, not a matter of load.
 */
/** Screen rect (x, y, width, height) of the character at `offset` of an AT-SPI Text object. */
async function characterExtents(
  bus: Awaited<ReturnType<typeof atspiBus>>,
  node: { bus: string; path: string },
  offset: number,
): Promise<[number, number, number, number]> {
  const reply = await bus.call(
    new dbus.Message({
      destination: node.bus,
      path: node.path,
      interface: "org.a11y.atspi.Text",
      member: "GetCharacterExtents",
      signature: "iu",
      body: [offset, 0],
    }),
  );
  const [x, y, w, h] = (reply?.body ?? []).map(Number);
  return [x ?? 0, y ?? 0, w ?? 0, h ?? 0];
}

/** The buttons the X server holds down on the virtual core pointer (XQueryPointer, our own connection). */
async function coreButtons(): Promise<number> {
  const { XConnection } = await import("../../src/platforms/x11/xconn.js");
  const x = XConnection.open();
  try {
    const mask = [0];
    x.n.XQueryPointer(x.dpy, x.root, [0], [0], [0], [0], [0], [0], mask);
    return (mask[0] ?? 0) & 0x1f00;
  } finally {
    x.close();
  }
}

const HAVE_CC = spawnSync("sh", ["-c", "command -v cc"]).status === 0;

describe.skipIf(!X11_AVAILABLE)("x11 click then type: keys never overtake a press the WM holds", () => {
  let session: X11Session;
  let p: Platform;

  beforeAll(async () => {
    session = startSession();
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "input" });
  });

  const attackers: Attacker[] = [];
  let dir = "";

  afterAll(async () => {
    for (const a of attackers) await a.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await p?.dispose();
    session?.stop();
  });

  it.skipIf(!HAVE_CC)(
    "a click while another device holds the same button down: the release wait ends, the call returns with the button still held there",
    async () => {
      dir = scratchDir("click-hold");
      // "Xvfb mouse", another slave of the virtual core pointer, as a hand holding the mouse's left button.
      const hold = await startAttacker(buildAttacker(dir), ["holdbutton", "1"], attackers);
      const release = async () => {
        if (hold.count("released") === 0) hold.child.kill("SIGUSR1");
        await waitFor("hold released", async () => (hold.count("released") === 1 ? true : null));
      };
      try {
        expect(await coreButtons()).toBe(0x100);
        await p.input.moveTo(5, 5);
        // The master takes our press of a button it holds down as none; the release leaves it down.
        await p.input.buttonDown("left");
        await p.input.buttonUp("left");
        // Returned while the other device still holds it: the wait did not take that for ours.
        expect(hold.count("released")).toBe(0);
        expect(await coreButtons()).toBe(0x100);
      } finally {
        await release();
      }
      expect(await coreButtons()).toBe(0);
      // Our own release leaves nothing down: a click now waits for its own release as before.
      await p.input.buttonDown("left");
      await p.input.buttonUp("left");
      expect(await coreButtons()).toBe(0);
    },
  );

  it("types at the caret the click put, though the WM replays the press late", async () => {
    const app = startApp("zenity", ["--entry", "--title=uix click order", "--text=Type"]);
    const w = await waitForWindow(p, "uix click order");
    await waitFor("entry dialog in front", async () => {
      if ((await p.desktop.getWindow(w.hwnd))?.foreground) return true;
      await p.desktop.activateWindow(w.hwnd);
      return null;
    });
    const s = await p.accessibility.openSession(w);
    const queue = [await s.root()];
    let entry: { h: unknown; rect: [number, number, number, number] } | null = null;
    while (queue.length > 0 && entry === null) {
      const h = queue.shift();
      const f = await s.facts(h);
      if (f.role === "edit" && f.rect) entry = { h, rect: f.rect };
      else queue.push(...(await s.children(h)));
    }
    if (entry === null) throw new Error("no entry");
    const node = entry.h as { bus: string; path: string };
    const bus = await atspiBus();
    const wmPid = Number(readFileSync(join(session.env.UIINSPECT_X11_STATE!, "openbox.pid"), "utf8"));
    expect(readFileSync(`/proc/${wmPid}/comm`, "utf8").trim()).toBe("openbox");
    let resumed: Promise<void> | null = null;
    try {
      // The caret ends up after this text.
      await p.input.typeText(w.hwnd, "0123456789", "sendinput");
      await waitFor("first text", async () => ((await atspiText(bus, node)) === "0123456789" ? true : null));

      // A click on the left edge of the fourth character puts the caret before it; the WM gets
      // the press first and, stopped, holds it.
      const [cx, cy, , ch] = await characterExtents(bus, node, 3);
      process.kill(wmPid, "SIGSTOP");
      await p.input.moveTo(cx + 1, cy + Math.floor(ch / 2));
      await p.input.buttonDown("left");
      resumed = new Promise<void>((r) => setTimeout(r, 1000)).then(() => {
        process.kill(wmPid, "SIGCONT");
      });
      await p.input.buttonUp("left");
      await p.input.typeText(w.hwnd, "ab", "sendinput");
      await resumed;

      let got = "";
      await waitFor("text typed after the click", async () => {
        got = await atspiText(bus, node);
        return got === "012ab3456789" ? got : null;
      }).catch(() => null);
      expect(got).toBe("012ab3456789");
    } finally {
      process.kill(wmPid, "SIGCONT");
      await resumed;
      bus.disconnect();
    }
    app.child.kill("SIGTERM");
    await app.exited;
    await s.dispose();
  });
});
