import { describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
import type { DesktopPort, WindowInfo } from "../../src/shared/platform.js";
import { pickTarget } from "../../src/supervisor/access/targets.js";
import { loadPolicy } from "../../src/supervisor/policy/load.js";
import { verifyTarget } from "../../src/workers/verify.js";

/**
 * A window whose owner process exited but which the display server still shows (it is being
 * torn down) is listed with owner_exited: calls on it answer target_gone, never
 * target_not_allowed, and it still counts as covering the windows under it.
 */

const instance = {
  pid: 4242,
  start_time: "2026-11-30T08:00:00.000Z",
  exe_path: "/usr/bin/target",
  session: ":0:1000",
};

const target: WindowInfo = {
  hwnd: "100",
  title: "Target",
  window_class: "Target",
  pid: 4242,
  instance,
  rect: [0, 0, 400, 300],
  visible: true,
  iconic: false,
  foreground: true,
  on_top: false,
  z: 1,
};

const lingering: WindowInfo = {
  hwnd: "200",
  title: "Target",
  window_class: "Target",
  pid: 5151,
  instance: null,
  rect: [100, 100, 200, 200],
  visible: true,
  iconic: false,
  foreground: false,
  on_top: false,
  z: 0,
  owner_exited: true,
};

function policy() {
  const s = loadPolicy(
    {
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "Target",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: "/usr/bin/target",
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe,click",
    },
    () => new Date("2026-11-30T10:00:00Z"),
  );
  if (s.status !== "ok") throw new Error(JSON.stringify(s));
  return s.policy;
}

function codeOf(f: () => unknown): string | null {
  try {
    f();
    return null;
  } catch (e) {
    return isUiError(e) ? e.code : String(e);
  }
}

async function asyncCodeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return isUiError(e) ? e.code : String(e);
  }
}

function desktopOf(windows: WindowInfo[]): DesktopPort {
  // A screen large enough for every point the tests use (points off the screen are out_of_bounds).
  return {
    listWindows: async () => windows,
    virtualScreen: async () => [0, 0, 1920, 1080],
  } as unknown as DesktopPort;
}

describe("a window whose owner exited", () => {
  it("is target_gone by hwnd in the supervisor (not target_not_allowed), and never matches a title", () => {
    const all = [lingering, target];
    expect(codeOf(() => pickTarget(policy(), all, { hwnd: "200" }))).toBe("target_gone");
    // Without the flag the same window is an instance-less one: not allowed.
    const { owner_exited: _, ...plain } = lingering;
    expect(codeOf(() => pickTarget(policy(), [plain, target], { hwnd: "200" }))).toBe("target_not_allowed");
    expect(pickTarget(policy(), all, { title_contains: "Target" }).window.hwnd).toBe("100");
  });

  it("is target_gone in the worker's check", async () => {
    const code = await asyncCodeOf(verifyTarget(desktopOf([lingering, target]), { hwnd: "200", instance }));
    expect(code).toBe("target_gone");
  });

  it("still covers the target under it: a click or capture there is occluded", async () => {
    const expected = { hwnd: "100", instance };
    const d = desktopOf([lingering, target]);
    expect(await asyncCodeOf(verifyTarget(d, expected, { points: [{ x: 150, y: 150 }] }))).toBe("occluded");
    expect(await asyncCodeOf(verifyTarget(d, expected, { region: [50, 50, 150, 150] }))).toBe("occluded");
    expect(await asyncCodeOf(verifyTarget(d, expected, { points: [{ x: 10, y: 10 }] }))).toBeNull();
  });
});
