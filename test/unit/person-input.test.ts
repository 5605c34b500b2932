import { describe, expect, it } from "vitest";
import {
  ConsentGesture,
  isXtestDeviceName,
  PersonInputFilter,
  SECURITY_DELAY_MS,
  serverAtOrAfter,
} from "../../src/platforms/x11/dialog/personInput.js";
import { statusLine, wrapLines } from "../../src/platforms/x11/dialog/text.js";
import { DialogGate, DialogGateView } from "../../src/shared/dialogGate.js";
import { isUiError } from "../../src/shared/errors.js";
import { isSystemChord } from "../../src/shared/keys.js";

const person = { synthetic: false, injected: false, covered: false };
const D = SECURITY_DELAY_MS;

describe("PersonInputFilter (what the dialog counts as a person's input, in X server time)", () => {
  it("ignores everything before the first stamp after the map, and for the delay after it", () => {
    const f = new PersonInputFilter(false);
    expect(f.judge({ ...person, time: 5000 })).toBe("too_early");
    f.restartPending();
    expect(f.judge({ ...person, time: 9000 })).toBe("too_early"); // the stamp has not come yet
    f.stamped(1000);
    expect(f.judge({ ...person, time: 1000 + D - 1 })).toBe("too_early");
    expect(f.judge({ ...person, time: 1000 + D })).toBe("accept");
  });

  it("judges an event by its server time, not by when it is read: a click made early stays early", () => {
    const f = new PersonInputFilter(true);
    f.restartPending();
    f.stamped(10_000);
    // Read long after (a stalled dialog): its timestamp still says it was made within the delay.
    expect(f.judge({ ...person, time: 10_300 })).toBe("too_early");
    expect(f.judge({ ...person, time: 11_000 })).toBe("accept");
  });

  it("never moves the arm time earlier, and handles the 32-bit wrap of server time", () => {
    const f = new PersonInputFilter(true);
    f.restartAt(5000);
    f.restartAt(100); // older news
    expect(f.judge({ ...person, time: 5000 + D - 1 })).toBe("too_early");
    const w = new PersonInputFilter(true);
    w.restartAt(0xffffff00);
    expect(w.judge({ ...person, time: 0x100 })).toBe("too_early");
    expect(w.judge({ ...person, time: (0xffffff00 + D) >>> 0 })).toBe("accept");
    expect(serverAtOrAfter(5, 0xfffffff0)).toBe(true);
  });

  it("never accepts synthetic or XTEST-sourced input by default; the unsafe setting lets only XTEST through", () => {
    const safe = new PersonInputFilter(false);
    safe.restartAt(0);
    expect(safe.judge({ ...person, time: 5000, injected: true })).toBe("injected");
    expect(safe.judge({ ...person, time: 5000, synthetic: true })).toBe("synthetic");
    const unsafe = new PersonInputFilter(true);
    unsafe.restartAt(0);
    expect(unsafe.judge({ ...person, time: 5000, injected: true })).toBe("accept");
    expect(unsafe.judge({ ...person, time: 5000, synthetic: true })).toBe("synthetic");
  });

  it("ignores input while covered, and restarts the delay once covered", () => {
    const f = new PersonInputFilter(true);
    f.restartAt(0);
    expect(f.judge({ ...person, time: 5000, covered: true })).toBe("covered");
    expect(f.judge({ ...person, time: 5001 })).toBe("too_early");
    expect(f.judge({ ...person, time: 5000 + D })).toBe("accept");
  });

  it("knows the X server's XTEST device names", () => {
    expect(isXtestDeviceName("Virtual core XTEST pointer")).toBe(true);
    expect(isXtestDeviceName("Virtual core XTEST keyboard")).toBe(true);
    expect(isXtestDeviceName("evil XTEST keyboard")).toBe(true);
    expect(isXtestDeviceName("AT Translated Set 2 keyboard")).toBe(false);
  });
});

describe("ConsentGesture (pointer history, pointer-only approval)", () => {
  /** A gesture armed at server time 0, the pointer outside. */
  function armed(): ConsentGesture {
    const g = new ConsentGesture(true);
    g.filter.restartPending();
    g.filter.stamped(0);
    return g;
  }
  const at = (time: number) => ({ ...person, time });

  it("approves a press and release on Allow after the pointer rested there for the delay", () => {
    const g = armed();
    g.pointer("enter", "window", 2000);
    g.pointer("motion", "allow", 2100);
    expect(g.button("press", "allow", at(2100 + D))).toBeNull();
    expect(g.button("release", "allow", at(2100 + D + 50))).toBe("approve");
  });

  it("a pointer that landed on Allow 120 ms before the click (a warp) does not approve", () => {
    const g = armed();
    g.pointer("enter", "allow", 5000); // the warp's enter
    expect(g.button("press", "allow", at(5120))).toBeNull();
    expect(g.button("release", "allow", at(5170))).toBeNull();
    expect(g.counts().ignored.too_early).toBe(1);
  });

  it("a press where the history did not have the pointer is a landing (an unseen warp)", () => {
    const g = armed();
    g.pointer("enter", "window", 1000);
    // No motion onto Allow was seen; the press says the pointer is there.
    expect(g.button("press", "allow", at(9000))).toBeNull();
    expect(g.button("release", "allow", at(9050))).toBeNull();
    expect(g.button("press", "allow", at(9000 + D))).toBeNull();
    expect(g.button("release", "allow", at(9000 + D + 10))).toBe("approve");
  });

  it("leaving Allow between press and release, or moving between the buttons, restarts the delay", () => {
    const g = armed();
    g.pointer("enter", "allow", 1000);
    expect(g.button("press", "allow", at(3000))).toBeNull();
    g.pointer("motion", "window", 3100);
    g.pointer("motion", "allow", 3200);
    expect(g.button("release", "allow", at(3300))).toBeNull();
    g.pointer("motion", "deny", 4000);
    g.pointer("motion", "allow", 4100);
    expect(g.button("press", "allow", at(4100 + D - 1))).toBeNull();
  });

  it("keys move the focus and deny, never approve (a person typing user, Tab, password, Return)", () => {
    const g = armed();
    expect(g.key("toggle", at(5000))).toBeNull();
    expect(g.focused).toBe("allow");
    expect(g.key("activate", at(5100))).toBeNull();
    expect(g.keyboardRefused).toBe(true);
    expect(g.counts().ignored.keyboard).toBe(1);
    expect(g.key("toggle", at(5200))).toBeNull();
    expect(g.key("activate", at(5300))).toBe("deny");
    expect(armed().key("escape", at(5000))).toBe("deny");
    expect(armed().key("other", at(5000))).toBeNull();
  });

  it("a focus gain the person's own press causes (window manager replays the press after focusing) restarts nothing for the pointer", () => {
    const g = armed();
    g.pointer("enter", "allow", 1000);
    g.focusIn(5000); // the window manager focused on the press made at 5000, then replayed it
    expect(g.button("press", "allow", at(5000))).toBeNull();
    expect(g.button("release", "allow", at(5050))).toBe("approve");
    expect(g.counts().ignored.too_early).toBe(0);
  });

  it("a focus gain while the person's press is held restarts nothing for the pointer", () => {
    const g = armed();
    g.pointer("enter", "allow", 1000);
    expect(g.button("press", "allow", at(5000))).toBeNull();
    g.focusIn(5002);
    expect(g.button("release", "allow", at(5050))).toBe("approve");
  });

  it("a focus gain no press explains (another client's XSetInputFocus while the pointer rests) restarts the delay", () => {
    const g = armed();
    g.pointer("enter", "allow", 1000);
    g.focusIn(5000);
    expect(g.filter.armedBy(5010)).toBe(false); // drawn disabled at once
    expect(g.button("press", "allow", at(5100))).toBeNull();
    expect(g.button("release", "allow", at(5150))).toBeNull();
    expect(g.counts().ignored.too_early).toBe(1);
    expect(g.button("press", "allow", at(5000 + D))).toBeNull();
    expect(g.button("release", "allow", at(5000 + D + 50))).toBe("approve");
  });

  it("a focus gain followed by motion, then a press, is no press's focus", () => {
    const g = armed();
    g.pointer("enter", "allow", 1000);
    g.focusIn(5000);
    g.pointer("motion", "allow", 5001);
    expect(g.button("press", "allow", at(4999 + D))).toBeNull();
    expect(g.button("release", "allow", at(5000 + D))).toBeNull();
    expect(g.counts().ignored.too_early).toBe(1);
  });

  it("every focus gain restarts the delay for keys, the person's own click included", () => {
    const g = armed();
    g.pointer("enter", "allow", 1000);
    g.focusIn(5000);
    expect(g.button("press", "deny", at(5000))).toBeNull(); // explains the focus, lands on Deny
    expect(g.key("escape", at(5500))).toBeNull();
    expect(g.counts().ignored.too_early).toBe(2);
    expect(g.key("escape", at(5000 + D))).toBe("deny");
  });

  it("counts what it ignored by kind, never what it was", () => {
    const g = new ConsentGesture(false);
    g.filter.restartAt(0);
    g.pointer("enter", "allow", 0);
    g.button("press", "allow", { ...person, time: 5000, injected: true });
    g.button("press", "allow", { ...person, time: 5000, synthetic: true });
    g.button("press", "allow", { ...person, time: 5000, covered: true });
    g.button("press", "allow", { ...person, time: 5001 });
    g.key("activate", { ...person, time: 5002, injected: true });
    expect(g.counts().ignored).toEqual({ injected: 2, synthetic: 1, too_early: 1, covered: 1, keyboard: 0 });
  });
});

describe("dialog text layout", () => {
  const rejoin = (lines: string[]) => lines.join(" ").replace(/\s+/g, " ");

  it("wraps at word boundaries, never inside a word that fits on a line", () => {
    const text =
      "  - close: close the window (may discard unsaved work); minimize / decision words that are long enough to wrap twice over";
    const lines = wrapLines(text, 40);
    expect(Math.max(...lines.map((l) => Array.from(l).length))).toBeLessThanOrEqual(40);
    const words = new Set(text.split(/\s+/).filter(Boolean));
    for (const l of lines)
      for (const w of l.trim().split(/\s+/)) expect(words.has(w), `"${w}" was split`).toBe(true);
    expect(rejoin(lines).trim()).toBe(text.replace(/\s+/g, " ").trim());
    // Continuation lines keep the list item's indentation.
    for (const l of lines.slice(1)) expect(l.startsWith("    ")).toBe(true);
  });

  it("breaks a long path after a slash, and nothing is cut", () => {
    const path = `/home/someone/${"very-long-folder-name/".repeat(8)}bin/app`;
    const lines = wrapLines(`Program: ${path}`, 50);
    expect(Math.max(...lines.map((l) => Array.from(l).length))).toBeLessThanOrEqual(50);
    expect(lines.join("").replace(/\s+/g, "")).toBe(`Program:${path}`);
    for (const l of lines.slice(1, -1)) expect(/[/-]$/.test(l)).toBe(true);
  });

  it("says Allow is not armed yet, and why a key on Allow did nothing", () => {
    expect(statusLine(false, false)).toMatch(/^Wait: Allow is disabled/);
    expect(statusLine(false, true)).toMatch(/^Wait/);
    expect(statusLine(true, false)).toMatch(/^Click Allow to approve/);
    expect(statusLine(true, true)).toMatch(/needs a click with the pointer/);
  });

  it("keeps short lines, empty lines and astral characters whole", () => {
    expect(wrapLines("a\n\nb 😀", 10)).toEqual(["a", "", "b 😀"]);
    const long = "x".repeat(250);
    const lines = wrapLines(long, 100);
    expect(lines.join("")).toBe(long);
    expect(lines.map((l) => l.length)).toEqual([100, 100, 50]);
  });
});

describe("the dialog gate", () => {
  it("is shared through one SharedArrayBuffer cell and refuses with consent_pending", () => {
    const gate = new DialogGate();
    const view = new DialogGateView();
    view.attach(gate.buffer);
    view.assertNoDialog();
    const seen: number[] = [];
    gate.onChange((n) => seen.push(n));
    const release = gate.hold();
    const err = (() => {
      try {
        view.assertNoDialog();
        return null;
      } catch (e) {
        return e;
      }
    })();
    expect(isUiError(err) && err.code).toBe("consent_pending");
    release();
    release(); // idempotent
    view.assertNoDialog();
    expect(seen).toEqual([1, 0]);
  });

  it("follows dialog_state messages when not attached (process isolation)", () => {
    const view = new DialogGateView();
    view.setOpen(1);
    expect(() => view.assertNoDialog()).toThrow();
    view.setOpen(0);
    view.assertNoDialog();
  });
});

describe("desktop-shell chords", () => {
  it("refuses launcher, run-dialog and workspace chords, keeps ordinary ones", () => {
    expect(isSystemChord(["alt"], "f2")).toBe(true);
    expect(isSystemChord(["alt", "ctrl"], "f1")).toBe(true);
    expect(isSystemChord(["shift", "alt"], "right")).toBe(true);
    expect(isSystemChord(["ctrl", "shift"], "right")).toBe(false);
    expect(isSystemChord(["alt"], "left")).toBe(false);
    expect(isSystemChord([], "f2")).toBe(false);
    expect(isSystemChord(["alt"], "f5")).toBe(false);
  });
});
