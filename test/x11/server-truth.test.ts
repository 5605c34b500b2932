import { execFileSync, spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import koffi from "koffi";
import { beforeEach, describe, expect, it } from "vitest";
import type { Platform, RawImage, WindowInfo } from "../../src/shared/platform.js";
import { settled } from "./attacker.js";
import {
  catXterm,
  grantedTarget,
  readTyped,
  waitFor,
  waitForWindow,
  X11_REQUIRED,
  x11CliSuite,
  xdotool,
} from "./support.js";

/**
 * Attacks on the last-moment checks, end to end over stdio: the built CLI on a private
 * Xvfb + openbox desktop, a real xterm as the granted target (it runs `cat` into a file, so what
 * reached it can be counted), and another local X client (test/x11/fixtures/attacker.c) that
 * does what any program may do: override-redirect popups, grabs, forged root properties, taking
 * the focus, a bind-mounted executable, fork-then-exec. Each attack got through before the checks
 * read the X server's own state; each must be refused now, with nothing reaching the attacker.
 */

const HAVE_CC = spawnSync("sh", ["-c", "command -v cc"]).status === 0;

describe.skipIf(!x11CliSuite("server truth", { what: "no C compiler (cc)", ok: HAVE_CC }))(
  "x11 last-moment checks against the X server's truth (attacks, built CLI over stdio)",
  () => {
    const f = grantedTarget({
      name: "truth",
      titlePatterns: ["uix truth *"],
      actions: ["observe", "inspect", "hover", "click", "interact", "key", "text"],
      start: (f) => catXterm(f.p, "uix truth target", "60x12+200+150", join(f.dir, "typed.txt")),
    });
    const { attack, live, targetInFront, attackers } = f;
    const typed = () => readTyped(join(f.dir, "typed.txt"));

    beforeEach(async () => {
      await f.stopAttackers();
    });

    /** A window-relative point in the middle of the target's client area. */
    const middle = (w: WindowInfo) => ({
      x: Math.floor((w.rect[2] - w.rect[0]) / 2),
      y: Math.floor((w.rect[3] - w.rect[1]) / 2),
    });

    it("the checks pass for the untouched target: a click and a screenshot succeed", async () => {
      const w = await targetInFront();
      const click = await f.h.call("click_window", { hwnd: f.target.hwnd, ...middle(w) });
      expect(click.code ?? "ok").toBe("ok");
      const shot = await f.h.call("screenshot_window", { hwnd: f.target.hwnd, region_name: "body" });
      expect(shot.code ?? "ok").toBe("ok");
    });

    it("another client's override-redirect popup over the point: occluded, the popup gets no click", async () => {
      const w = await targetInFront();
      const m = middle(w);
      const popup = await attack([
        "popup",
        String(w.rect[0] + m.x - 20),
        String(w.rect[1] + m.y - 20),
        "60",
        "50",
      ]);
      const r = await f.h.call("click_window", { hwnd: f.target.hwnd, ...m });
      expect(r.code).toBe("occluded");
      await settled(popup);
      expect(popup.count("button")).toBe(0);
      // Elsewhere in the window the click is fine: the popup covers only its own rect.
      const elsewhere = await f.h.call("click_window", {
        hwnd: f.target.hwnd,
        x: m.x,
        y: w.rect[3] - w.rect[1] - 15,
      });
      expect(elsewhere.code ?? "ok").toBe("ok");
    });

    it("another client's override-redirect popup over the region: occluded, no pixels", async () => {
      const w = await targetInFront();
      await attack(["popup", String(w.rect[0] + 30), String(w.rect[1] + 60), "40", "30"]);
      const r = await f.h.call("screenshot_window", { hwnd: f.target.hwnd, region_name: "body" });
      expect(r.code).toBe("occluded");
      expect(r.content.some((c) => c.type === "image")).toBe(false);
    });

    it("a popup above the target but elsewhere, moved over the region: occluded; moved off again: the pixels leave", async () => {
      // The check asks about the windows that were above the target at its last look in its
      // first batch (liveCheck.ts): a window that was there and moved is judged from that batch.
      const w = await targetInFront();
      const popup = await attack(["popup", "0", "0", "40", "30"]);
      const ok = await f.h.call("screenshot_window", { hwnd: f.target.hwnd, region_name: "body" });
      expect(ok.code).toBeUndefined();
      const moveTo = (x: number, y: number) => {
        xdotool("windowmove", String(popup.xid), String(x), String(y));
        return waitFor("popup moved", async () => {
          const g = xdotool("getwindowgeometry", String(popup.xid));
          return g.includes(`Position: ${x},${y}`) ? true : null;
        });
      };
      await moveTo(w.rect[0] + 30, w.rect[1] + 60);
      const covered = await f.h.call("screenshot_window", { hwnd: f.target.hwnd, region_name: "body" });
      expect(covered.code).toBe("occluded");
      expect(covered.content.some((c) => c.type === "image")).toBe(false);
      await moveTo(0, 0);
      const again = await f.h.call("screenshot_window", { hwnd: f.target.hwnd, region_name: "body" });
      expect(again.code).toBeUndefined();
      expect(again.content.some((c) => c.type === "image")).toBe(true);
    });

    describe("the capture worker's check after the read (the target and what lies above it, no enumeration)", () => {
      /**
       * The capture op in this process on the X11 capture platform, with the supervisor's fresh
       * listing handed over as the server hands it, and `during` run right after the read.
       */
      async function captureWith(
        during: () => Promise<void>,
      ): Promise<{ code: string; frame: RawImage | null }> {
        const { createX11Platform } = await import("../../src/platforms/x11/index.js");
        const { captureHandlers } = await import("../../src/workers/capture/handlers.js");
        const { OPS } = await import("../../src/shared/protocol.js");
        const cap = await createX11Platform({ workerKind: "capture" });
        let frame: RawImage | null = null;
        let lists = 0;
        try {
          const windows = await cap.desktop.listWindows();
          const counted = new Proxy(cap.desktop, {
            get(t, prop) {
              const v: unknown = Reflect.get(t, prop, t);
              if (prop === "listWindows") lists += 1;
              return typeof v === "function" ? v.bind(t) : v;
            },
          });
          const platform: Platform = {
            ...cap,
            desktop: counted,
            capture: {
              captureScreen: async (rect) => {
                frame = await cap.capture.captureScreen(rect);
                await during();
                return frame;
              },
            },
          };
          const args = OPS["capture.region"].args.parse({
            target: { hwnd: f.target.hwnd, instance: f.target.instance },
            region: [20, 40, 220, 140],
            masks: [],
            grid_spacing: null,
            output: "png",
            max_png_bytes: 1 << 24,
            compression_level: 2,
            listing: { at: Date.now(), windows },
          });
          const code = await captureHandlers["capture.region"]!(args, {
            signal: new AbortController().signal,
            deadline: Date.now() + 30_000,
            init: { kind: "capture", platform: "x11", fake_desktop: null, log_level: "silent" },
            platform,
          }).then(
            () => "ok",
            (e: unknown) => (e as { code?: string }).code ?? "thrown",
          );
          // The supervisor's listing was the shot's only enumeration.
          expect(lists).toBe(0);
          return { code, frame };
        } finally {
          await cap.desktop.dispose();
        }
      }

      it("undisturbed: the pixels leave", async () => {
        await targetInFront();
        expect((await captureWith(async () => {})).code).toBe("ok");
      });

      it("another client's override-redirect popup mapped over the region during the read: occluded, the frame wiped", async () => {
        const w = await targetInFront();
        const r = await captureWith(async () => {
          await attack(["popup", String(w.rect[0] + 60), String(w.rect[1] + 70), "40", "30"]);
        });
        expect(r.code).toBe("occluded");
        expect(r.frame?.data.every((b) => b === 0)).toBe(true);
      });

      it("the target moved during the read: target_changed, the frame wiped", async () => {
        const w = await targetInFront();
        let moved: WindowInfo | null = null;
        try {
          const r = await captureWith(async () => {
            xdotool("windowmove", "--sync", f.target.hwnd, String(w.rect[0] + 25), String(w.rect[1]));
            moved = await waitFor("moved", async () => {
              const now = await live();
              return now.rect[0] !== w.rect[0] ? now : null;
            });
          });
          expect(r.code).toBe("target_changed");
          expect(r.frame?.data.every((b) => b === 0)).toBe(true);
        } finally {
          xdotool("windowmove", "--sync", f.target.hwnd, String(w.rect[0]), String(w.rect[1]));
          const from = (moved as WindowInfo | null)?.rect[0];
          if (from !== undefined)
            await waitFor("moved back", async () => ((await live()).rect[0] !== from ? true : null));
        }
      });
    });

    it("another client's keyboard grab: input_grabbed, nothing typed", async () => {
      await targetInFront();
      const before = typed().length;
      await attack(["grab", "keyboard"]);
      const k = await f.h.call("send_key", { hwnd: f.target.hwnd, key: "a" });
      expect(k.code).toBe("input_grabbed");
      const c = await f.h.call("click_window", { hwnd: f.target.hwnd, ...middle(await live()) });
      expect(c.code).toBe("input_grabbed");
      await f.stopAttackers();
      expect(typed().length).toBe(before);
    });

    it("another client's pointer grab: input_grabbed for a click", async () => {
      const w = await targetInFront();
      const grabber = await attack(["grab", "pointer"]);
      const r = await f.h.call("click_window", { hwnd: f.target.hwnd, ...middle(w) });
      expect(r.code).toBe("input_grabbed");
      await settled(grabber);
      expect(grabber.count("button")).toBe(0);
    });

    it("another client's pointer grab that asks for motion: input_grabbed, and not even a pointer motion reaches it", async () => {
      // Proving a grab is the target's own moves the pointer a pixel and back (grabOwner.ts);
      // with no popup of the target open nothing explains a grab of its own, so no probe is made.
      const w = await targetInFront();
      const grabber = await attack(["grab", "pointer-motion"]);
      const r = await f.h.call("click_window", { hwnd: f.target.hwnd, ...middle(w) });
      expect(r.code).toBe("input_grabbed");
      await settled(grabber);
      expect(grabber.count("motion")).toBe(0);
      expect(grabber.count("button")).toBe(0);
    });

    it("a forged _NET_ACTIVE_WINDOW: the real input focus decides, nothing reaches the focused window", async () => {
      await targetInFront();
      const token = await f.h.ok("request_confirmation", { action_class: "text", hwnd: f.target.hwnd });
      const thief = await attack(["window", "thief window", "700", "450", "300", "200"]);
      thief.child.kill("SIGUSR1");
      await waitFor("thief focused", async () => (thief.count("focus") > 0 ? true : null));
      await waitFor("target not focused", async () => ((await live()).foreground ? null : true));
      // Any client may write the root property: claim the target is active.
      await attack(["rootprop", "_NET_ACTIVE_WINDOW", "WINDOW", f.target.hwnd]);
      const claimed = execFileSync("xprop", ["-root", "_NET_ACTIVE_WINDOW"], { encoding: "utf8" });
      expect(Number.parseInt(claimed.split("#")[1] ?? "", 16)).toBe(Number(f.target.hwnd));
      const r = await f.h.call("send_text", {
        hwnd: f.target.hwnd,
        text: "secret",
        confirmation_token: token.token_id,
      });
      expect(r.code).toBe("not_foreground");
      await settled(thief);
      expect(thief.count("key")).toBe(0);
    });

    it("a forged _NET_CLIENT_LIST_STACKING: the server's stacking order decides, the cover gets no click", async () => {
      const w = await targetInFront();
      const cover = await attack([
        "window",
        "cover window",
        String(w.rect[0] + 40),
        String(w.rect[1] + 60),
        "120",
        "80",
      ]);
      const { XConnection } = await import("../../src/platforms/x11/xconn.js");
      const x11 = XConnection.open();
      try {
        // Always on top, so it stays over the focused target.
        x11.sendClientMessage(
          x11.root,
          cover.xid,
          x11.atoms._NET_WM_STATE,
          [1, x11.atoms._NET_WM_STATE_ABOVE, 0, 2, 0],
          true,
        );
      } finally {
        x11.close();
      }
      await targetInFront();
      await waitFor("cover above the target", async () => {
        const all = await f.p.desktop.listWindows();
        const c = all.find((x) => x.hwnd === String(cover.xid));
        const t = all.find((x) => x.hwnd === f.target.hwnd);
        return c && t && c.z < t.z && t.foreground ? true : null;
      });
      const point = { x: 60, y: 90 };
      const honest = await f.h.call("click_window", { hwnd: f.target.hwnd, ...point });
      expect(honest.code).toBe("occluded");
      // Claim the target is on top of the cover.
      await attack(["rootprop", "_NET_CLIENT_LIST_STACKING", "WINDOW", String(cover.xid), f.target.hwnd]);
      await waitFor("forged list read back", async () => {
        const all = await f.p.desktop.listWindows();
        return all[0]?.hwnd === f.target.hwnd ? true : null;
      });
      const r = await f.h.call("click_window", { hwnd: f.target.hwnd, ...point });
      expect(r.code).toBe("occluded");
      await settled(cover);
      expect(cover.count("button")).toBe(0);
    });

    it("the target rewrites its _NET_FRAME_EXTENTS: the rect stays the WM frame, no neighbour's pixels or clicks", async () => {
      const w = await targetInFront();
      const width = w.rect[2] - w.rect[0];
      const neighbour = await attack([
        "window",
        "neighbour window",
        String(Math.max(0, w.rect[0] - 190)),
        String(w.rect[1]),
        "150",
        "120",
      ]);
      await targetInFront();
      const original = execFileSync("xprop", ["-id", f.target.hwnd, "_NET_FRAME_EXTENTS"], {
        encoding: "utf8",
      });
      const nums = (original.split("=")[1] ?? "").split(",").map((s) => s.trim());
      const setExtents = (v: string) =>
        execFileSync("xprop", [
          "-id",
          f.target.hwnd,
          "-f",
          "_NET_FRAME_EXTENTS",
          "32c",
          "-set",
          "_NET_FRAME_EXTENTS",
          v,
        ]);
      try {
        setExtents(`200,${nums[1]},${nums[2]},${nums[3]}`);
        await waitFor("extents rewritten", async () =>
          execFileSync("xprop", ["-id", f.target.hwnd, "_NET_FRAME_EXTENTS"], { encoding: "utf8" }).includes(
            "= 200,",
          )
            ? true
            : null,
        );
        const now = await live();
        expect(now.rect).toEqual(w.rect);
        const state = await f.h.ok("get_window_state", { hwnd: f.target.hwnd });
        expect(state.rect).toEqual(w.rect);
        // With the claimed rect, window-relative (10, 60) was inside the neighbour; it is the
        // target's own client area now.
        const inside = await f.h.call("click_window", { hwnd: f.target.hwnd, x: 10, y: 60 });
        expect(inside.code ?? "ok").toBe("ok");
        const beyond = await f.h.call("click_window", { hwnd: f.target.hwnd, x: width + 20, y: 30 });
        expect(beyond.code).toBe("out_of_bounds");
        await settled(neighbour);
        expect(neighbour.count("button")).toBe(0);
      } finally {
        setExtents(nums.join(","));
      }
    });

    it("a click beyond the screen edge of a partly off-screen window: out_of_bounds, nothing pressed at the edge", async () => {
      const screen = await f.p.desktop.virtualScreen();
      const w = await targetInFront();
      const width = w.rect[2] - w.rect[0];
      const edge = await attack([
        "window",
        "edge window",
        String(screen[2] - 60),
        String(w.rect[1] + 40),
        "60",
        "100",
      ]);
      try {
        xdotool(
          "windowmove",
          "--sync",
          f.target.hwnd,
          String(screen[2] - Math.floor(width / 2)),
          String(w.rect[1]),
        );
        await targetInFront();
        await waitFor("target partly off screen", async () =>
          (await live()).rect[2] > screen[2] ? true : null,
        );
        const now = await live();
        const r = await f.h.call("click_window", {
          hwnd: f.target.hwnd,
          x: screen[2] - now.rect[0] + 30,
          y: 80,
        });
        expect(r.code).toBe("out_of_bounds");
        await settled(edge);
        expect(edge.count("button")).toBe(0);
      } finally {
        xdotool("windowmove", "--sync", f.target.hwnd, String(w.rect[0]), String(w.rect[1]));
      }
    });

    it("a 3 s key hold while another window takes the focus: cut short, nothing arrives there, auto-repeat restored", async () => {
      await targetInFront();
      const repeatBefore = await autoRepeatingKeys();
      expect(repeatBefore).toMatch(/[1-9a-f]/);
      const thief = await attack(["window", "thief window", "700", "450", "300", "200"]);
      await targetInFront();
      const before = typed().length;
      const hold = f.h.call("send_key", { hwnd: f.target.hwnd, key: "a", hold_ms: 3000 });
      await waitFor("the press reached the target", async () => (typed().length > before ? true : null));
      thief.child.kill("SIGUSR1");
      const r = await hold;
      expect(r.code).toBe("not_foreground");
      await settled(thief);
      expect(thief.count("focus")).toBe(1);
      expect(thief.count("key")).toBe(0);
      // Without auto-repeat the target got exactly the one press.
      expect(typed().length).toBe(before + 1);
      expect(await autoRepeatingKeys()).toBe(repeatBefore);
    });

    it("send_text during which another window takes the focus: nothing after the change", async () => {
      await targetInFront();
      const thief = await attack(["window", "thief window", "700", "450", "300", "200"]);
      await targetInFront();
      const before = typed().length;
      const text = "password=".padEnd(400, "x");
      const token = await f.h.ok("request_confirmation", { action_class: "text", hwnd: f.target.hwnd });
      const sending = f.h.call("send_text", {
        hwnd: f.target.hwnd,
        text,
        confirmation_token: token.token_id,
      });
      await waitFor("typing under way", async () => (typed().length >= before + 12 ? true : null));
      thief.child.kill("SIGUSR1");
      const r = await sending;
      expect(r.code).toBe("not_foreground");
      await settled(thief);
      expect(thief.count("focus")).toBe(1);
      expect(thief.count("key")).toBe(0);
      const got = typed().length - before;
      expect(got).toBeGreaterThanOrEqual(12);
      expect(got).toBeLessThan(text.length);
    });

    it("a binary bind-mounted over the allowed path in a private mount namespace is not the allowed program", async () => {
      const probe = spawnSync("unshare", ["-Urm", "true"]);
      if (probe.status !== 0) {
        // Unprivileged user namespaces are off here: the attack itself cannot run.
        expect(X11_REQUIRED && process.getuid?.() === 0).toBe(false);
        return;
      }
      const exe = f.target.instance!.exe_path;
      const child = spawn(
        "unshare",
        [
          "-Urm",
          "sh",
          "-c",
          `mount --bind '${f.attackerBin}' '${exe}' && exec '${exe}' window 'uix truth evil' 40 500 200 120`,
        ],
        { env: process.env, stdio: ["ignore", "pipe", "inherit"] },
      );
      attackers.push({
        child,
        xid: 0,
        more: [],
        count: () => 0,
        stop: async () => {
          if (child.exitCode === null) child.kill("SIGKILL");
        },
      });
      const evil = await waitForWindow(f.p, "uix truth evil");
      // /proc/PID/exe reads as the allowed path, but it is another file.
      expect(readlinkExe(evil.pid)).toBe(exe);
      expect(evil.instance).toBeNull();
      const list = (await f.h.ok("list_windows")).windows as Array<{ title: string }>;
      expect(list.map((x) => x.title)).not.toContain("uix truth evil");
      const r = await f.h.call("request_access", { hwnd: evil.hwnd });
      expect(r.code).toBe("target_not_allowed");
    });

    for (const variant of ["close", "keep"] as const) {
      it(`a window created, forked off and its creator exec'd into the allowed binary (${variant}): refused`, async () => {
        const forked = await attack([
          "forkexec",
          variant,
          `uix truth forked ${variant}`,
          f.target.instance!.exe_path,
          "-T",
          `decoy ${variant}`,
          "-geometry",
          "20x4+900+60",
        ]);
        await waitForWindow(f.p, `decoy ${variant}`);
        const w = await waitForWindow(f.p, `uix truth forked ${variant}`);
        // The X server names the exec'd process (now the allowed binary) as the owner…
        expect(readlinkExe(w.pid)).toBe(f.target.instance!.exe_path);
        // …but it does not hold the window's connection alone.
        expect(w.instance).toBeNull();
        const list = (await f.h.ok("list_windows")).windows as Array<{ title: string }>;
        expect(list.map((x) => x.title)).not.toContain(`uix truth forked ${variant}`);
        const r = await f.h.call("request_access", { hwnd: w.hwnd });
        expect(r.code).toBe("target_not_allowed");
        expect(forked.count("key")).toBe(0);
        // The exec'd process itself is not proven either: its own xterm window is refused too.
        expect((await waitForWindow(f.p, `decoy ${variant}`)).instance).toBeNull();
      });
    }
  },
);

/** The server's per-key auto-repeat bitmask (XGetKeyboardControl on a connection of the test's own), as hex. */
async function autoRepeatingKeys(): Promise<string> {
  const { XConnection } = await import("../../src/platforms/x11/xconn.js");
  const getControl = koffi.load("libX11.so.6").func("int XGetKeyboardControl(void *dpy, uint8_t *state)");
  const x = XConnection.open();
  try {
    const state = Buffer.alloc(64);
    getControl(x.dpy, state);
    return state.subarray(28, 60).toString("hex");
  } finally {
    x.close();
  }
}

function readlinkExe(pid: number): string {
  return execFileSync("readlink", [`/proc/${pid}/exe`], { encoding: "utf8" }).trim();
}
