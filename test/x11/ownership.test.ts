import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import type { WindowInfo } from "../../src/shared/platform.js";
import { settled } from "./attacker.js";
import {
  type App,
  catXterm,
  grantedTarget,
  readTyped,
  startApp,
  waitFor,
  x11CliSuite,
  xdotool,
} from "./support.js";

/**
 * Windows of other programs inside the granted window, and XInput 2 grabs of the devices our
 * XTest events go through, end to end over stdio: the built CLI on a private Xvfb + openbox
 * desktop, a real xterm as the granted target (it runs `cat` into a file, so what reached it can
 * be counted), and other local X clients (test/x11/fixtures/attacker.c, a second xterm) that put
 * a window of theirs inside the target (a child window, XReparentWindow, `xterm -into`) or grab
 * "Virtual core XTEST keyboard|pointer" with XIGrabDevice. Each got the click, the keys or its
 * pixels into the screenshot while the checks took the client's whole subtree as the target and
 * probed only the master devices; each must be refused now, with nothing reaching the attacker.
 *
 * The grab attacks run a second time with the server's X connections acting as without
 * libX11-xcb (UIINSPECT_X11_TEST_WITHOUT_XLIB_XCB=1), where the core passive-grab probes cannot
 * use checked xcb requests on the connection that holds the server grab.
 */

const HAVE_CC = spawnSync("sh", ["-c", "command -v cc"]).status === 0;

for (const withoutXlibXcb of [false, true]) {
  /** The tests that do not depend on libX11-xcb run once, with it. */
  const onlyWithXlibXcb = it.skipIf(withoutXlibXcb);
  describe.skipIf(!x11CliSuite("ownership", { what: "no C compiler (cc)", ok: HAVE_CC }))(
    `x11 ownership all the way down and XTEST device grabs (attacks, built CLI over stdio${withoutXlibXcb ? ", without libX11-xcb" : ""})`,
    () => {
      const f = grantedTarget({
        env: withoutXlibXcb ? { UIINSPECT_X11_TEST_WITHOUT_XLIB_XCB: "1" } : {},
        name: withoutXlibXcb ? "own-noxcb" : "own",
        titlePatterns: ["uix own *"],
        actions: ["observe", "inspect", "hover", "click", "interact", "key", "text"],
        start: (f) => catXterm(f.p, "uix own target", "60x16+200+150", join(f.dir, "typed.txt")),
      });
      const { attack, targetInFront } = f;
      const typed = () => readTyped(join(f.dir, "typed.txt"));
      const apps: App[] = [];

      async function stopAll(): Promise<void> {
        await f.stopAttackers();
        for (const a of apps.splice(0)) {
          if (a.child.exitCode === null && a.child.signalCode === null) a.child.kill("SIGKILL");
          await a.exited;
        }
      }

      /** The window-relative point of a screen point of the target. */
      const rel = (w: WindowInfo, sx: number, sy: number) => ({ x: sx - w.rect[0], y: sy - w.rect[1] });

      async function text(s: string) {
        const token = await f.h.ok("request_confirmation", { action_class: "text", hwnd: f.target.hwnd });
        return f.h.call("send_text", { hwnd: f.target.hwnd, text: s, confirmation_token: token.token_id });
      }

      beforeEach(async () => {
        await stopAll();
      });

      afterAll(async () => {
        await stopAll();
      });

      /** A window's absolute position on the screen, as the X server says (xwininfo). */
      function absolute(xid: number | string): [number, number] {
        const out = spawnSync("xwininfo", ["-id", String(xid)], { encoding: "utf8" }).stdout;
        return [
          Number(/Absolute upper-left X:\s+(-?\d+)/.exec(out)?.[1]),
          Number(/Absolute upper-left Y:\s+(-?\d+)/.exec(out)?.[1]),
        ];
      }

      /** Where the embedded attacks put their window: inside the client, away from its edges. */
      const spot = { x: 40, y: 60, w: 160, h: 90 };
      const inside = (mode: "embed" | "reparent") =>
        attack([mode, f.target.hwnd, String(spot.x), String(spot.y), String(spot.w), String(spot.h)]);

      onlyWithXlibXcb("the untouched target: a click, a screenshot and typed text all reach it", async () => {
        const w = await targetInFront();
        const click = await f.h.call("click_window", {
          hwnd: f.target.hwnd,
          ...rel(w, w.rect[0] + 100, w.rect[1] + 100),
        });
        expect(click.code ?? "ok").toBe("ok");
        const shot = await f.h.call("screenshot_window", { hwnd: f.target.hwnd, region_name: "body" });
        expect(shot.code ?? "ok").toBe("ok");
        const before = typed().length;
        expect((await text("abc")).code ?? "ok").toBe("ok");
        await waitFor("typed", async () => (typed().length >= before + 3 ? true : null));
      });

      for (const mode of ["embed", "reparent"] as const) {
        onlyWithXlibXcb(
          `another client's window inside the target (${mode}): a click there is occluded, it gets nothing`,
          async () => {
            const w = await targetInFront();
            const inner = await inside(mode);
            const [ax, ay] = absolute(inner.xid);
            const r = await f.h.call("click_window", { hwnd: f.target.hwnd, ...rel(w, ax + 20, ay + 20) });
            expect(r.code).toBe("occluded");
            await settled(inner);
            expect(inner.count("button")).toBe(0);
            // Elsewhere in the target the click still lands.
            const ok = await f.h.call("click_window", {
              hwnd: f.target.hwnd,
              ...rel(w, ax + spot.w + 20, ay + 10),
            });
            expect(ok.code ?? "ok").toBe("ok");
          },
        );
      }

      onlyWithXlibXcb(
        "another client's window inside the target: a screenshot over it is refused, none of its pixels leave",
        async () => {
          await targetInFront();
          const inner = await inside("embed");
          expect(inner.xid).toBeGreaterThan(0);
          const shot = await f.h.call("screenshot_window", { hwnd: f.target.hwnd, region_name: "body" });
          expect(shot.code).toBe("occluded");
          expect(shot.content.filter((c) => c.type === "image")).toHaveLength(0);
        },
      );

      onlyWithXlibXcb(
        "another client's window inside the target, the pointer on it: send_text is not_foreground, no key arrives",
        async () => {
          await targetInFront();
          const inner = await inside("embed");
          // Keys go to the window under the pointer when it lies inside the focus window.
          xdotool("mousemove", "--window", String(inner.xid), "20", "20");
          const before = typed();
          const r = await text("rm -rf ~\n");
          expect(r.code).toBe("not_foreground");
          await settled(inner);
          expect(inner.count("key")).toBe(0);
          expect(typed()).toBe(before);
        },
      );

      onlyWithXlibXcb(
        "`xterm -into` the target: click and keys refused, nothing reaches the embedded shell",
        async () => {
          const w = await targetInFront();
          const intoFile = join(f.dir, "into.txt");
          apps.push(
            startApp("xterm", [
              "-into",
              f.target.hwnd,
              "-geometry",
              "20x4+30+40",
              "-e",
              "sh",
              "-c",
              `stty -icanon -echo; exec cat > '${intoFile}'`,
            ]),
          );
          // The target's own child (its VT window) and the embedded xterm's top-level, whose pid is
          // the second xterm's.
          const embedded = await waitFor("embedded xterm", async () => {
            const out = spawnSync("xwininfo", ["-children", "-id", f.target.hwnd], {
              encoding: "utf8",
            }).stdout;
            const kids = [...out.matchAll(/^\s+(0x[0-9a-f]+) /gm)].map((m) => m[1]!);
            const mine = new Set(kids.filter((k) => k !== f.target.hwnd));
            for (const k of mine) {
              const info = spawnSync("xwininfo", ["-id", k], { encoding: "utf8" }).stdout;
              const width = Number(/Width:\s+(\d+)/.exec(info)?.[1]);
              if (width > 0 && width < w.rect[2] - w.rect[0] - 60) return k;
            }
            return null;
          });
          const [ex, ey] = absolute(embedded);
          xdotool("mousemove", String(ex + 10), String(ey + 10));
          const click = await f.h.call("click_window", { hwnd: f.target.hwnd, ...rel(w, ex + 10, ey + 10) });
          expect(click.code).toBe("occluded");
          const r = await text("id\n");
          expect(r.code).toBe("not_foreground");
          await new Promise((res) => setTimeout(res, 300));
          expect(existsSync(intoFile) ? readFileSync(intoFile, "latin1") : "").toBe("");
        },
      );

      it("XIGrabDevice on Virtual core XTEST keyboard: send_text is input_grabbed, the grabber reads nothing", async () => {
        await targetInFront();
        const grab = await attack(["xigrab", "keyboard"]);
        const before = typed();
        const r = await text("hunter2\n");
        expect(r.code).toBe("input_grabbed");
        await settled(grab);
        expect(grab.count("key")).toBe(0);
        expect(typed()).toBe(before);
      });

      for (const kind of ["core", "xi2"] as const) {
        it(`a passive grab (${kind === "core" ? "XGrabKey" : "XIGrabKeycode"}) on the root of a key we would type: input_grabbed, nothing typed, the grabber reads nothing`, async () => {
          await targetInFront();
          const grab = await attack(["passivekey", kind, "n"]);
          const before = typed();
          const r = await text("hunter2\n");
          expect(r.code).toBe("input_grabbed");
          await settled(grab);
          expect(grab.count("key")).toBe(0);
          expect(typed()).toBe(before);
          await grab.stop();
          // The grab gone, the same text reaches the target again.
          await targetInFront();
          expect((await text("n")).code ?? "ok").toBe("ok");
          await waitFor("typed", async () => (typed().length >= before.length + 1 ? true : null));
        });
      }

      it("a passive grab of a key we do not type: send_text reaches the target", async () => {
        await targetInFront();
        const grab = await attack(["passivekey", "core", "F7"]);
        const before = typed().length;
        expect((await text("abc")).code ?? "ok").toBe("ok");
        await waitFor("typed", async () => (typed().length >= before + 3 ? true : null));
        await settled(grab);
        expect(grab.count("key")).toBe(0);
      });

      it("a passive grab of a key we type, taken and dropped over and over: each send_text is ok or input_grabbed, the grabber reads nothing", async () => {
        await targetInFront();
        const grab = await attack(["flipkey", "n"]);
        const codes = new Set<string>();
        // A probe before the server grab would see the grab gone about half the time, and the
        // grab back before the key in many of those: 15 tries leave that almost no chance.
        for (let i = 0; i < 15; i++) codes.add((await text("nnnn")).code ?? "ok");
        await settled(grab);
        expect(grab.count("key")).toBe(0);
        expect([...codes].filter((c) => c !== "ok" && c !== "input_grabbed")).toEqual([]);
      });

      /** A click and a scroll at a point inside the target's client area. */
      const click = (w: WindowInfo) =>
        f.h.call("click_window", { hwnd: f.target.hwnd, ...rel(w, w.rect[0] + 100, w.rect[1] + 100) });
      const scroll = (w: WindowInfo, notches: number) =>
        f.h.call("scroll_window", {
          hwnd: f.target.hwnd,
          ...rel(w, w.rect[0] + 100, w.rect[1] + 100),
          notches,
        });

      /**
       * Every button press the X server processes, wherever it delivers it (XI2 raw events on the
       * root), counted from now: zero means nothing was pressed at all, so the target got nothing.
       */
      const watchPresses = () => attack(["rawbuttons"]);

      /** No button is held down (the server's pointer state, read by another client). */
      async function noButtonDown(): Promise<void> {
        const probe = await attack(["buttonsdown"]);
        await probe.stop();
        expect(probe.count("buttons 0")).toBe(1);
      }

      for (const kind of ["core", "xi2"] as const) {
        const api = kind === "core" ? "XGrabButton" : "XIGrabButton";
        it(`a passive grab (${api}) of the left button on the root: a click is input_grabbed, nothing pressed, the grabber gets nothing`, async () => {
          const w = await targetInFront();
          const raw = await watchPresses();
          const grab = await attack(["passivebutton", kind, "1", "0"]);
          const r = await click(w);
          expect(r.code).toBe("input_grabbed");
          await settled(grab);
          await settled(raw);
          expect(grab.count("button")).toBe(0);
          expect(raw.count("raw")).toBe(0);
          await noButtonDown();
          // The grab gone, the same click is pressed (once) and the grabber still got nothing.
          await grab.stop();
          await targetInFront();
          expect((await click(w)).code ?? "ok").toBe("ok");
          await settled(raw);
          expect(raw.count("raw")).toBe(1);
          await noButtonDown();
        });

        it(`a passive grab (${api}) of the wheel's button with any modifiers on the root: scroll_window is input_grabbed, no notch pressed`, async () => {
          const w = await targetInFront();
          const raw = await watchPresses();
          const grab = await attack(["passivebutton", kind, "4", "any"]);
          const r = await scroll(w, 3);
          expect(r.code).toBe("input_grabbed");
          await settled(grab);
          await settled(raw);
          expect(grab.count("button")).toBe(0);
          expect(raw.count("raw")).toBe(0);
          await noButtonDown();
          // Scrolling the other way (button 5) activates nothing of it: pressed, the grabber gets none.
          expect((await scroll(w, -2)).code ?? "ok").toBe("ok");
          await settled(grab);
          await settled(raw);
          expect(raw.count("raw")).toBe(2);
          expect(grab.count("button")).toBe(0);
        });
      }

      it("a passive grab of the left button on the root, taken and dropped over and over: each click is ok or input_grabbed, the grabber gets no press", async () => {
        const w = await targetInFront();
        const grab = await attack(["flipbutton", "1"]);
        const codes = new Set<string>();
        for (let i = 0; i < 15; i++) codes.add((await click(w)).code ?? "ok");
        await settled(grab);
        expect(grab.count("button")).toBe(0);
        expect([...codes].filter((c) => c !== "ok" && c !== "input_grabbed")).toEqual([]);
        await noButtonDown();
      });

      it("another client's passive grab on the root above the frame, or inside the client: click and scroll input_grabbed, nothing pressed", async () => {
        const w = await targetInFront();
        // xterm's VT window, the deepest window under the point.
        const vt = /^\s+(0x[0-9a-f]+) /m.exec(
          spawnSync("xwininfo", ["-children", "-id", f.target.hwnd], { encoding: "utf8" }).stdout,
        )?.[1];
        expect(vt).toBeDefined();
        const raw = await watchPresses();
        const inner = await attack(["passivebutton", "core", "1", "0", vt!]);
        expect((await click(w)).code).toBe("input_grabbed");
        await settled(inner);
        const onRoot = await attack(["passivebutton", "xi2", "4", "0"]);
        expect((await scroll(w, 1)).code).toBe("input_grabbed");
        await settled(onRoot);
        await settled(raw);
        expect(inner.count("button") + onRoot.count("button")).toBe(0);
        expect(raw.count("raw")).toBe(0);
        await noButtonDown();
      });

      it("another client's passive grab on the WM frame or the client's own window (where openbox's own bindings sit): the press's delivery is recorded, input_grabbed, no button left down", async () => {
        const w = await targetInFront();
        const frame = /Parent window id: (0x[0-9a-f]+)/.exec(
          spawnSync("xwininfo", ["-tree", "-id", f.target.hwnd], { encoding: "utf8" }).stdout,
        )?.[1];
        expect(frame).toBeDefined();
        // openbox binds Left/Middle/Right on the client window and Alt+buttons on the frame: the
        // attacker takes what is left there, the wheel on the client and the plain left on the
        // frame. The X server will not say whose a conflict there is, so the press is sent with a
        // recording of its delivery, which names the attacker: it got that one press.
        const onClient = await attack(["passivebutton", "core", "4", "0", f.target.hwnd]);
        const onFrame = await attack(["passivebutton", "xi2", "1", "0", frame!]);
        expect((await scroll(w, 1)).code).toBe("input_grabbed");
        expect((await click(w)).code).toBe("input_grabbed");
        await settled(onClient);
        await settled(onFrame);
        expect(onClient.count("button")).toBe(1);
        expect(onFrame.count("button")).toBe(1);
        await noButtonDown();
      });

      it("passive grabs of other buttons or with other modifiers: the click and the scroll go through, the grabbers get nothing", async () => {
        const w = await targetInFront();
        const raw = await watchPresses();
        const grabs = [
          await attack(["passivebutton", "core", "3", "0"]),
          await attack(["passivebutton", "core", "1", "4"]), // Control+left
          await attack(["passivebutton", "xi2", "1", "8"]), // Alt+left
          await attack(["passivebutton", "xi2", "5", "0"]),
          await attack(["passivebutton", "core", "4", "1"]), // Shift+wheel up
        ];
        // Other clients hold passive grabs now, so openbox's own binding of the left button on the
        // client window is told from theirs by recording where the press went: to openbox and the
        // target only.
        expect((await click(w)).code ?? "ok").toBe("ok");
        expect((await scroll(w, 2)).code ?? "ok").toBe("ok");
        await settled(raw);
        expect(raw.count("raw")).toBe(3);
        for (const g of grabs) {
          await settled(g);
          expect(g.count("button")).toBe(0);
        }
        await noButtonDown();
      });

      it("XIGrabDevice on Virtual core XTEST pointer: a scroll is input_grabbed, the grabber gets no notch", async () => {
        const w = await targetInFront();
        const grab = await attack(["xigrab", "pointer"]);
        const r = await scroll(w, 2);
        expect(r.code).toBe("input_grabbed");
        await settled(grab);
        expect(grab.count("button")).toBe(0);
      });

      it("XIGrabDevice on Virtual core XTEST pointer: a click is input_grabbed, the grabber gets no press", async () => {
        const w = await targetInFront();
        const grab = await attack(["xigrab", "pointer"]);
        const r = await f.h.call("click_window", {
          hwnd: f.target.hwnd,
          ...rel(w, w.rect[0] + 100, w.rect[1] + 100),
        });
        expect(r.code).toBe("input_grabbed");
        await settled(grab);
        expect(grab.count("button")).toBe(0);
      });
    },
  );
}
