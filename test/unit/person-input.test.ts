import { describe, expect, it } from "vitest";
import {
  isXtestDeviceName,
  PersonInputFilter,
  SECURITY_DELAY_MS,
} from "../../src/platforms/x11/dialog/personInput.js";
import { wrapLines } from "../../src/platforms/x11/dialog/window.js";
import { DialogGate, DialogGateView } from "../../src/shared/dialogGate.js";
import { isUiError } from "../../src/shared/errors.js";
import { isSystemChord } from "../../src/shared/keys.js";

const person = { synthetic: false, injected: false, overlapped: false };

describe("PersonInputFilter (what the dialog counts as a person's input)", () => {
  it("ignores everything before the map, and for the security delay after it", () => {
    const f = new PersonInputFilter(false);
    expect(f.judge({ ...person, now: 0 })).toBe("too_soon");
    f.rearm(1000);
    expect(f.judge({ ...person, now: 1000 })).toBe("too_soon");
    expect(f.judge({ ...person, now: 1000 + SECURITY_DELAY_MS - 1 })).toBe("too_soon");
    expect(f.judge({ ...person, now: 1000 + SECURITY_DELAY_MS })).toBe("accept");
  });

  it("never accepts synthetic or XTEST-sourced input by default; the unsafe setting lets only XTEST through", () => {
    const safe = new PersonInputFilter(false);
    safe.rearm(0);
    expect(safe.judge({ ...person, now: 5000, injected: true })).toBe("injected");
    expect(safe.judge({ ...person, now: 5000, synthetic: true })).toBe("synthetic");
    const unsafe = new PersonInputFilter(true);
    unsafe.rearm(0);
    expect(unsafe.judge({ ...person, now: 5000, injected: true })).toBe("accept");
    expect(unsafe.judge({ ...person, now: 5000, synthetic: true })).toBe("synthetic");
  });

  it("ignores input while covered, and restarts the delay once covered", () => {
    const f = new PersonInputFilter(true);
    f.rearm(0);
    expect(f.judge({ ...person, now: 5000, overlapped: true })).toBe("overlapped");
    expect(f.judge({ ...person, now: 5001 })).toBe("too_soon");
    expect(f.judge({ ...person, now: 5000 + SECURITY_DELAY_MS })).toBe("accept");
  });

  it("knows the X server's XTEST device names", () => {
    expect(isXtestDeviceName("Virtual core XTEST pointer")).toBe(true);
    expect(isXtestDeviceName("Virtual core XTEST keyboard")).toBe(true);
    expect(isXtestDeviceName("evil XTEST keyboard")).toBe(true);
    expect(isXtestDeviceName("AT Translated Set 2 keyboard")).toBe(false);
  });
});

describe("dialog text layout", () => {
  it("wraps long lines without losing a character", () => {
    const long = "x".repeat(250);
    const lines = wrapLines(`a\n${long}\n\nb`);
    expect(lines.join("")).toBe(`a${long}b`);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(100);
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
