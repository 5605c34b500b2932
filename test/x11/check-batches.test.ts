import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { XConnection } from "../../src/platforms/x11/xconn.js";
import { isUiError } from "../../src/shared/errors.js";
import type { Rect } from "../../src/shared/geometry.js";
import type { FrameTarget, Platform, WindowInfo } from "../../src/shared/platform.js";
import type { OpWireResult } from "../../src/shared/protocol.js";
import { verifyTarget, verifyUnchangedAfter } from "../../src/workers/verify.js";
import {
  type App,
  startApp,
  startSession,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
  xdotool,
} from "./support.js";

/**
 * The capture's check after the read goes out in one batch of xcb requests: the target read
 * afresh (DesktopPort.targetAndCovers) and the live check's own requests (confirmLive) are sent
 * by the same flush, so on a steady desktop the check asks the X server nothing after it.
 */

/**
 * Requests that make a round trip on Xlib's connection (the MIT-SHM read and X-Resource there):
 * each is a flush of its own, ordered with nothing on our xcb connection.
 */
function recordXlibTrips(x: XConnection): { log: string[]; stop: () => void } {
  const log: string[] = [];
  const fns: Array<[Record<string, unknown>, string]> = [
    [x.n as unknown as Record<string, unknown>, "XShmGetImage"],
    [x.n as unknown as Record<string, unknown>, "XGetImage"],
  ];
  if (x.n.xres) fns.push([x.n.xres as unknown as Record<string, unknown>, "XResQueryClientIds"]);
  const saved = fns.map(([o, name]) => [o, name, o[name]] as const);
  for (const [o, name, f] of saved) {
    if (typeof f !== "function") throw new Error(`${name} is not bound`);
    o[name] = (...a: unknown[]) => {
      log.push(name);
      return (f as (...b: unknown[]) => unknown)(...a);
    };
  }
  return {
    log,
    stop: () => {
      for (const [o, name, f] of saved) o[name] = f;
    },
  };
}

/**
 * xcb requests each step sent, in order ("req" one request, "flush" the connection flushed;
 * with `waits`, "wait" where a reply of a recorded request is first waited for, which sends
 * whatever is queued before it).
 */
function recordBatches(x: XConnection, opts: { waits?: boolean } = {}): { log: string[]; stop: () => void } {
  const log: string[] = [];
  const names = [
    "queryTree",
    "getGeometry",
    "getMapState",
    "getProperty",
    "inputFocus",
    "translateToRoot",
    "childAt",
    "probeGrabs",
    "shmGetImage",
    "askClientPids",
    "flush",
  ] as const;
  const target = x as unknown as Record<string, (...a: unknown[]) => unknown>;
  const saved = names.map((n) => [n, target[n]] as const);
  for (const [n, f] of saved) {
    if (typeof f !== "function") throw new Error(`XConnection.${n} is not a method`);
    target[n] = (...a: unknown[]) => {
      // A grab probe for neither device sends nothing.
      if (n !== "probeGrabs" || a[0] === true || a[1] === true)
        log.push(n === "flush" ? "flush" : `req ${n}`);
      const r = f.apply(x, a) as { resolve?: () => unknown } | undefined;
      const resolve = r?.resolve;
      if (opts.waits && r && typeof resolve === "function") {
        let waited = false;
        r.resolve = () => {
          if (!waited) log.push("wait");
          waited = true;
          return resolve.call(r);
        };
      }
      return r;
    };
  }
  return {
    log,
    stop: () => {
      for (const [n] of saved) delete target[n];
    },
  };
}

describe.skipIf(!X11_AVAILABLE)("x11 capture checks asked in the batch before them", () => {
  let session: X11Session;
  let p: Platform;
  let xterm: App;
  let win: WindowInfo;

  beforeAll(async () => {
    session = startSession();
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "capture" });
    xterm = startApp("xterm", ["-T", "uix batch", "-geometry", "60x10+40+60"]);
    win = await waitForWindow(p, "uix batch");
  });

  afterAll(async () => {
    xterm?.child.kill();
    await p?.dispose();
    session?.stop();
  });

  const REGION: [number, number, number, number] = [0, 0, 40, 30];

  async function postCheckLog(): Promise<string[]> {
    const windows = await p.desktop.listWindows();
    const target = { hwnd: win.hwnd, instance: win.instance ?? windows[0]!.instance! };
    const before = await verifyTarget(p.desktop, target, { region: REGION, windows });
    const x = (p.desktop as unknown as { x: XConnection }).x;
    const rec = recordBatches(x);
    try {
      await verifyUnchangedAfter(p.desktop, target, before.window, REGION);
    } finally {
      rec.stop();
    }
    return rec.log;
  }

  it("sends every request of the target's read and of the live check before its one flush", async () => {
    // The first checks learn what lies inside and above the target (asked ahead next time).
    await postCheckLog();
    await postCheckLog();
    const log = await postCheckLog();
    const flushAt = log.indexOf("flush");
    expect(flushAt).toBeGreaterThan(0);
    // Nothing asked after the batch went out: the live check read that batch's replies.
    expect(log.slice(flushAt + 1)).toEqual([]);
  });

  it("asked right after the read (askCheckAfterRead), the check after it sends nothing of its own", async () => {
    const target = { hwnd: win.hwnd, instance: win.instance! };
    const x = (p.desktop as unknown as { x: XConnection }).x;
    let log: string[] = [];
    let asked: string[] = [];
    for (let i = 0; i < 3; i++) {
      const windows = await p.desktop.listWindows();
      const before = await verifyTarget(p.desktop, target, { region: REGION, windows });
      const ask = recordBatches(x);
      try {
        p.desktop.askCheckAfterRead?.(win.hwnd);
      } finally {
        ask.stop();
      }
      asked = ask.log;
      const rec = recordBatches(x);
      try {
        await verifyUnchangedAfter(p.desktop, target, before.window, REGION);
      } finally {
        rec.stop();
      }
      log = rec.log;
    }
    expect(asked.at(-1)).toBe("flush");
    expect(log).toEqual([]);
  });

  it("the check before the read, after a listing told of it, asks nothing of its own", async () => {
    const target = { hwnd: win.hwnd, instance: win.instance! };
    const x = (p.desktop as unknown as { x: XConnection }).x;
    let log: string[] = [];
    for (let i = 0; i < 3; i++) {
      const windows = await p.desktop.listWindows({ regionCheckOf: win.hwnd });
      const rec = recordBatches(x);
      try {
        await verifyTarget(p.desktop, target, { region: REGION, windows });
      } finally {
        rec.stop();
      }
      log = rec.log;
    }
    expect(log).toEqual([]);
    // A listing that was not told asks the check's batch afresh.
    const plain = await p.desktop.listWindows();
    const rec = recordBatches(x);
    try {
      await verifyTarget(p.desktop, target, { region: REGION, windows: plain });
    } finally {
      rec.stop();
    }
    expect(rec.log.filter((e) => e.startsWith("req")).length).toBeGreaterThan(0);
  });

  it("still refuses a cover mapped after the read, and a later check asks afresh", async () => {
    const windows = await p.desktop.listWindows();
    const target = { hwnd: win.hwnd, instance: win.instance! };
    const before = await verifyTarget(p.desktop, target, { region: REGION, windows });
    const cover = startApp("xterm", ["-T", "uix cover", "-geometry", "20x5+40+60"]);
    try {
      await waitForWindow(p, "uix cover");
      let code = "no error";
      try {
        await verifyUnchangedAfter(p.desktop, target, before.window, REGION);
      } catch (e) {
        code = isUiError(e) ? e.code : String(e);
      }
      expect(code).toBe("occluded");
    } finally {
      cover.child.kill();
    }
    // Once the cover is gone the target passes again: nothing judged from the refused check.
    for (let i = 0; i < 50; i++) {
      if (!(await p.desktop.listWindows()).some((w) => w.title === "uix cover")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    xdotool("windowraise", win.hwnd);
    await new Promise((r) => setTimeout(r, 200));
    const fresh = await p.desktop.listWindows();
    const again = await verifyTarget(p.desktop, target, { region: REGION, windows: fresh });
    await expect(verifyUnchangedAfter(p.desktop, target, again.window, REGION)).resolves.toBeUndefined();
  });
  it("the read and the check after it go out in one flush on our xcb connection, X-Resource included", async () => {
    const target = { hwnd: win.hwnd, instance: win.instance! };
    const x = (p.desktop as unknown as { x: XConnection }).x;
    const [l, t] = win.rect;
    const rect: [number, number, number, number] = [l, t, l + REGION[2], t + REGION[3]];
    let read: string[] = [];
    let after: string[] = [];
    let xlib: string[] = [];
    for (let i = 0; i < 3; i++) {
      const windows = await p.desktop.listWindows({ regionCheckOf: win.hwnd });
      const before = await verifyTarget(p.desktop, target, { region: REGION, windows });
      const rec = recordBatches(x);
      const trips = recordXlibTrips(x);
      try {
        await p.capture.captureScreen(rect, undefined, () => p.desktop.askCheckAfterRead?.(win.hwnd));
        rec.stop();
        read = rec.log;
        const again = recordBatches(x);
        try {
          await verifyUnchangedAfter(p.desktop, target, before.window, REGION);
        } finally {
          again.stop();
        }
        after = again.log;
      } finally {
        rec.stop();
        trips.stop();
      }
      xlib = trips.log;
    }
    // The read first, the check's requests (its owner from X-Resource among them) behind it,
    // one flush for all; nothing on Xlib's connection, nothing asked after.
    expect(read[0]).toBe("req shmGetImage");
    expect(read).toContain("req askClientPids");
    expect(read.filter((e) => e === "flush")).toEqual(["flush"]);
    expect(read.at(-1)).toBe("flush");
    expect(xlib).toEqual([]);
    expect(after).toEqual([]);
  });

  it("a listing of a desktop as the last one found it sends all its requests, X-Resource included, before its first wait; a new window is asked after it", async () => {
    const x = (p.desktop as unknown as { x: XConnection }).x;
    await p.desktop.listWindows();
    await p.desktop.listWindows();
    const rec = recordBatches(x, { waits: true });
    const trips = recordXlibTrips(x);
    let listed: WindowInfo[] = [];
    try {
      listed = await p.desktop.listWindows();
    } finally {
      rec.stop();
      trips.stop();
    }
    expect(listed.some((w) => w.hwnd === win.hwnd && w.instance?.pid === win.instance?.pid)).toBe(true);
    expect(rec.log).toContain("req askClientPids");
    const firstWait = rec.log.indexOf("wait");
    expect(firstWait).toBeGreaterThan(0);
    // One batch: no request queued after the first wait (the stacking list's reply).
    expect(rec.log.slice(firstWait).filter((e) => e.startsWith("req"))).toEqual([]);
    expect(trips.log).toEqual([]);
    // A window the last listing did not know is asked after that batch, and listed.
    const extra = startApp("xterm", ["-T", "uix late", "-geometry", "20x5+300+300"]);
    try {
      let found: WindowInfo | undefined;
      for (let i = 0; i < 50 && !found; i++) {
        found = (await p.desktop.listWindows()).find((w) => w.title === "uix late");
        if (!found) await new Promise((r) => setTimeout(r, 100));
      }
      expect(found?.instance?.pid).toBe(extra.child.pid);
    } finally {
      extra.child.kill();
    }
  });

  it("a read that fails and is read again (half off the screen): the check is asked again behind the last read", async () => {
    const x = (p.desktop as unknown as { x: XConnection }).x;
    const [, , sw] = await p.desktop.virtualScreen();
    const rect: [number, number, number, number] = [sw - 20, 0, sw + 20, 30];
    await p.desktop.listWindows();
    const marks: number[] = [];
    const rec = recordBatches(x);
    try {
      await p.capture.captureScreen(rect, undefined, () => {
        marks.push(rec.log.length);
        p.desktop.askCheckAfterRead?.(win.hwnd);
      });
    } finally {
      rec.stop();
    }
    expect(marks).toHaveLength(2);
    const last = marks[1]!;
    expect(rec.log[last - 1]).toBe("req shmGetImage");
    expect(rec.log.slice(0, last).filter((e) => e === "req shmGetImage")).toHaveLength(2);
    expect(rec.log.at(-1)).toBe("flush");
    // The stale batch is dropped by the next check, which judges the one asked last.
    await p.desktop.listWindows();
  });

  it("a cover mapped or the target moved between the check and the read: the check in the read's flush refuses", async () => {
    const target = { hwnd: win.hwnd, instance: win.instance! };
    const [l, t] = win.rect;
    const rect: [number, number, number, number] = [l, t, l + REGION[2], t + REGION[3]];
    const x = (p.desktop as unknown as { x: XConnection }).x;
    const shotAfter = async (before: { window: WindowInfo }): Promise<string> => {
      const rec = recordBatches(x);
      try {
        await p.capture.captureScreen(rect, undefined, () => p.desktop.askCheckAfterRead?.(win.hwnd));
      } finally {
        rec.stop();
      }
      // The read and the check's requests in one flush, the read first.
      expect(rec.log[0]).toBe("req shmGetImage");
      expect(rec.log.filter((e) => e === "flush")).toEqual(["flush"]);
      try {
        await verifyUnchangedAfter(p.desktop, target, before.window, REGION);
        return "no error";
      } catch (e) {
        return isUiError(e) ? e.code : String(e);
      }
    };
    let windows = await p.desktop.listWindows({ regionCheckOf: win.hwnd });
    let before = await verifyTarget(p.desktop, target, { region: REGION, windows });
    const cover = startApp("xterm", ["-T", "uix cover2", "-geometry", "20x5+40+60"]);
    try {
      for (let i = 0; i < 50; i++) {
        const shown = (await p.desktop.listWindows()).some((w) => w.title === "uix cover2");
        if (shown) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await shotAfter(before)).toBe("occluded");
    } finally {
      cover.child.kill();
    }
    for (let i = 0; i < 50; i++) {
      if (!(await p.desktop.listWindows()).some((w) => w.title === "uix cover2")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    xdotool("windowraise", win.hwnd);
    await new Promise((r) => setTimeout(r, 200));
    windows = await p.desktop.listWindows({ regionCheckOf: win.hwnd });
    before = await verifyTarget(p.desktop, target, { region: REGION, windows });
    const frame = windows.find((w) => w.hwnd === win.hwnd)!;
    xdotool("windowmove", win.hwnd, String(frame.rect[0] + 30), String(frame.rect[1] + 20));
    try {
      for (let i = 0; i < 50; i++) {
        const now = (await p.desktop.listWindows()).find((w) => w.hwnd === win.hwnd);
        if (now && now.rect[0] !== frame.rect[0]) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await shotAfter(before)).toBe("target_changed");
    } finally {
      xdotool("windowmove", win.hwnd, String(frame.rect[0]), String(frame.rect[1]));
    }
  });
});

describe.skipIf(!X11_AVAILABLE)("x11 shots: the read in the batch of the check before it", () => {
  let session: X11Session;
  let p: Platform;
  let xterm: App;
  let win: WindowInfo;
  const REGION: [number, number, number, number] = [0, 0, 40, 30];

  beforeAll(async () => {
    session = startSession();
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "capture" });
    xterm = startApp("xterm", ["-T", "uix onehop", "-geometry", "60x10+60+80"]);
    win = await waitForWindow(p, "uix onehop");
  });

  afterAll(async () => {
    xterm?.child.kill();
    await p?.dispose();
    session?.stop();
  });

  type WindowShot = OpWireResult<"capture.window">;

  /** capture.window in this process on `platform` (the handler the capture worker runs). */
  async function windowShot(platform: Platform = p): Promise<WindowShot> {
    const { captureHandlers } = await import("../../src/workers/capture/handlers.js");
    const { OPS } = await import("../../src/shared/protocol.js");
    const args = OPS["capture.window"].args.parse({
      hwnd: win.hwnd,
      region: REGION,
      masks: [],
      grid_spacing: null,
      output: "png",
      tiles: false,
      max_png_bytes: 1 << 24,
      compression_level: 2,
      granted: [{ instance: win.instance, shown_before: [] }],
    });
    return (await captureHandlers["capture.window"]!(args, {
      signal: new AbortController().signal,
      deadline: Date.now() + 30_000,
      init: { kind: "capture", platform: "x11", fake_desktop: null, log_level: "silent" },
      platform,
    })) as WindowShot;
  }

  /** The platform with `during` run where the read in the listing's batch is asked, and its frame kept. */
  function readAheadHook(during: (x: XConnection) => void): { platform: Platform; frames: FrameTarget[] } {
    const frames: FrameTarget[] = [];
    const x = (p.desktop as unknown as { x: XConnection }).x;
    const askRead = p.capture.askRead?.bind(p.capture);
    const platform: Platform = {
      ...p,
      capture: {
        captureScreen: (rect, into, afterRead) => p.capture.captureScreen(rect, into, afterRead),
        askRead: (rect, into, afterRead) => {
          frames.push(into);
          during(x);
          return askRead ? askRead(rect, into, afterRead) : null;
        },
      },
    };
    return { platform, frames };
  }

  async function settled(): Promise<WindowInfo> {
    xdotool("windowraise", win.hwnd);
    await new Promise((r) => setTimeout(r, 200));
    const first = await windowShot();
    expect(first.shot?.png).toBeTruthy();
    return first.windows.find((w) => w.hwnd === win.hwnd)!;
  }

  it("an unchanged desktop's shot sends every request, the read among them, before its one wait", async () => {
    await settled();
    const x = (p.desktop as unknown as { x: XConnection }).x;
    const rec = recordBatches(x, { waits: true });
    const trips = recordXlibTrips(x);
    let shot: WindowShot;
    try {
      shot = await windowShot();
    } finally {
      rec.stop();
      trips.stop();
    }
    expect(shot.shot?.png).toBeTruthy();
    const firstWait = rec.log.indexOf("wait");
    expect(firstWait).toBeGreaterThan(0);
    const before = rec.log.slice(0, firstWait);
    // The listing, the check before the read, the read, the check after it (its X-Resource).
    const read = before.indexOf("req shmGetImage");
    expect(read).toBeGreaterThan(0);
    expect(before.slice(read + 1)).toContain("req askClientPids");
    expect(before.slice(0, read)).toContain("req askClientPids");
    // One batch: no request queued after its flush (later flushes find nothing to send).
    const firstFlush = rec.log.indexOf("flush");
    expect(firstFlush).toBeGreaterThan(read);
    expect(firstFlush).toBeLessThan(firstWait);
    expect(rec.log.slice(firstFlush).filter((e) => e.startsWith("req"))).toEqual([]);
    expect(trips.log).toEqual([]);
  });

  it("a moved or resized window is read again where it is now, and the frame is exact", async () => {
    const x = (p.desktop as unknown as { x: XConnection }).x;
    const size = /Geometry: (\d+)x(\d+)/.exec(xdotool("getwindowgeometry", win.hwnd));
    for (const change of ["move", "resize"] as const) {
      const was = await settled();
      if (change === "move")
        xdotool("windowmove", "--sync", win.hwnd, String(was.rect[0] + 37), String(was.rect[1] + 23));
      else xdotool("windowsize", "--sync", win.hwnd, "500", "200");
      await new Promise((r) => setTimeout(r, 200));
      const rec = recordBatches(x);
      let moved: WindowShot;
      try {
        moved = await windowShot();
      } finally {
        rec.stop();
      }
      const now = moved.windows.find((w) => w.hwnd === win.hwnd)!;
      if (change === "move") expect(now.rect[0]).toBe(was.rect[0] + 37);
      else expect(now.rect).not.toEqual(was.rect);
      // The read asked at the old rect, dropped, then one at the new rect.
      expect(rec.log.filter((e) => e === "req shmGetImage")).toHaveLength(2);
      // The same pixels as a shot of the window where it now is (which reads in the batch).
      const again = await windowShot();
      expect(moved.shot?.frame_hash).toBeTruthy();
      expect(moved.shot?.frame_hash).toBe(again.shot?.frame_hash);
      const [l, t] = now.rect;
      const plain = await p.capture.captureScreen([l, t, l + REGION[2], t + REGION[3]]);
      const { encodePng } = await import("../../src/workers/capture/png.js");
      expect(Buffer.from(moved.shot?.png ?? []).equals(Buffer.from(encodePng(plain, 2)))).toBe(true);
    }
    if (size) xdotool("windowsize", "--sync", win.hwnd, size[1]!, size[2]!);
  });

  it("another listing between a shot's listing and its check before the read: its read in the batch is void", async () => {
    await settled();
    const frame = {
      width: REGION[2],
      height: REGION[3],
      stride: REGION[2] * 3,
      data: new Uint8Array(REGION[2] * REGION[3] * 3),
    };
    const calls: string[] = [];
    let read: ReturnType<NonNullable<Platform["capture"]["askRead"]>> = null;
    const windows = await p.desktop.listWindows({
      regionCheckOf: win.hwnd,
      readAhead: {
        ask: (lastRect) => {
          calls.push("ask");
          const [l, t] = lastRect;
          read = p.capture.askRead?.([l, t, l + REGION[2], t + REGION[3]], frame) ?? null;
        },
        stale: () => calls.push("stale"),
      },
    });
    expect(calls).toEqual(["ask"]);
    expect(windows.some((w) => w.hwnd === win.hwnd)).toBe(true);
    // Another shot's listing drops the check's requests asked before the read.
    await p.desktop.listWindows();
    expect(calls).toEqual(["ask", "stale"]);
    (read as { drop(): void } | null)?.drop();
    expect(frame.data.every((b) => b === 0)).toBe(true);
  });

  it("a cover mapped or the window moved between the check's requests and the read: refused, no pixel leaves (screenshot_window, capture.region)", async () => {
    const shots = {
      window: async (on: Platform) => {
        const r = await windowShot(on);
        return { made: r.shot !== null, code: r.refused?.code ?? null };
      },
      region: async (on: Platform) => {
        const r = await regionShot(on);
        return { made: r.frame !== null, code: r.code };
      },
    };
    for (const [kind, shot] of Object.entries(shots)) {
      const was = await settled();
      let cover: App | null = null;
      const title = `uix onehop cover ${kind}`;
      const covered = readAheadHook((x) => {
        // The listing's requests and the check's go out first; the cover maps before the read.
        x.flush();
        cover = startApp("xterm", ["-T", title, "-geometry", `20x5+${was.rect[0]}+${was.rect[1]}`]);
        // Until the X server has mapped it.
        xdotool("search", "--sync", "--onlyvisible", "--name", title);
      });
      try {
        const r = await shot(covered.platform);
        expect(covered.frames).toHaveLength(1);
        expect(r).toEqual({ made: false, code: "occluded" });
        expect(covered.frames[0]!.data.every((b) => b === 0)).toBe(true);
      } finally {
        (cover as App | null)?.child.kill();
      }
      await new Promise((r) => setTimeout(r, 300));
      const still = await settled();
      const moved = readAheadHook((x) => {
        x.flush();
        moveAndWait(win.hwnd, still.rect[0] + 31, still.rect[1]);
      });
      try {
        const r = await shot(moved.platform);
        expect(moved.frames).toHaveLength(1);
        expect(r).toEqual({ made: false, code: "target_changed" });
        expect(moved.frames[0]!.data.every((b) => b === 0)).toBe(true);
      } finally {
        xdotool("windowmove", "--sync", win.hwnd, String(still.rect[0]), String(still.rect[1]));
      }
    }
  });

  /** capture.region's area, window-relative, away from the corner (the read is at its place). */
  const AREA: [number, number, number, number] = [8, 6, 48, 36];

  type Frame = OpWireResult<"capture.region">;
  const xOf = (): XConnection => (p.desktop as unknown as { x: XConnection }).x;

  function ctxOn(platform: Platform) {
    return {
      signal: new AbortController().signal,
      deadline: Date.now() + 30_000,
      init: {
        kind: "capture" as const,
        platform: "x11" as const,
        fake_desktop: null,
        log_level: "silent" as const,
      },
      platform,
    };
  }

  /**
   * The supervisor's way: desktop.list (its id), then capture.region against it, in this
   * process on `platform` (the handlers the capture worker runs). `listing`: "id" (the worker's
   * own, as the supervisor sends it), "none" (too old: the shot lists the desktop itself), or
   * windows sent by value.
   */
  async function regionShot(
    platform: Platform = p,
    listing: "id" | "none" | WindowInfo[] = "id",
    record?: () => { log: string[]; stop: () => void },
  ): Promise<{ frame: Frame | null; code: string | null; log: string[] }> {
    const { captureHandlers } = await import("../../src/workers/capture/handlers.js");
    const { OPS } = await import("../../src/shared/protocol.js");
    const listed =
      listing === "id"
        ? ((await captureHandlers["desktop.list"]!({}, ctxOn(platform))) as OpWireResult<"desktop.list">)
        : null;
    const args = OPS["capture.region"].args.parse({
      target: { hwnd: win.hwnd, instance: win.instance, shown_before: [] },
      region: AREA,
      masks: [],
      grid_spacing: null,
      output: "png",
      tiles: false,
      max_png_bytes: 1 << 24,
      compression_level: 2,
      listing_id: listed?.listing_id ?? null,
      listing: Array.isArray(listing) ? { at: Date.now(), windows: listing } : null,
    });
    const rec = record?.();
    try {
      const frame = (await captureHandlers["capture.region"]!(args, ctxOn(platform))) as Frame;
      return { frame, code: null, log: rec?.log ?? [] };
    } catch (e) {
      if (!isUiError(e)) throw e;
      return { frame: null, code: e.code, log: rec?.log ?? [] };
    } finally {
      rec?.stop();
    }
  }

  /** A direct read of the region where the window is now, as PNG. */
  async function directPng(rect: Rect, area: Rect = AREA): Promise<Buffer> {
    const [l, t] = rect;
    const plain = await p.capture.captureScreen([l + area[0], t + area[1], l + area[2], t + area[3]]);
    const { encodePng } = await import("../../src/workers/capture/png.js");
    return Buffer.from(encodePng(plain, 2));
  }

  async function settledRegion(): Promise<WindowInfo> {
    xdotool("windowraise", win.hwnd);
    await new Promise((r) => setTimeout(r, 200));
    for (let i = 0; i < 3; i++) expect((await regionShot()).frame?.png).toBeTruthy();
    return (await p.desktop.listWindows()).find((w) => w.hwnd === win.hwnd)!;
  }

  it("an unchanged desktop's shot, against the supervisor's listing or a listing of its own, is one flush, the read at the region's place", async () => {
    const now = await settledRegion();
    for (const listing of ["id", "none"] as const) {
      await regionShot(p, listing);
      const reads: Rect[] = [];
      const x = xOf();
      const shm = x.shmGetImage.bind(x);
      const spy = x as unknown as { shmGetImage: XConnection["shmGetImage"] };
      spy.shmGetImage = (r, seg) => {
        reads.push([r.x, r.y, r.x + r.width, r.y + r.height]);
        return shm(r, seg);
      };
      let trips: { log: string[]; stop: () => void } | null = null;
      let shot: Awaited<ReturnType<typeof regionShot>>;
      try {
        shot = await regionShot(p, listing, () => {
          trips = recordXlibTrips(x);
          return recordBatches(x, { waits: true });
        });
      } finally {
        delete (spy as { shmGetImage?: unknown }).shmGetImage;
        (trips as { stop: () => void } | null)?.stop();
      }
      expect(shot.code).toBeNull();
      expect(Buffer.from(shot.frame?.png ?? []).equals(await directPng(now.rect))).toBe(true);
      const [l, t] = now.rect;
      expect(reads).toEqual([[l + AREA[0], t + AREA[1], l + AREA[2], t + AREA[3]]]);
      const log = shot.log;
      const firstWait = log.indexOf("wait");
      const read = log.indexOf("req shmGetImage");
      expect(firstWait).toBeGreaterThan(read);
      // The check before the read asked before it, the check after it (its X-Resource) behind.
      expect(log.slice(0, read).filter((e) => e.startsWith("req")).length).toBeGreaterThan(0);
      expect(log.slice(read + 1, firstWait)).toContain("req askClientPids");
      const firstFlush = log.indexOf("flush");
      expect(firstFlush).toBeGreaterThan(read);
      expect(firstFlush).toBeLessThan(firstWait);
      expect(log.slice(firstFlush).filter((e) => e.startsWith("req"))).toEqual([]);
      expect((trips as { log: string[] } | null)?.log).toEqual([]);
    }
  });

  it("a window moved since the last listing is read again where it is now (the shot's own listing), and the frame is exact", async () => {
    const was = await settledRegion();
    xdotool("windowmove", "--sync", win.hwnd, String(was.rect[0] + 29), String(was.rect[1] + 17));
    try {
      await new Promise((r) => setTimeout(r, 200));
      const shot = await regionShot(p, "none", () => recordBatches(xOf()));
      expect(shot.code).toBeNull();
      // The read asked at the old rect, dropped, then one at the new rect with its own check.
      expect(shot.log.filter((e) => e === "req shmGetImage")).toHaveLength(2);
      const now = (await p.desktop.listWindows()).find((w) => w.hwnd === win.hwnd)!;
      expect(now.rect[0]).toBe(was.rect[0] + 29);
      expect(Buffer.from(shot.frame?.png ?? []).equals(await directPng(now.rect))).toBe(true);
    } finally {
      xdotool("windowmove", "--sync", win.hwnd, String(was.rect[0]), String(was.rect[1]));
    }
  });

  it("a window mapped above the target since the last listing: the check before the read would ask about it after the read, so the read is void and read again (screenshot_window, capture.region)", async () => {
    for (const kind of ["window", "region"] as const) {
      const was = kind === "window" ? await settled() : await settledRegion();
      const listed = await p.desktop.listWindows();
      const title = `uix other ${kind}`;
      const other = startApp("xterm", ["-T", title, "-geometry", "10x3+420+420"]);
      try {
        xdotool("search", "--sync", "--onlyvisible", "--name", title);
        await new Promise((r) => setTimeout(r, 200));
        const rec = recordBatches(xOf());
        let png: Uint8Array | null = null;
        try {
          // capture.region against the listing made before the window was mapped.
          if (kind === "window") png = (await windowShot()).shot?.png ?? null;
          else png = (await regionShot(p, listed)).frame?.png ?? null;
        } finally {
          rec.stop();
        }
        expect(rec.log.filter((e) => e === "req shmGetImage")).toHaveLength(2);
        const area = kind === "window" ? REGION : AREA;
        expect(Buffer.from(png ?? []).equals(await directPng(was.rect, area))).toBe(true);
      } finally {
        other.child.kill();
      }
      for (let i = 0; i < 50; i++) {
        if (!(await p.desktop.listWindows()).some((w) => w.title === title)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
});

/** Moves `hwnd` and waits until the X server reports it elsewhere (not only the WM's word). */
function moveAndWait(hwnd: string, x: number, y: number): void {
  const where = () =>
    /Position: (-?\d+),(-?\d+)/.exec(xdotool("getwindowgeometry", hwnd))?.slice(1).join(",");
  const was = where();
  xdotool("windowmove", "--sync", hwnd, String(x), String(y));
  for (let i = 0; i < 100 && where() === was; i++)
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
}
