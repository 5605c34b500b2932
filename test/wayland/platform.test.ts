import type { ChildProcess } from "node:child_process";
import { realpathSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWaylandPlatform } from "../../src/platforms/wayland/index.js";
import type { A11yHandle, A11ySession, Platform, WindowInfo } from "../../src/shared/platform.js";
import { platformFor } from "../../src/supervisor/config.js";
import {
  A11yReader,
  SESSION_HOOK_MS,
  startApp,
  startSession,
  stopApps,
  WAYLAND_AVAILABLE,
  type WaylandSession,
  waitFor,
} from "./support.js";

/**
 * The Wayland platform on headless GNOME with real GTK 3 and GTK 4 applications: windows and
 * their process instances (bus daemon credentials + /proc), trees and semantic actions over
 * AT-SPI, and the refusals of everything this compositor gives no proof for. Effects are read
 * back through the test's own AT-SPI connection, never through the backend.
 */

const ST_CHECKED = 4;

function exe(cmd: string): string {
  return realpathSync(`/usr/bin/${cmd}`);
}

describe("wayland platform selection", () => {
  it("picks wayland only when WAYLAND_DISPLAY is set and DISPLAY is not; x11 otherwise on Linux", () => {
    expect(platformFor({ WAYLAND_DISPLAY: "wayland-0" }, "linux")).toBe("wayland");
    expect(platformFor({ WAYLAND_DISPLAY: "wayland-0", DISPLAY: ":0" }, "linux")).toBe("x11");
    expect(platformFor({ DISPLAY: ":0" }, "linux")).toBe("x11");
    expect(platformFor({}, "linux")).toBe("x11");
    expect(platformFor({ UIINSPECT_PLATFORM: "wayland", DISPLAY: ":0" }, "linux")).toBe("wayland");
    expect(platformFor({ UIINSPECT_PLATFORM: "x11", WAYLAND_DISPLAY: "wayland-0" }, "linux")).toBe("x11");
    expect(platformFor({ WAYLAND_DISPLAY: "wayland-0" }, "win32")).toBe("win32");
  });
});

describe.skipIf(!WAYLAND_AVAILABLE)("wayland platform on headless GNOME", () => {
  let session: WaylandSession;
  let p: Platform;
  let reader: A11yReader;
  const apps: ChildProcess[] = [];
  let gtk3: ChildProcess;
  let gtk4: ChildProcess;

  beforeAll(async () => {
    session = await startSession();
    gtk3 = startApp("gtk3-widget-factory", [], apps);
    gtk4 = startApp("gtk4-widget-factory", [], apps);
    p = await createWaylandPlatform({ workerKind: "uia" });
    reader = await A11yReader.open();
  }, SESSION_HOOK_MS);

  afterAll(async () => {
    await p?.dispose();
    reader?.close();
    stopApps(apps);
    session?.stop();
  });

  async function windowOf(pid: number | undefined): Promise<WindowInfo> {
    return waitFor("the application's window", async () => {
      const list = await p.desktop.listWindows();
      return list.find((w) => w.pid === pid) ?? null;
    });
  }

  it("lists GTK 3 and GTK 4 windows with exact process instances; the compositor's stage is not one", async () => {
    const w3 = await windowOf(gtk3.pid);
    const w4 = await windowOf(gtk4.pid);
    for (const [w, cmd] of [
      [w3, "gtk3-widget-factory"],
      [w4, "gtk4-widget-factory"],
    ] as const) {
      expect(w.instance).not.toBeNull();
      expect(w.instance?.exe_path).toBe(exe(cmd));
      expect(w.instance?.session).toMatch(/^wayland:wayland-0:\d+$/);
      expect(w.visible).toBe(true);
      // Never claimed: the compositor does not say which window has the focus.
      expect(w.foreground).toBe(false);
      // Size only, at the origin: a Wayland client does not know its position.
      expect(w.rect[0]).toBe(0);
      expect(w.rect[1]).toBe(0);
      expect(w.rect[2]).toBeGreaterThan(200);
      expect(await p.desktop.isInstanceAlive(w.instance as NonNullable<WindowInfo["instance"]>)).toBe(true);
    }
    const list = await p.desktop.listWindows();
    const shellApps = (await reader.apps()).filter((a) => a.name === "gnome-shell").map((a) => a.pid);
    expect(shellApps.length).toBeGreaterThan(0);
    expect(list.some((w) => shellApps.includes(w.pid))).toBe(false);
    // Ids are the same from a second platform (another worker).
    const other = await createWaylandPlatform({ workerKind: "capture" });
    try {
      const again = await other.desktop.listWindows();
      expect(again.find((w) => w.pid === gtk3.pid)?.hwnd).toBe(w3.hwnd);
    } finally {
      await other.dispose();
    }
  });

  it("the screen comes from mutter's display configuration", async () => {
    expect(await p.desktop.virtualScreen()).toEqual([0, 0, 1280, 800]);
  });

  async function findNode(
    s: A11ySession,
    pred: (f: Awaited<ReturnType<A11ySession["facts"]>>) => boolean,
  ): Promise<A11yHandle | null> {
    const stack: A11yHandle[] = [await s.root()];
    let seen = 0;
    while (stack.length > 0 && seen < 3000) {
      const n = stack.shift() as A11yHandle;
      seen++;
      const f = await s.facts(n);
      if (pred(f)) return n;
      stack.push(...(await s.children(n)));
    }
    return null;
  }

  it("walks the GTK 3 tree and toggles a check button through AT-SPI (read back independently)", async () => {
    const w3 = await windowOf(gtk3.pid);
    const s = await p.accessibility.openSession(w3);
    try {
      const root = await s.facts(await s.root());
      expect(root.role).toBeTruthy();
      const check = await findNode(
        s,
        (f) => f.name === "checkbutton" && f.patterns.includes("toggle") && f.enabled,
      );
      expect(check).not.toBeNull();
      const node = check as { bus: string; path: string };
      const before = (
        await reader.call(node.bus, node.path, "org.a11y.atspi.Accessible", "GetState")
      )[0] as number[];
      const was = ((before[0] ?? 0) >>> ST_CHECKED) & 1;
      await s.act(check, "toggle");
      const now = await waitFor("the toggled state", async () => {
        const st = (
          await reader.call(node.bus, node.path, "org.a11y.atspi.Accessible", "GetState")
        )[0] as number[];
        const v = ((st[0] ?? 0) >>> ST_CHECKED) & 1;
        return v !== was ? v : null;
      });
      expect(now).toBe(was ^ 1);
    } finally {
      await s.dispose();
    }
  });

  it("walks the GTK 4 tree", async () => {
    const w4 = await windowOf(gtk4.pid);
    const s = await p.accessibility.openSession(w4);
    try {
      const button = await findNode(s, (f) => f.role === "button");
      expect(button).not.toBeNull();
    } finally {
      await s.dispose();
    }
  });

  it("refuses every effect that needs a position or pixels of a window nobody shared, and every key", async () => {
    const w3 = await windowOf(gtk3.pid);
    const none = { points: [], region: null, focus: false, grabs: { keyboard: false, pointer: false } };
    // Identity alone (a semantic action's check) passes; so does a grab probe alone, since a
    // Wayland client cannot grab the pointer or keyboard.
    await expect(p.desktop.confirmLive?.(w3, none)).resolves.toEqual({ focus: null, points: [] });
    await expect(
      p.desktop.confirmLive?.(w3, { ...none, grabs: { keyboard: true, pointer: true } }),
    ).resolves.toEqual({ focus: null, points: [] });
    for (const check of [
      { ...none, points: [{ x: 10, y: 10 }] },
      { ...none, region: [0, 0, 10, 10] as [number, number, number, number] },
    ]) {
      await expect(p.desktop.confirmLive?.(w3, check)).rejects.toMatchObject({
        code: "platform_unavailable",
      });
    }
    // The focus is never proven, shared or not.
    await expect(p.desktop.confirmLive?.(w3, { ...none, focus: true })).rejects.toMatchObject({
      code: "not_foreground",
    });
    await expect(p.capture.captureScreen([0, 0, 10, 10])).rejects.toMatchObject({
      code: "platform_unavailable",
    });
    await expect(p.input.moveTo(1, 1)).rejects.toMatchObject({ code: "platform_unavailable" });
    await expect(p.input.keyDown("a")).rejects.toMatchObject({ code: "not_foreground" });
    await expect(p.input.typeText(w3.hwnd, "x", "sendinput")).rejects.toMatchObject({
      code: "not_foreground",
    });
    await expect(p.desktop.activateWindow(w3.hwnd)).rejects.toMatchObject({ code: "pattern_not_supported" });
  });

  it("a window swapped for another instance is gone: its id never names the new one", async () => {
    const old = await windowOf(gtk3.pid);
    const s = await p.accessibility.openSession(old);
    try {
      const check = await findNode(
        s,
        (f) => f.name === "checkbutton" && f.patterns.includes("toggle") && f.enabled,
      );
      expect(check).not.toBeNull();
      process.kill(gtk3.pid ?? -1, "SIGKILL");
      gtk3 = startApp("gtk3-widget-factory", [], apps);
      const fresh = await windowOf(gtk3.pid);
      expect(fresh.hwnd).not.toBe(old.hwnd);
      expect(fresh.instance?.pid).not.toBe(old.instance?.pid);
      expect(await p.desktop.getWindow(old.hwnd)).toBeNull();
      expect(await p.desktop.isInstanceAlive(old.instance as NonNullable<WindowInfo["instance"]>)).toBe(
        false,
      );
      // The old session's node belongs to a connection that no longer exists.
      await expect(s.act(check, "toggle")).rejects.toMatchObject({
        code: expect.stringMatching(/element_stale|platform_unavailable/),
      });
      // And a session cannot be opened on the old window.
      await expect(p.accessibility.openSession(old)).rejects.toMatchObject({ code: "target_gone" });
    } finally {
      await s.dispose();
    }
  });
});
