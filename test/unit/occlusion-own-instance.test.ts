import { describe, expect, it } from "vitest";
import type { ProcessInstance } from "../../src/shared/identity.js";
import { pointOccluded, rectOccluded } from "../../src/shared/occlusion.js";
import type { WindowInfo } from "../../src/shared/platform.js";

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
