import { execFileSync } from "node:child_process";
import { readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
import type { Platform } from "../../src/shared/platform.js";
import {
  type App,
  pidAlive,
  startApp,
  startSession,
  waitFor,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
  xdotool,
} from "./support.js";

describe.skipIf(!X11_AVAILABLE)("x11 desktop port on Xvfb + openbox", () => {
  let session: X11Session;
  let p: Platform;
  let xterm: App;
  let zenity: App;

  beforeAll(async () => {
    session = startSession();
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "other" });
    xterm = startApp("xterm", ["-T", "uix term", "-geometry", "60x10+40+60"]);
    zenity = startApp("zenity", ["--entry", "--title=uix entry", "--text=Type here"]);
    await waitForWindow(p, "uix term");
    await waitForWindow(p, "uix entry");
  });

  afterAll(async () => {
    await p?.dispose();
    session?.stop();
  });

  it("lists client windows with pids, exact process instances, frame rects and z-order", async () => {
    const all = await p.desktop.listWindows();
    const term = all.find((w) => w.title === "uix term")!;
    const entry = all.find((w) => w.title === "uix entry")!;
    expect(term.pid).toBe(xterm.child.pid);
    expect(entry.pid).toBe(zenity.child.pid);
    expect(term.window_class).toBe("XTerm");
    expect(entry.window_class).toBe("Zenity");
    expect(term.instance?.exe_path).toBe(
      realpathSync(execFileSync("sh", ["-c", "command -v xterm"], { encoding: "utf8" }).trim()),
    );
    expect(term.instance?.session).toBe(`${session.env.DISPLAY}:${process.getuid?.()}`);
    expect(term.instance?.start_time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // Stable across enumerations.
    const again = await p.desktop.getWindow(term.hwnd);
    expect(again?.instance).toEqual(term.instance);
    expect(await p.desktop.isInstanceAlive(term.instance!)).toBe(true);
    expect(
      await p.desktop.isInstanceAlive({ ...term.instance!, start_time: "2000-01-01T00:00:00.000Z" }),
    ).toBe(false);
    // hwnd is the client XID; rect is the frame: the client's absolute origin lies inside it.
    const info = execFileSync("xwininfo", ["-id", term.hwnd], { encoding: "utf8", env: process.env });
    const gx = Number(/Absolute upper-left X:\s+(-?\d+)/.exec(info)![1]);
    const gy = Number(/Absolute upper-left Y:\s+(-?\d+)/.exec(info)![1]);
    const gw = Number(/Width:\s+(\d+)/.exec(info)![1]);
    const gh = Number(/Height:\s+(\d+)/.exec(info)![1]);
    expect(term.rect[0]).toBeLessThanOrEqual(gx);
    expect(term.rect[1]).toBeLessThan(gy); // title bar above the client
    expect(term.rect[2]).toBeGreaterThanOrEqual(gx + gw);
    expect(term.rect[3]).toBeGreaterThanOrEqual(gy + gh);
    // z-order follows activation: the activated window is topmost and foreground.
    xdotool("windowactivate", "--sync", term.hwnd);
    const after = await waitFor("xterm in front", async () => {
      const ws = await p.desktop.listWindows();
      const t = ws.find((w) => w.hwnd === term.hwnd);
      return t?.foreground ? ws : null;
    });
    const t2 = after.find((w) => w.hwnd === term.hwnd)!;
    const e2 = after.find((w) => w.hwnd === entry.hwnd)!;
    expect(t2.z).toBe(0);
    expect(e2.z).toBeGreaterThan(0);
    expect(e2.foreground).toBe(false);
    expect(await p.desktop.virtualScreen()).toEqual([0, 0, 1280, 800]);
    const h = await p.desktop.health();
    expect(h.xtest).toBe(true);
    expect(h.wm_name).toBe("Openbox");
  });

  it("re-reads one window for the capture's check after the read exactly as the listing reads it", async () => {
    const desktop = p.desktop;
    if (!desktop.targetAndCovers) throw new Error("the X11 desktop reads the target alone");
    for (const title of ["uix term", "uix entry"]) {
      const listed = (await desktop.listWindows()).find((w) => w.title === title)!;
      const again = await desktop.targetAndCovers(listed.hwnd, [0, 0, 10, 10]);
      // The target alone (confirmLive judges what lies above it from XQueryTree), z aside.
      expect(again).toHaveLength(1);
      expect({ ...again[0], z: listed.z }).toEqual(listed);
    }
    // Without a listing before it (no frame known yet), from a fresh port: the same window.
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    const fresh = await createX11Platform({ workerKind: "other" });
    try {
      const term = (await desktop.listWindows()).find((w) => w.title === "uix term")!;
      const [alone] = (await fresh.desktop.targetAndCovers?.(term.hwnd, [0, 0, 10, 10])) ?? [];
      expect({ ...alone, z: term.z }).toEqual(term);
    } finally {
      await fresh.desktop.dispose();
    }
    // A window that no longer exists: nothing.
    const z = startApp("zenity", ["--info", "--title=uix gone soon", "--text=bye"]);
    const w = await waitForWindow(p, "uix gone soon");
    z.child.kill("SIGKILL");
    await z.exited;
    await waitFor("window gone", async () => ((await desktop.getWindow(w.hwnd)) === null ? true : null));
    expect(await desktop.targetAndCovers(w.hwnd, [0, 0, 10, 10])).toEqual([]);
  });

  it("takes the PID from X-Resource (the server's view), not from the window's own _NET_WM_PID claim", async () => {
    const h = await p.desktop.health();
    expect(h.x_resource_pid_lookup).toBe(true);
    // An Xt app without _NET_WM_PID still gets its verified PID and instance.
    const eyes = startApp("xeyes", ["-geometry", "100x100+600+400"]);
    const w = await waitFor("xeyes window", async () =>
      (await p.desktop.listWindows()).find((x) => x.window_class === "XEyes"),
    );
    expect(w.pid).toBe(eyes.child.pid);
    expect(w.instance?.exe_path).toBe(realpathSync("/usr/bin/xeyes"));
    // A window claiming another process's PID keeps its own.
    const term = (await p.desktop.listWindows()).find((x) => x.title === "uix term")!;
    execFileSync(
      "xprop",
      ["-id", term.hwnd, "-f", "_NET_WM_PID", "32c", "-set", "_NET_WM_PID", String(process.pid)],
      {
        env: process.env,
      },
    );
    const after = await p.desktop.getWindow(term.hwnd);
    expect(after?.pid).toBe(xterm.child.pid);
    expect(after?.instance).toEqual(term.instance);
  });

  it("activates via _NET_ACTIVE_WINDOW, minimizes and restores without activating", async () => {
    const entry = (await p.desktop.listWindows()).find((w) => w.title === "uix entry")!;
    await p.desktop.activateWindow(entry.hwnd);
    await waitFor("entry in front", async () => (await p.desktop.getWindow(entry.hwnd))?.foreground);
    const term = (await p.desktop.listWindows()).find((w) => w.title === "uix term")!;
    xdotool("windowminimize", "--sync", term.hwnd);
    const iconic = await waitFor("xterm minimized", async () => {
      const w = await p.desktop.getWindow(term.hwnd);
      return w?.iconic ? w : null;
    });
    expect(iconic.visible).toBe(true);
    await p.desktop.restoreWindow(term.hwnd);
    const restored = await waitFor("xterm restored", async () => {
      const w = await p.desktop.getWindow(term.hwnd);
      return w && !w.iconic ? w : null;
    });
    expect(restored.iconic).toBe(false);
    // Restoring never focuses: the entry dialog keeps the focus.
    expect((await p.desktop.getWindow(entry.hwnd))?.foreground).toBe(true);
  });

  it("restores a window the WM declared minimized before it unmapped it", async () => {
    // openbox writes _NET_WM_STATE and WM_STATE first and unmaps the window after; on a loaded
    // machine it can lose the CPU in between. Stopped with a minimize request pending, and the
    // state it writes first in place, the WM is caught in that gap for certain.
    const entry = (await p.desktop.listWindows()).find((w) => w.title === "uix entry")!;
    await p.desktop.activateWindow(entry.hwnd);
    await waitFor("entry in front", async () => (await p.desktop.getWindow(entry.hwnd))?.foreground);
    const term = (await p.desktop.listWindows()).find((w) => w.title === "uix term")!;
    const wmPid = Number(readFileSync(join(session.env.UIINSPECT_X11_STATE!, "openbox.pid"), "utf8"));
    expect(readFileSync(`/proc/${wmPid}/comm`, "utf8").trim()).toBe("openbox");
    process.kill(wmPid, "SIGSTOP");
    try {
      xdotool("windowminimize", term.hwnd);
      const atoms = ["-f", "_NET_WM_STATE", "32a", "-set", "_NET_WM_STATE", "_NET_WM_STATE_HIDDEN"];
      execFileSync("xprop", ["-id", term.hwnd, ...atoms], { env: process.env });
      const declared = await p.desktop.getWindow(term.hwnd);
      expect(declared?.iconic).toBe(true);
      await p.desktop.restoreWindow(term.hwnd);
    } finally {
      process.kill(wmPid, "SIGCONT");
    }
    const restored = await waitFor("xterm restored", async () => {
      const w = await p.desktop.getWindow(term.hwnd);
      return w && !w.iconic && w.visible ? w : null;
    });
    expect(restored.iconic).toBe(false);
    expect((await p.desktop.getWindow(entry.hwnd))?.foreground).toBe(true);
  });

  it("closes politely with WM_DELETE_WINDOW and reports a vanished window as target_gone", async () => {
    const z = startApp("zenity", ["--info", "--title=uix close me", "--text=bye"]);
    const w = await waitForWindow(p, "uix close me");
    await p.desktop.closeWindow(w.hwnd);
    await z.exited;
    expect(pidAlive(z.child.pid!)).toBe(false);
    await waitFor("window gone", async () => ((await p.desktop.getWindow(w.hwnd)) === null ? true : null));
    // The window is destroyed now: every call naming it gets a code, and the process goes on.
    for (const call of [() => p.desktop.closeWindow(w.hwnd), () => p.desktop.restoreWindow(w.hwnd)]) {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(isUiError(err) && err.code).toBe("target_gone");
    }
    expect((await p.desktop.listWindows()).length).toBeGreaterThan(0);
  });

  it("a window destroyed after the listing is target_gone at the last-moment check, not target_changed", async () => {
    const z = startApp("zenity", ["--info", "--title=uix gone before check", "--text=bye"]);
    const w = await waitForWindow(p, "uix gone before check");
    const listed = (await p.desktop.listWindows()).find((x) => x.hwnd === w.hwnd);
    if (!listed) throw new Error("not listed");
    z.child.kill("SIGKILL");
    await z.exited;
    await waitFor("window gone", async () => ((await p.desktop.getWindow(w.hwnd)) === null ? true : null));
    const region: [number, number, number, number] = [
      listed.rect[0],
      listed.rect[1],
      listed.rect[0] + 10,
      listed.rect[1] + 10,
    ];
    const err = await p.desktop
      .confirmLive?.(listed, { points: [], region, focus: false, grabs: { keyboard: false, pointer: false } })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(isUiError(err) && err.code).toBe("target_gone");
  });

  it("refuses a region past the root window in the live check's own batch (out_of_bounds)", async () => {
    const listed = (await p.desktop.listWindows()).find((x) => x.title === "uix term");
    if (!listed) throw new Error("not listed");
    expect(p.desktop.liveCheckCoversScreen).toBe(true);
    const screen = await p.desktop.virtualScreen();
    const check = (
      region: [number, number, number, number] | null,
      points: Array<{ x: number; y: number }>,
    ) =>
      p.desktop
        .confirmLive?.(listed, { points, region, focus: false, grabs: { keyboard: false, pointer: false } })
        .then(
          () => "ok",
          (e: unknown) => (isUiError(e) ? e.code : "thrown"),
        );
    expect(await check([screen[2] - 5, 0, screen[2] + 5, 10], [])).toBe("out_of_bounds");
    expect(await check(null, [{ x: screen[2], y: 5 }])).toBe("out_of_bounds");
  });
  it("survives Xlib errors: the process-wide handler swallows them and later calls work", async () => {
    const { XConnection } = await import("../../src/platforms/x11/xconn.js");
    const x = XConnection.open();
    try {
      // BadValue (keycode out of range) and BadWindow (unknown window) through Xlib itself.
      x.n.XTestFakeKeyEvent(x.dpy, 3, 1, 0);
      x.n.XGetImage(x.dpy, 0x1fffffff, 0, 0, 1, 1, 0xffffffffn, 2);
      x.n.XSync(x.dpy, 0);
    } finally {
      x.close();
    }
    expect((await p.desktop.listWindows()).some((w) => w.title === "uix term")).toBe(true);
  });

  it("survives losing the X server: requests fail with platform_unavailable, the process goes on", async () => {
    const { readFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    const input = await createX11Platform({ workerKind: "input" });
    const capture = await createX11Platform({ workerKind: "capture" });
    const xvfb = Number(readFileSync(join(session.env.UIINSPECT_X11_STATE!, "xvfb.pid"), "utf8"));
    process.kill(xvfb, "SIGKILL");
    await waitFor("Xvfb gone", async () => (pidAlive(xvfb) ? null : true));
    const codeOf = (q: Promise<unknown>) =>
      q.then(
        () => null,
        (e: unknown) => (isUiError(e) ? e.code : "not-a-UiError"),
      );
    expect(await codeOf(p.desktop.listWindows())).toBe("platform_unavailable");
    expect(await codeOf(capture.capture.captureScreen([0, 0, 10, 10]))).toBe("platform_unavailable");
    expect(await codeOf(input.input.moveTo(5, 5))).toBe("platform_unavailable");
    expect(await codeOf(input.input.typeText("1", "é", "sendinput"))).toBe("platform_unavailable");
    await input.dispose();
    await capture.dispose();
  });
});
