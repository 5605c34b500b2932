// Win32 last-moment checks against ANOTHER process, under Wine: the grabber
// (grabber.mjs, its own node.exe) holds the mouse capture or a popup menu in the target's input
// queue (AttachThreadInput to notepad's thread, then SetCapture / TrackPopupMenu), or takes the
// foreground in the middle of a text. The real input handlers (dist/workers/input/handlers.js,
// what the input worker runs) are driven against a real notepad; the grabber's low-level hooks
// count every keyboard and mouse event the system delivers to anyone, so "nothing reached any
// window" is measured, not assumed. Each refusal has a positive control: once the grab is gone
// the same call lands (the counters move), so a counter that cannot count fails the test.

import {
  className,
  cursor,
  foregroundGui,
  GRAB_ATTACH_CAPTURE,
  GRAB_END_MENU,
  GRAB_MENU,
  GRAB_RELEASE,
  GRAB_STEAL_AFTER,
  GUI_INMENUMODE,
  GUI_POPUPMENUMODE,
  GUI_SYSTEMMENUMODE,
  pidOf,
  startGrabber as spawnGrabber,
  win32,
} from "./grabberClient.mjs";

const loader = new URL("./loader.mjs", import.meta.url).href;

export function registerGrabs({ dist, test, assert, eq, waitFor, sleep, rejectsWith, h }) {
  const imp = (p) => import(new URL(p, dist).href);
  const { platform, facts } = h;

  const startGrabber = (x, y) =>
    spawnGrabber({
      listWindows: () => platform.desktop.listWindows(),
      waitFor,
      assert,
      nodeArgs: ["--import", loader],
      x,
      y,
    });

  async function handlers() {
    const { inputHandlers } = await imp("workers/input/handlers.js");
    const { OPS } = await imp("shared/protocol.js");
    const ctx = () => ({
      signal: new AbortController().signal,
      deadline: Date.now() + 30000,
      init: {},
      platform,
    });
    const run = (op, args) => inputHandlers[op](OPS[op].args.parse(args), ctx());
    return {
      click: (target, x, y) => run("input.pointer", { target, kind: "click", x, y, focus_mode: "passive" }),
      key: (target, key) =>
        run("input.keys", { target, steps: [{ key, modifiers: [], hold_ms: 0 }], focus_mode: "passive" }),
      text: (target, text) => run("input.text", { target, text, mode: "sendinput", focus_mode: "passive" }),
    };
  }

  /** A notepad in front at (60,60) 500×350 and its consented identity. */
  async function frontNotepad() {
    const n = await h.startNotepad();
    h.place(n.hwnd, 60, 60, 500, 350);
    assert(await h.focus(n), "notepad in front");
    const w = await platform.desktop.getWindow(String(n.hwnd));
    return { n, w, target: { hwnd: w.hwnd, instance: w.instance } };
  }

  /** Nothing at all was delivered: no event seen by the low-level hooks, none in the grabber's window. */
  async function nothingReached(grabber, cursorBefore, what) {
    // The refusal happens before any SendInput; this pause only lets a wrongly sent event surface.
    await sleep(300);
    eq(grabber.lowLevel(), 0, `${what}: low-level input events anywhere`);
    eq(grabber.windowInput(), 0, `${what}: input messages in the grabber's window`);
    eq(cursor(), cursorBefore, `${what}: the cursor did not move`);
  }

  /** Notepad in front and a grabber beside it for `fn`; both closed afterwards, whatever failed. */
  async function withNotepadAndGrabber(fn) {
    const { n, w, target } = await frontNotepad();
    const grabber = await startGrabber(700, 480);
    try {
      assert(await h.focus(n), "notepad back in front");
      await fn({ n, w, target, grabber, hs: await handlers() });
    } finally {
      grabber.stop();
      await h.closeNotepad(n);
    }
  }

  /** The control: once nothing holds the input, the same click is let through and lands. */
  async function clickLands(hs, grabber, target, w) {
    const r = await hs.click(target, 100, 120);
    if (w) eq([r.screen_x, r.screen_y], [w.rect[0] + 100, w.rect[1] + 120], "the click's screen point");
    assert(await waitFor(() => grabber.lowLevel() >= 2, 5000), "the hooks saw the click (control)");
    eq(grabber.windowInput(), 0, "the grabber's window got nothing");
  }

  test("grabs: another process's mouse capture in the target's input queue refuses click, key and text (input_grabbed), nothing reaches any window; released, the click lands", async () => {
    await withNotepadAndGrabber(async ({ n, w, target, grabber, hs }) => {
      const tid = win32.GetWindowThreadProcessId(n.hwnd, null);
      eq(
        grabber.send(GRAB_ATTACH_CAPTURE, tid),
        1,
        "the grabber attached to notepad's thread and holds the capture",
      );
      const gui = foregroundGui();
      facts.grab_capture_gui = gui && {
        capture_is_grabber: gui.capture === grabber.hwnd,
        flags: gui.flags,
        foreground_is_notepad: win32.GetForegroundWindow() === n.hwnd,
      };
      assert(
        gui && gui.capture === grabber.hwnd,
        "GetGUIThreadInfo(0) names the grabber's window as the capture",
      );
      assert(win32.GetForegroundWindow() === n.hwnd, "notepad is still the foreground window");
      const textBefore = h.getText(n.edit);
      const at = cursor();
      grabber.reset();
      await rejectsWith(
        hs.click(target, 100, 120),
        "input_grabbed",
        "click while another process holds the capture",
      );
      await rejectsWith(hs.key(target, "a"), "input_grabbed", "key while another process holds the capture");
      await rejectsWith(
        hs.text(target, "secret"),
        "input_grabbed",
        "text while another process holds the capture",
      );
      await nothingReached(grabber, at, "under the capture");
      eq(h.getText(n.edit), textBefore, "notepad's text is unchanged");
      // Released: the same click is let through and lands (the hooks see it; the grabber's window does not).
      grabber.send(GRAB_RELEASE);
      assert(await waitFor(() => foregroundGui()?.capture === 0, 5000), "the capture is released");
      await clickLands(hs, grabber, target, w);
    });
  }, 60000);

  test("grabs: another process's popup menu (TrackPopupMenu) in the target's input queue refuses click and key; closed, the click lands", async () => {
    await withNotepadAndGrabber(async ({ n, target, grabber, hs }) => {
      const tid = win32.GetWindowThreadProcessId(n.hwnd, null);
      assert(grabber.post(GRAB_MENU, tid), "menu request posted");
      const gui = await waitFor(() => {
        const i = foregroundGui();
        return i && (i.flags & (GUI_INMENUMODE | GUI_POPUPMENUMODE)) !== 0 ? i : null;
      }, 10000);
      facts.grab_menu_gui = gui && {
        in_menu_mode: (gui.flags & GUI_INMENUMODE) !== 0,
        popup_menu_mode: (gui.flags & GUI_POPUPMENUMODE) !== 0,
        system_menu_mode: (gui.flags & GUI_SYSTEMMENUMODE) !== 0,
        menu_owner_is_grabber_window: gui.menuOwner === grabber.hwnd,
        menu_owner_in_grabber_process: pidOf(gui.menuOwner) === grabber.child.pid,
        menu_owner_class: className(gui.menuOwner),
        capture_is_menu_owner: gui.capture === gui.menuOwner,
        foreground_is_notepad: win32.GetForegroundWindow() === n.hwnd,
      };
      assert(gui, "GetGUIThreadInfo(0) reports menu mode while the grabber's menu is open");
      assert(
        pidOf(gui.menuOwner) === grabber.child.pid,
        "the menu owner is a window of the grabber's process",
      );
      const textBefore = h.getText(n.edit);
      const at = cursor();
      grabber.reset();
      if (win32.GetForegroundWindow() === n.hwnd) {
        await rejectsWith(
          hs.click(target, 100, 120),
          "input_grabbed",
          "click while another process's menu is open",
        );
        await rejectsWith(hs.key(target, "a"), "input_grabbed", "key while another process's menu is open");
      } else {
        // Opening the menu took the foreground: refused before the grab check, still nothing sent.
        await rejectsWith(
          hs.click(target, 100, 120),
          "not_foreground",
          "click while the menu holds the foreground",
        );
      }
      await nothingReached(grabber, at, "under the menu");
      eq(h.getText(n.edit), textBefore, "notepad's text is unchanged");
      grabber.send(GRAB_END_MENU);
      assert(
        await waitFor(() => {
          const i = foregroundGui();
          return i && (i.flags & GUI_INMENUMODE) === 0 && i.capture === 0;
        }, 5000),
        "the menu closed",
      );
      assert(await h.focus(n), "notepad in front after the menu");
      await clickLands(hs, grabber, target, null);
    });
  }, 60000);

  test("send_text re-verifies foreground and focus per character: another process taking the foreground mid-text gets nothing", async () => {
    await withNotepadAndGrabber(async ({ n, target, grabber, hs }) => {
      const before = h.getText(n.edit).length;
      const text = "password=".padEnd(400, "x");
      grabber.reset();
      // 12 characters (a key down and up each) in, the grabber takes the foreground by itself.
      eq(grabber.send(GRAB_STEAL_AFTER, 24), 1, "the grabber is armed");
      const sending = hs.text(target, text);
      await rejectsWith(sending, "not_foreground", "the text stops at the first key after the change");
      assert(win32.GetForegroundWindow() === grabber.hwnd, "the grabber holds the foreground");
      await sleep(300);
      eq(grabber.windowInput(), 0, "input messages in the grabber's window");
      const got = h.getText(n.edit).length - before;
      facts.text_chars_before_steal = got;
      assert(got >= 1 && got < text.length, `notepad got the start only (${got} of ${text.length})`);
    });
  }, 90000);

  test("no clamping: a click past the virtual screen's edge of a partly off-screen window is out_of_bounds, nothing emitted", async () => {
    const n = await h.startNotepad();
    const grabber = await startGrabber(60, 480);
    try {
      const vs = await platform.desktop.virtualScreen();
      h.place(n.hwnd, vs[2] - 200, 100, 500, 300);
      assert(await h.focus(n), "notepad in front");
      const w = await waitFor(async () => {
        const x = await platform.desktop.getWindow(String(n.hwnd));
        return x && x.rect[0] === vs[2] - 200 ? x : null;
      }, 5000);
      assert(w, "notepad placed across the right edge");
      assert(w.rect[2] > vs[2], `the window extends past the screen (${w.rect} vs ${vs})`);
      const target = { hwnd: w.hwnd, instance: w.instance };
      const hs = await handlers();
      const at = cursor();
      grabber.reset();
      await rejectsWith(hs.click(target, 300, 100), "out_of_bounds", "a point beyond the screen edge");
      await nothingReached(grabber, at, "past the edge");
      await hs.click(target, 100, 100);
      assert(await waitFor(() => grabber.lowLevel() >= 2, 5000), "the on-screen click is seen (control)");
    } finally {
      grabber.stop();
      await h.closeNotepad(n);
    }
  }, 60000);
}
