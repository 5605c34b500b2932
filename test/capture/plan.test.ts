import { describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
import type { Rect } from "../../src/shared/geometry.js";
import {
  MAX_SCREENSHOT_PIXELS,
  planScreenshot,
  type ScreenshotArgs,
  type ScreenshotPolicyView,
} from "../../src/supervisor/screenshot/plan.js";

const WINDOW = { rect: [100, 100, 924, 740] as Rect }; // 824 × 640

const filePolicy: ScreenshotPolicyView = {
  source: "file",
  safe_regions: [
    { name: "board", rect: [20, 60, 420, 460] },
    { name: "status", rect: [0, 600, 824, 640], description: "status bar" },
    { name: "too_far", rect: [700, 600, 900, 700] },
  ],
  screenshot_masks: [
    [30, 70, 50, 90], // inside board
    [400, 440, 500, 500], // straddles board's bottom-right corner
    [600, 0, 700, 50], // outside board
  ],
  allow_unrestricted_screenshots: true, // ignored with a file policy
};

const envPolicy = (allow: boolean): ScreenshotPolicyView => ({
  source: "env",
  safe_regions: [],
  screenshot_masks: [],
  allow_unrestricted_screenshots: allow,
});

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isUiError(e)) return `${e.code}: ${e.message}`;
    throw e;
  }
  return "no error";
}

describe("planScreenshot with a policy file", () => {
  it("uses the named safe region and the masks that intersect it, clipped", () => {
    const plan = planScreenshot(filePolicy, WINDOW, { region_name: "board" });
    expect(plan.region).toEqual([20, 60, 420, 460]);
    expect(plan.masks).toEqual([
      [30, 70, 50, 90],
      [400, 440, 420, 460],
    ]);
    expect(plan.region_name).toBe("board");
  });

  it("requires region_name", () => {
    expect(codeOf(() => planScreenshot(filePolicy, WINDOW, {}))).toMatch(/^invalid_argument: region_name/);
    expect(codeOf(() => planScreenshot(filePolicy, WINDOW, { region_name: "" }))).toMatch(
      /^invalid_argument/,
    );
  });

  it("rejects an unknown region and lists the operator's names", () => {
    const msg = codeOf(() => planScreenshot(filePolicy, WINDOW, { region_name: "nope" }));
    expect(msg).toMatch(/^invalid_argument/);
    expect(msg).toContain("board, status, too_far");
    expect(msg).not.toContain("nope");
  });

  it("ignores crop arguments but still refuses malformed ones", () => {
    const plan = planScreenshot(filePolicy, WINDOW, { region_name: "status", crop_left: 300 });
    expect(plan.region).toEqual([0, 600, 824, 640]);
    expect(
      codeOf(() => planScreenshot(filePolicy, WINDOW, { region_name: "status", crop_left: -1 })),
    ).toMatch(/^invalid_argument/);
  });

  it("is out_of_bounds when the safe region does not fit the live window", () => {
    expect(codeOf(() => planScreenshot(filePolicy, WINDOW, { region_name: "too_far" }))).toMatch(
      /^out_of_bounds/,
    );
    const small = { rect: [0, 0, 300, 300] as Rect };
    expect(codeOf(() => planScreenshot(filePolicy, small, { region_name: "board" }))).toMatch(
      /^out_of_bounds/,
    );
  });
});

describe("planScreenshot with an environment policy", () => {
  it("gives no image unless unrestricted screenshots are allowed", () => {
    expect(codeOf(() => planScreenshot(envPolicy(false), WINDOW, {}))).toMatch(/^action_not_allowed/);
  });

  it("crops 12/40/12/12 by default", () => {
    const plan = planScreenshot(envPolicy(true), WINDOW, {});
    expect(plan.region).toEqual([12, 40, 812, 628]);
    expect(plan.masks).toEqual([]);
    expect(plan.region_name).toBeNull();
  });

  it("takes explicit crops, zero included", () => {
    const args: ScreenshotArgs = { crop_left: 0, crop_top: 0, crop_right: 0, crop_bottom: 0 };
    expect(planScreenshot(envPolicy(true), WINDOW, args).region).toEqual([0, 0, 824, 640]);
    expect(planScreenshot(envPolicy(true), WINDOW, { crop_left: 100, crop_bottom: 40 }).region).toEqual([
      100, 40, 812, 600,
    ]);
  });

  it.each([
    ["negative", -1],
    ["fraction", 1.5],
    ["boolean", true],
    ["string", "12"],
    ["NaN", Number.NaN],
  ])("rejects a %s crop", (_label, value) => {
    const args = { crop_top: value } as unknown as ScreenshotArgs;
    expect(codeOf(() => planScreenshot(envPolicy(true), WINDOW, args))).toMatch(
      /^invalid_argument: crop_top/,
    );
  });

  it("rejects a crop that leaves nothing", () => {
    expect(
      codeOf(() => planScreenshot(envPolicy(true), WINDOW, { crop_left: 412, crop_right: 412 })),
    ).toMatch(/^invalid_argument/);
    expect(codeOf(() => planScreenshot(envPolicy(true), WINDOW, { crop_top: 5000 }))).toMatch(
      /^invalid_argument/,
    );
    expect(planScreenshot(envPolicy(true), WINDOW, { crop_left: 411, crop_right: 412 }).region).toEqual([
      411, 40, 412, 628,
    ]);
  });

  it("applies env-mode masks too", () => {
    const policy = { ...envPolicy(true), screenshot_masks: [[0, 0, 50, 50] as Rect] };
    expect(planScreenshot(policy, WINDOW, {}).masks).toEqual([[12, 40, 50, 50]]);
  });
});

describe("the 16 MP cap", () => {
  it("refuses more than 16 MP and accepts exactly 16 MP", () => {
    const exact = { rect: [0, 0, 4096, 4096] as Rect };
    const args: ScreenshotArgs = { crop_left: 0, crop_top: 0, crop_right: 0, crop_bottom: 0 };
    expect(planScreenshot(envPolicy(true), exact, args).region).toEqual([0, 0, 4096, 4096]);
    expect(MAX_SCREENSHOT_PIXELS).toBe(4096 * 4096);
    const big = { rect: [0, 0, 4097, 4096] as Rect };
    expect(codeOf(() => planScreenshot(envPolicy(true), big, args))).toMatch(/^image_too_large/);
    const policy: ScreenshotPolicyView = {
      ...filePolicy,
      safe_regions: [{ name: "all", rect: [0, 0, 5000, 5000] }],
    };
    expect(
      codeOf(() => planScreenshot(policy, { rect: [0, 0, 5000, 5000] }, { region_name: "all" })),
    ).toMatch(/^image_too_large/);
  });
});
