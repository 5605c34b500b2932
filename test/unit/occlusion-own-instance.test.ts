import { describe, expect, it } from "vitest";
import type { Rect } from "../../src/shared/geometry.js";
import type { ProcessInstance } from "../../src/shared/identity.js";
import { pointOccluded, rectOccluded } from "../../src/shared/occlusion.js";
import type { DesktopPort, WindowInfo } from "../../src/shared/platform.js";
import { pointsInside } from "../../src/workers/verify.js";

/** The occlusion rule: a window above the target covers it unless it is the target's own instance's. */

const app: ProcessInstance = {
  pid: 10,
  start_time: "2026-12-01T09:00:00.000Z",
  exe_path: "/usr/bin/app",
  session: ":0:0",
};

function win(over: Partial<WindowInfo>): WindowInfo {
  return {
    hwnd: "1",
    title: "w",
    window_class: "c",
    pid: 10,
    instance: app,
    rect: [0, 0, 400, 300],
    visible: true,
    iconic: false,
    foreground: false,
    on_top: false,
    z: 0,
    ...over,
  };
}

describe("occlusion by the target's own windows", () => {
  const target = win({ hwnd: "100", z: 1, foreground: true });
  const popup = win({ hwnd: "101", z: 0, rect: [50, 50, 150, 120] });

  it("a popup of the same process instance does not cover the target", () => {
    expect(pointOccluded([popup, target], target, 60, 60)).toBe(false);
    expect(rectOccluded([popup, target], target, [0, 0, 400, 300])).toBe(false);
  });

  it("the same window of another instance (a restarted process, another PID) covers it", () => {
    const restarted = { ...popup, instance: { ...app, start_time: "2026-12-01T09:30:00.000Z" } };
    const other = { ...popup, pid: 11, instance: { ...app, pid: 11 } };
    const unknown = { ...popup, pid: 0, instance: null };
    for (const cover of [restarted, other, unknown]) {
      expect(pointOccluded([cover, target], target, 60, 60)).toBe(true);
      expect(rectOccluded([cover, target], target, [0, 0, 400, 300])).toBe(true);
    }
  });
});

describe("points on the target's own popups", () => {
  const target = win({ hwnd: "100", z: 2, foreground: true, rect: [100, 100, 400, 300] });
  // A menu of the target, above it and reaching past its left edge.
  const menu = win({ hwnd: "101", z: 0, rect: [20, 120, 160, 280] });
  const foreign = { pid: 11, instance: { ...app, pid: 11 } };

  it("another instance's window stacked between the target and its menu is hidden under the menu", () => {
    const between = win({ hwnd: "200", z: 1, rect: [0, 100, 90, 200], ...foreign });
    expect(pointOccluded([menu, between, target], target, 50, 150)).toBe(false);
    // Where the menu is not, that window covers the point.
    expect(pointOccluded([menu, between, target], target, 10, 110)).toBe(true);
  });

  it("another instance's window above the menu covers the menu's point", () => {
    const above = win({ hwnd: "201", z: 0, rect: [40, 140, 60, 160], ...foreign });
    const menuBelow = { ...menu, z: 1 };
    expect(pointOccluded([above, menuBelow, target], target, 50, 150)).toBe(true);
  });

  const desktop = (extra: Rect[] = []) =>
    ({
      unlistedOwnWindows: async () => extra,
    }) as unknown as DesktopPort;

  it("pointsInside: a point on the instance's menu outside the window is inside; elsewhere out_of_bounds", async () => {
    const all = [menu, target];
    // Window-relative: the menu lies left of the window (negative x).
    expect(await pointsInside(desktop(), target, all, [{ x: -50, y: 50 }])).toEqual([{ x: 50, y: 150 }]);
    await expect(pointsInside(desktop(), target, all, [{ x: -90, y: -90 }])).rejects.toMatchObject({
      code: "out_of_bounds",
    });
    // Another instance's window there does not make the point part of the target.
    const other = { ...menu, ...foreign };
    await expect(pointsInside(desktop(), target, [other, target], [{ x: -50, y: 50 }])).rejects.toMatchObject(
      {
        code: "out_of_bounds",
      },
    );
    // A minimized or hidden own window is no part of what the agent sees.
    for (const gone of [
      { ...menu, iconic: true },
      { ...menu, visible: false },
    ])
      await expect(
        pointsInside(desktop(), target, [gone, target], [{ x: -50, y: 50 }]),
      ).rejects.toMatchObject({
        code: "out_of_bounds",
      });
  });

  it("pointsInside: the display server's unlisted own windows (X11 override-redirect menus) count", async () => {
    const unlisted: Rect = [20, 120, 160, 280];
    expect(await pointsInside(desktop([unlisted]), target, [target], [{ x: -50, y: 50 }])).toEqual([
      { x: 50, y: 150 },
    ]);
    await expect(pointsInside(desktop(), target, [target], [{ x: -50, y: 50 }])).rejects.toMatchObject({
      code: "out_of_bounds",
    });
  });
});
