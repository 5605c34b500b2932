import koffi from "koffi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { A11ySession, Platform } from "../../src/shared/platform.js";
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

/** The whole keyboard mapping, to prove remapped spare keycodes are restored. */
async function keymapSnapshot(): Promise<string> {
  const { XConnection } = await import("../../src/platforms/x11/xconn.js");
  const x = XConnection.open();
  try {
    const min = [0];
    const max = [0];
    x.n.XDisplayKeycodes(x.dpy, min, max);
    const per = [0];
    const count = max[0]! - min[0]! + 1;
    const p = x.n.XGetKeyboardMapping(x.dpy, min[0]!, count, per);
    const syms = Array.from(koffi.decode(p, "unsigned long", count * per[0]!) as ArrayLike<bigint>, String);
    x.n.XFree(p!);
    return syms.join(",");
  } finally {
    x.close();
  }
}

async function findNode(s: A11ySession, pred: (f: Awaited<ReturnType<A11ySession["facts"]>>) => boolean) {
  const queue = [await s.root()];
  while (queue.length > 0) {
    const h = queue.shift();
    const f = await s.facts(h);
    if (pred(f)) return { h, f };
    queue.push(...(await s.children(h)));
  }
  return null;
}

describe.skipIf(!X11_AVAILABLE)("x11 input port (XTest) into a GTK entry, read back through AT-SPI", () => {
  let session: X11Session;
  let p: Platform;

  beforeAll(async () => {
    session = startSession();
    // The input port restores a temporarily remapped spare keycode after this settle time, read
    // when src/platforms/x11/input.ts loads (the import below). A loaded machine may run GTK late
    // enough that it translates the key after the default 300 ms, dropping é, €, 😀 … Give it more.
    process.env.UIINSPECT_X11_REMAP_SETTLE_MS = "1500";
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "input" });
  });

  afterAll(async () => {
    await p?.dispose();
    session?.stop();
  });

  it("clicks into the entry, types ASCII, shifted, non-ASCII and astral text, uses modifiers and keys", async () => {
    const app = startApp("zenity", ["--entry", "--title=uix input", "--text=Type"]);
    const w = await waitForWindow(p, "uix input");
    // Keys go to the focused window: wait until the dialog is in front before clicking and typing.
    await waitFor("entry dialog in front", async () => {
      if ((await p.desktop.getWindow(w.hwnd))?.foreground) return true;
      await p.desktop.activateWindow(w.hwnd);
      return null;
    });
    const s = await p.accessibility.openSession(w);
    const entry = await findNode(s, (f) => f.role === "edit");
    expect(entry).not.toBeNull();
    const r = entry!.f.rect!;
    const before = await keymapSnapshot();

    await p.input.moveTo(Math.floor((r[0] + r[2]) / 2), Math.floor((r[1] + r[3]) / 2));
    await p.input.buttonDown("left");
    await p.input.buttonUp("left");
    const typed = "Hello, World! ~|<>?_+{}\"' é€ß 😀 Ωx";
    await p.input.typeText(w.hwnd, typed, "sendinput");

    const bus = await atspiBus();
    try {
      const node = entry!.h as { bus: string; path: string };
      let got = "";
      await waitFor("typed text", async () => {
        got = await atspiText(bus, node);
        return got === typed ? got : null;
      }).catch(() => null);
      expect(got).toBe(typed);
      expect(await keymapSnapshot()).toBe(before);

      // ctrl+a selects all, then typing replaces it.
      await p.input.keyDown("ctrl");
      await p.input.keyDown("a");
      await p.input.keyUp("a");
      await p.input.keyUp("ctrl");
      await p.input.typeText(w.hwnd, "Zz9", "sendinput");
      await p.input.keyDown("left");
      await p.input.keyUp("left");
      await p.input.keyDown("backspace");
      await p.input.keyUp("backspace");
      await waitFor("edited text", async () => ((await atspiText(bus, node)) === "Z9" ? true : null));
    } finally {
      bus.disconnect();
    }
    await p.input.keyDown("enter");
    await p.input.keyUp("enter");
    expect(await app.exited).toBe(0);
    expect(app.stdout()).toBe("Z9\n");
    await s.dispose();
  });

  it("refuses keys outside the allow-list and scrolls with buttons 4/5", async () => {
    await expect(p.input.keyDown("super")).rejects.toMatchObject({ code: "invalid_argument" });
    await expect(p.input.keyDown("f13")).rejects.toMatchObject({ code: "invalid_argument" });
    await p.input.wheel(2);
    await p.input.wheel(-1);
  });
});
