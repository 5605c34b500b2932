import { performance } from "node:perf_hooks";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import dbus from "dbus-next";
import koffi, { type LibraryHandle } from "koffi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containsPoint, containsRect } from "../../src/shared/geometry.js";
import type { A11yHandle, Platform, WindowInfo } from "../../src/shared/platform.js";
import { LOOSE_BUDGETS, McpHarness, type ToolCall } from "../support/mcp.js";
import {
  type App,
  approveConsentDialog,
  atspiBus,
  startApp,
  startSession,
  UNSAFE_XTEST,
  waitFor,
  waitForWindow,
  type X11Session,
  x11CliSuite,
  xdotool,
} from "./support.js";

/**
 * Races between the worker's check and its effect, over stdio against the built CLI on a private
 * Xvfb desktop. The input worker clicks as: verify → move → 150 ms settle → verify → down → up.
 * The test watches the core pointer (XQueryPointer on its own connection); the moment it reaches
 * the click point the worker is in its settle, and the test stops the server process (SIGSTOP),
 * changes the desktop (cover, move, focus, destroy), waits until the change is visible, and lets
 * the server go on (SIGCONT). No blind sleeps: the race is caught, not hoped for.
 *
 * "No press reached the target" is shown twice: the same pointer watch polls the core pointer's
 * button mask for the whole call (a 50 ms press cannot hide between ~1 ms polls; the control test
 * proves the watch sees a real click), and the states of every GTK check button under the point,
 * read through AT-SPI, are unchanged.
 */

const ST_CHECKED = 4;
const BUTTON_MASK = 0x1f00; // Button1Mask … Button5Mask

type NativeFn = ReturnType<LibraryHandle["func"]>;

/** The core pointer as the X server sees it, from a private Xlib connection in the test. */
class PointerWatch {
  private readonly query: NativeFn;
  private readonly closeDisplay: NativeFn;
  private readonly dpy: unknown;
  private readonly root: unknown;

  constructor() {
    const lib = koffi.load("libX11.so.6");
    const open = lib.func("void *XOpenDisplay(const char *name)");
    const rootOf = lib.func("unsigned long XDefaultRootWindow(void *dpy)");
    this.query = lib.func(
      "int XQueryPointer(void *dpy, unsigned long w, _Out_ unsigned long *root, _Out_ unsigned long *child, _Out_ int *rx, _Out_ int *ry, _Out_ int *wx, _Out_ int *wy, _Out_ unsigned int *mask)",
    );
    this.closeDisplay = lib.func("int XCloseDisplay(void *dpy)");
    this.dpy = open(process.env.DISPLAY ?? "");
    if (!this.dpy) throw new Error("the test cannot open the X display");
    this.root = rootOf(this.dpy);
  }

  read(): { x: number; y: number; buttons: number } {
    const x = [0];
    const y = [0];
    const mask = [0];
    this.query(this.dpy, this.root, [0], [0], x, y, [0], [0], mask);
    return { x: x[0]!, y: y[0]!, buttons: mask[0]! & BUTTON_MASK };
  }

  close(): void {
    this.closeDisplay(this.dpy);
  }
}

describe.skipIf(!x11CliSuite("races"))(
  "x11 races between the worker's check and its effect (built CLI over stdio)",
  () => {
    let session: X11Session;
    let p: Platform;
    let h: McpHarness;
    let bus: dbus.MessageBus;
    let watch: PointerWatch;
    let serverPid: number;
    let factory: WindowInfo;
    let cover: WindowInfo;
    let stealer: WindowInfo;
    const helpers: App[] = [];
    /** The AT-SPI objects of the factory's check buttons and their screen rects. */
    let checks: Array<{ node: { bus: string; path: string }; rect: [number, number, number, number] }> = [];

    async function win(title: string): Promise<WindowInfo> {
      return waitForWindow(p, title);
    }

    async function live(hwnd: string): Promise<WindowInfo> {
      const w = await p.desktop.getWindow(hwnd);
      if (!w) throw new Error("window gone");
      return w;
    }

    async function approve(hwnd: string): Promise<void> {
      const pending = h.call("request_access", { hwnd });
      await approveConsentDialog();
      const r = await pending;
      expect(r.structured.decision).toBe("approved");
    }

    async function bringToFront(hwnd: string): Promise<void> {
      await p.desktop.activateWindow(hwnd);
      await waitFor("window in front", async () => (await p.desktop.getWindow(hwnd))?.foreground);
    }

    async function checkStates(): Promise<boolean[]> {
      const out: boolean[] = [];
      for (const c of checks) {
        const reply = await bus.call(
          new dbus.Message({
            destination: c.node.bus,
            path: c.node.path,
            interface: "org.a11y.atspi.Accessible",
            member: "GetState",
          }),
        );
        const words = reply?.body[0] as number[];
        out.push(((words[0] ?? 0) & (1 << ST_CHECKED)) !== 0);
      }
      return out;
    }

    /** Window-relative centre of the i-th check button (top to bottom) and its screen point. */
    function checkPoint(i: number, w: WindowInfo): { x: number; y: number; sx: number; sy: number } {
      const r = checks[i]!.rect;
      const sx = Math.floor((r[0] + r[2]) / 2);
      const sy = Math.floor((r[1] + r[3]) / 2);
      return { x: sx - w.rect[0], y: sy - w.rect[1], sx, sy };
    }

    /**
     * Starts `call`, waits until the pointer reaches (sx, sy) — the worker moved and is now in its
     * settle — stops the server, runs `change`, resumes it. `late` says this process was itself
     * descheduled for so long that the settle may already have ended (then a change proves
     * nothing and the attempt is repeated). `pressed` is whether any pointer button went down at
     * any moment of the call.
     */
    async function duringSettle(
      call: () => Promise<ToolCall>,
      sx: number,
      sy: number,
      change: () => Promise<void>,
    ): Promise<{ r: ToolCall; pressed: boolean; late: boolean }> {
      // Park the pointer somewhere else first so its arrival is the worker's move.
      xdotool("mousemove", "--sync", "1275", "795");
      let pressed = false;
      let done = false;
      let lastAway = performance.now();
      let lateMs = -1;
      let arrived!: () => void;
      const arrival = new Promise<void>((r) => {
        arrived = r;
      });
      const poll = () => {
        if (done) return;
        const pt = watch.read();
        if (pt.buttons !== 0) pressed = true;
        if (lateMs < 0) {
          if (pt.x === sx && pt.y === sy) {
            process.kill(serverPid, "SIGSTOP");
            lateMs = performance.now() - lastAway;
            arrived();
          } else {
            lastAway = performance.now();
          }
        }
        setImmediate(poll);
      };
      const pending = call();
      poll();
      let stopped = false;
      try {
        await Promise.race([
          arrival.then(() => {
            stopped = true;
          }),
          pending.then((r) => {
            throw new Error(`the call ended (${r.code ?? "ok"}) before the pointer reached the point`);
          }),
        ]);
        await change();
      } finally {
        if (stopped) process.kill(serverPid, "SIGCONT");
      }
      const r = await pending;
      // Keep watching the buttons a little after the answer (a press follows the settle at once).
      await new Promise((res) => setTimeout(res, 100));
      done = true;
      // A settle is at least 150 ms after the move, which came after the last poll that saw the
      // pointer away: a stop within 140 ms of that poll is inside it.
      return { r, pressed, late: lateMs > 140 };
    }

    async function raceUntilCaught(
      hwnd: string,
      i: number,
      change: () => Promise<void>,
      restore: () => Promise<void>,
    ): Promise<{ r: ToolCall; pressed: boolean; before: boolean[]; after: boolean[] }> {
      for (let attempt = 0; attempt < 3; attempt++) {
        await bringToFront(hwnd);
        const w = await live(hwnd);
        const pt = checkPoint(i, w);
        const before = await checkStates();
        const out = await duringSettle(
          () => h.call("click_window", { hwnd, x: pt.x, y: pt.y }),
          pt.sx,
          pt.sy,
          change,
        );
        await restore();
        if (!out.late) return { ...out, before, after: await checkStates() };
      }
      throw new Error("the settle was never caught (this process was descheduled every time)");
    }

    beforeAll(async () => {
      session = startSession();
      const { createX11Platform } = await import("../../src/platforms/x11/index.js");
      p = await createX11Platform({ workerKind: "other" });
      helpers.push(startApp("xterm", ["-T", "uix races cover", "-geometry", "30x6+760+560"]));
      helpers.push(startApp("xterm", ["-T", "uix races stealer", "-geometry", "30x6+760+300"]));
      startApp("gtk3-widget-factory", []);
      cover = await win("uix races cover");
      stealer = await win("uix races stealer");
      factory = await win("gtk3-widget-factory");
      // The cover is always on top (_NET_WM_STATE add _NET_WM_STATE_ABOVE), parked away from the target point.
      const { XConnection } = await import("../../src/platforms/x11/xconn.js");
      const x11 = XConnection.open();
      try {
        x11.sendClientMessage(
          x11.root,
          Number(cover.hwnd),
          x11.atoms._NET_WM_STATE,
          [1, x11.atoms._NET_WM_STATE_ABOVE, 0, 2, 0],
          true,
        );
      } finally {
        x11.close();
      }
      await waitFor("cover on top", async () => (await p.desktop.getWindow(cover.hwnd))?.on_top);
      await bringToFront(factory.hwnd);
      factory = await live(factory.hwnd);
      // The six "checkbutton"s on page 1, top to bottom, as an independent AT-SPI walk sees them.
      const s = await p.accessibility.openSession(factory);
      try {
        const queue: A11yHandle[] = [await s.root()];
        while (queue.length > 0) {
          const n = queue.shift();
          const f = await s.facts(n);
          if (f.role === "check_box" && f.name === "checkbutton" && f.rect && !f.offscreen)
            checks.push({ node: n as { bus: string; path: string }, rect: f.rect });
          queue.push(...(await s.children(n)));
        }
      } finally {
        await s.dispose();
      }
      checks = checks.sort((a, b) => a.rect[1] - b.rect[1]);
      expect(checks.length).toBeGreaterThanOrEqual(2);
      bus = await atspiBus();
      watch = new PointerWatch();
      h = await McpHarness.start({
        ...UNSAFE_XTEST,
        ...LOOSE_BUDGETS,
        DESKTOP_AUTOMATION_ALLOWED_TITLES: "gtk3-widget-factory,uix races victim",
        DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: [factory.instance!.exe_path, cover.instance!.exe_path].join(
          ";",
        ),
        DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe,click",
        DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "true",
      });
      const pid = (h.client.transport as StdioClientTransport | undefined)?.pid;
      if (!pid) throw new Error("no server pid");
      serverPid = pid;
      await approve(factory.hwnd);
    }, 180_000);

    afterAll(async () => {
      // Never leave the server stopped, whatever failed.
      if (serverPid) {
        try {
          process.kill(serverPid, "SIGCONT");
        } catch {
          // already gone
        }
      }
      await h?.close();
      watch?.close();
      bus?.disconnect();
      await p?.dispose();
      session?.stop();
    });

    it("control: an undisturbed click is seen by the pointer watch and toggles the check button", async () => {
      await bringToFront(factory.hwnd);
      const w = await live(factory.hwnd);
      const pt = checkPoint(1, w);
      const before = await checkStates();
      const out = await duringSettle(
        () => h.call("click_window", { hwnd: factory.hwnd, x: pt.x, y: pt.y }),
        pt.sx,
        pt.sy,
        async () => {},
      );
      // Nothing is changed during the settle, so a late stop matters not.
      expect(out.r.isError).toBe(false);
      expect(out.pressed).toBe(true);
      const expected = [...before];
      expected[1] = !expected[1];
      await waitFor("the check button toggled", async () =>
        JSON.stringify(await checkStates()) === JSON.stringify(expected) ? true : null,
      );
    });

    it("a window raised over the point during the settle: occluded, no button pressed", async () => {
      let covered: [number, number, number, number] | null = null;
      const out = await raceUntilCaught(
        factory.hwnd,
        1,
        async () => {
          const w = await live(factory.hwnd);
          const pt = checkPoint(1, w);
          xdotool("windowmove", "--sync", cover.hwnd, String(pt.sx - 40), String(pt.sy - 40));
          // Visible to an enumeration like the worker's: the cover's frame holds the point, above the target.
          await waitFor("cover over the point", async () => {
            const all = await p.desktop.listWindows();
            const c = all.find((x) => x.hwnd === cover.hwnd);
            const t = all.find((x) => x.hwnd === factory.hwnd);
            return c && t && c.z < t.z && t.foreground && containsPoint(c.rect, pt.sx, pt.sy) ? c : null;
          });
          covered = (await live(cover.hwnd)).rect;
        },
        async () => {
          xdotool("windowmove", "--sync", cover.hwnd, "760", "560");
        },
      );
      expect(covered).not.toBeNull();
      expect(out.r.code).toBe("occluded");
      expect(out.pressed).toBe(false);
      expect(out.after).toEqual(out.before);
    });

    it("a window moved during the settle: target_changed, no button pressed", async () => {
      const home = await live(factory.hwnd);
      const step = checks[1]!.rect[1] - checks[0]!.rect[1];
      const out = await raceUntilCaught(
        factory.hwnd,
        1,
        async () => {
          // Down by one check-button row: a press now would land on the check button above.
          xdotool("windowmove", "--sync", factory.hwnd, String(home.rect[0]), String(home.rect[1] + step));
          await waitFor("window moved", async () => {
            const w = await p.desktop.getWindow(factory.hwnd);
            return w && w.rect[1] !== home.rect[1] ? w : null;
          });
        },
        async () => {
          xdotool("windowmove", "--sync", factory.hwnd, String(home.rect[0]), String(home.rect[1]));
          await waitFor("window back", async () => {
            const w = await p.desktop.getWindow(factory.hwnd);
            return w && w.rect[0] === home.rect[0] && w.rect[1] === home.rect[1] ? w : null;
          });
        },
      );
      expect(out.r.code).toBe("target_changed");
      expect(out.pressed).toBe(false);
      expect(out.after).toEqual(out.before);
    });

    it("focus stolen during the settle: not_foreground, no button pressed", async () => {
      const out = await raceUntilCaught(
        factory.hwnd,
        1,
        async () => {
          await p.desktop.activateWindow(stealer.hwnd);
          await waitFor(
            "stealer in front",
            async () => (await p.desktop.getWindow(stealer.hwnd))?.foreground,
          );
          // The stealer does not cover the point: the refusal is about focus alone.
          const w = await live(factory.hwnd);
          const pt = checkPoint(1, w);
          expect(containsPoint((await live(stealer.hwnd)).rect, pt.sx, pt.sy)).toBe(false);
        },
        async () => {
          await bringToFront(factory.hwnd);
        },
      );
      expect(out.r.code).toBe("not_foreground");
      expect(out.pressed).toBe(false);
      expect(out.after).toEqual(out.before);
    });

    it("the target destroyed (XKillClient) during the settle: target_gone, nothing pressed, the server keeps serving", async () => {
      // A missed settle cannot be repeated on the same window (it is gone either way): a late
      // attempt is redone once with a new victim. Two victims and the factory stay within the
      // three dialogs a client may open per minute.
      for (let attempt = 1; ; attempt++) {
        const victim = startApp("xterm", ["-T", "uix races victim", "-geometry", "40x10+300+200"]);
        const w = await win("uix races victim");
        await approve(w.hwnd);
        await bringToFront(w.hwnd);
        const lw = await live(w.hwnd);
        const x = 60;
        const y = 80;
        const out = await duringSettle(
          () => h.call("click_window", { hwnd: w.hwnd, x, y }),
          lw.rect[0] + x,
          lw.rect[1] + y,
          async () => {
            xdotool("windowkill", w.hwnd);
            await waitFor("victim window destroyed", async () =>
              (await p.desktop.getWindow(w.hwnd)) === null ? true : null,
            );
          },
        );
        await victim.exited;
        if (out.late && attempt < 2) continue;
        if (out.late) throw new Error("the settle was not caught twice (this process was descheduled)");
        expect(out.r.code).toBe("target_gone");
        expect(out.pressed).toBe(false);
        const again = await h.call("click_window", { hwnd: w.hwnd, x: 10, y: 10 });
        expect(["target_gone", "target_not_found"]).toContain(again.code);
        const list = (await h.ok("list_windows")).windows as Array<{ hwnd: string }>;
        expect(list.map((x) => x.hwnd)).toContain(factory.hwnd);
        expect(list.map((x) => x.hwnd)).not.toContain(w.hwnd);
        break;
      }
    });

    it("a region across the screen edge is out_of_bounds; the target destroyed while on-screen screenshots are in flight: each answers pixels or target_gone, the server keeps serving", async () => {
      // The whole window must be uncovered for a screenshot: the helper xterms go away first.
      for (const a of helpers) {
        a.child.kill("SIGKILL");
        await a.exited;
      }
      await waitFor("helper windows gone", async () => {
        const all = await p.desktop.listWindows();
        return all.some((w) => w.hwnd === cover.hwnd || w.hwnd === stealer.hwnd) ? null : true;
      });
      await bringToFront(factory.hwnd);
      // gtk3-widget-factory opens taller than the 1280×800 screen: a region that crosses the
      // edge is refused (never clipped to black), the part on screen is captured.
      const w = await live(factory.hwnd);
      const screen = await p.desktop.virtualScreen();
      expect(containsRect(screen, w.rect), "the factory reaches past the screen edge").toBe(false);
      const whole = await h.call("screenshot_window", {
        hwnd: factory.hwnd,
        crop_left: 0,
        crop_top: 0,
        crop_right: 0,
        crop_bottom: 0,
      });
      expect(whole.code).toBe("out_of_bounds");
      expect(whole.content.some((c) => c.type === "image")).toBe(false);
      const onScreen = {
        hwnd: factory.hwnd,
        crop_left: Math.max(0, screen[0] - w.rect[0]),
        crop_top: Math.max(0, screen[1] - w.rect[1]),
        crop_right: Math.max(0, w.rect[2] - screen[2]),
        crop_bottom: Math.max(0, w.rect[3] - screen[3]),
      };
      // Four screenshots in flight; at the first answer four more are sent and the server is
      // stopped at once, the window destroyed (XKillClient), the server resumed. The first batch
      // may have finished or meet the destroyed window anywhere in its pipeline; the second was
      // sent but not yet served when the window went away, so none of those returns pixels.
      const shots: Array<Promise<ToolCall>> = [];
      for (let i = 0; i < 4; i++) shots.push(h.call("screenshot_window", onScreen));
      const first = await Promise.race(shots);
      const late: Array<Promise<ToolCall>> = [];
      for (let i = 0; i < 4; i++) late.push(h.call("screenshot_window", onScreen));
      process.kill(serverPid, "SIGSTOP");
      try {
        xdotool("windowkill", factory.hwnd);
        await waitFor("factory window destroyed", async () =>
          (await p.desktop.getWindow(factory.hwnd)) === null ? true : null,
        );
      } finally {
        process.kill(serverPid, "SIGCONT");
      }
      expect(first.code ?? "ok", JSON.stringify(first.structured)).toBe("ok");
      expect(first.content.some((c) => c.type === "image")).toBe(true);
      const codes = (await Promise.all(shots)).map((r) => (r.isError ? r.code : "ok"));
      for (const c of codes) expect(["ok", "target_gone"]).toContain(c);
      const lateCodes = (await Promise.all(late)).map((r) => (r.isError ? r.code : "ok"));
      // Resolved by the supervisor after the window vanished (target_not_found) or by the worker.
      for (const c of lateCodes) expect(["target_gone", "target_not_found"]).toContain(c);
      await waitFor("factory window destroyed", async () =>
        (await p.desktop.getWindow(factory.hwnd)) === null ? true : null,
      );
      const after = await h.call("screenshot_window", onScreen);
      expect(["target_gone", "target_not_found"]).toContain(after.code);
      expect((await h.ok("list_windows")).windows).toEqual([]);
      expect((await h.ok("health_check")).platform).toBe("x11");
    });
  },
);
