import { uiError } from "../../shared/errors.js";
import { containsRect, intersect, type Rect, rectArea } from "../../shared/geometry.js";
import type { EffectivePolicy } from "../policy/load.js";

/**
 * Which window-relative region a screenshot may show, and which masks cover it
 * (docs/spec.md §4 and §6, screenshot_window). Pure: no platform calls, no pixels; the capture
 * worker re-checks the region against the live window immediately before reading.
 */

/** At most 16 MP (4096 × 4096) per image. */
export const MAX_SCREENSHOT_PIXELS = 16 * 1024 * 1024;

export const DEFAULT_CROP = { left: 12, top: 40, right: 12, bottom: 12 } as const;

export type ScreenshotPolicyView = Pick<
  EffectivePolicy,
  "source" | "safe_regions" | "screenshot_masks" | "allow_unrestricted_screenshots"
>;

export interface ScreenshotArgs {
  region_name?: string | null | undefined;
  crop_left?: number | undefined;
  crop_top?: number | undefined;
  crop_right?: number | undefined;
  crop_bottom?: number | undefined;
}

export interface ScreenshotPlan {
  /** Window-relative, non-empty, inside the window. */
  region: Rect;
  /** Window-relative masks, each already clipped to the region. */
  masks: Rect[];
  /** The safe region used (file policy), or null (env crop path). Never goes to audit. */
  region_name: string | null;
}

/** Non-negative integer; anything else (booleans, strings, fractions, NaN) is refused. */
function cropValue(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw uiError("invalid_argument", `${name} must be a non-negative integer.`);
  }
  return value;
}

function namedRegion(policy: ScreenshotPolicyView, name: string): Rect {
  const found = policy.safe_regions.find((r) => r.name === name);
  if (found) return [...found.rect];
  // Region names are the operator's (policy file), not the target's, so listing them is safe.
  const known = policy.safe_regions.map((r) => r.name);
  throw uiError(
    "invalid_argument",
    known.length > 0
      ? `Unknown region_name; the policy's safe regions are: ${known.join(", ")}.`
      : "Unknown region_name; the policy defines no safe regions.",
  );
}

export function planScreenshot(
  policy: ScreenshotPolicyView,
  window: { rect: Rect },
  args: ScreenshotArgs,
): ScreenshotPlan {
  const bounds = windowBounds(window);
  const width = bounds[2];
  const height = bounds[3];
  const regionName = args.region_name ? args.region_name : null;
  // Checked in every mode so a malformed crop is never silently ignored.
  const crop = {
    left: cropValue("crop_left", args.crop_left, DEFAULT_CROP.left),
    top: cropValue("crop_top", args.crop_top, DEFAULT_CROP.top),
    right: cropValue("crop_right", args.crop_right, DEFAULT_CROP.right),
    bottom: cropValue("crop_bottom", args.crop_bottom, DEFAULT_CROP.bottom),
  };

  let region: Rect;
  if (policy.source === "file") {
    // A policy file says exactly what may be seen: a named safe region, nothing else.
    if (regionName === null) {
      // Region names are the operator's text, never the target's: listing them is safe.
      const known = policy.safe_regions.map((r) => r.name);
      throw uiError(
        "invalid_argument",
        known.length > 0
          ? `region_name is required when a policy file is in use; the policy's safe regions are: ${known.join(", ")}.`
          : "region_name is required when a policy file is in use, and the policy defines no safe_regions: add one to allow screenshots.",
      );
    }
    region = namedRegion(policy, regionName);
  } else {
    if (!policy.allow_unrestricted_screenshots) {
      throw uiError(
        "action_not_allowed",
        "Screenshots in environment-policy mode need DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS=true (or use a policy file with safe_regions).",
      );
    }
    if (regionName !== null) {
      region = namedRegion(policy, regionName);
    } else {
      const { left, top, right, bottom } = crop;
      if (left + right >= width || top + bottom >= height) {
        throw uiError("invalid_argument", `The crop leaves nothing of the ${width}×${height} window.`);
      }
      region = [left, top, width - right, height - bottom];
    }
  }

  return { region, masks: checkAndMask(policy, bounds, region), region_name: regionName };
}

/** Inside the window, within the pixel cap; the policy's masks clipped to the region. */
function checkAndMask(policy: ScreenshotPolicyView, bounds: Rect, region: Rect): Rect[] {
  if (!containsRect(bounds, region) || rectArea(region) === 0) {
    throw uiError(
      "out_of_bounds",
      `The screenshot region [${region.join(", ")}] lies outside the target window (${bounds[2]}×${bounds[3]}); a region is window-relative [left, top, right, bottom].`,
    );
  }
  const pixels = rectArea(region);
  if (pixels > MAX_SCREENSHOT_PIXELS) {
    throw uiError(
      "image_too_large",
      `The region has ${pixels} pixels; at most ${MAX_SCREENSHOT_PIXELS} are allowed.`,
    );
  }
  const masks: Rect[] = [];
  for (const m of policy.screenshot_masks) {
    const clipped = intersect(m, region);
    if (clipped) masks.push(clipped);
  }
  return masks;
}

function windowBounds(window: { rect: Rect }): Rect {
  return [0, 0, Math.max(0, window.rect[2] - window.rect[0]), Math.max(0, window.rect[3] - window.rect[1])];
}

/**
 * The capture behind check/record_coordinate_profile: only a hash leaves the worker, but
 * it is still observation, so it follows the screenshot rules. File policy: the reference
 * rect must lie inside one of the policy's safe regions. Env policy: only with
 * unrestricted screenshots allowed. Masks are the policy's, as for screenshots, so a
 * recording and a later check hash the same thing.
 */
export function planReferenceCapture(
  policy: ScreenshotPolicyView,
  window: { rect: Rect },
  reference: { name: string; rect: Rect },
): ScreenshotPlan {
  const region: Rect = [reference.rect[0], reference.rect[1], reference.rect[2], reference.rect[3]];
  if (policy.source === "file") {
    // The operator's region, exactly: a profile cannot widen or shift what is read (and what its
    // verification colours reveal) by naming a policy region with other coordinates.
    const own = policy.safe_regions.find((r) => r.name === reference.name);
    if (!own) throw uiError("action_not_allowed", "The reference region names no safe region of the policy.");
    if (own.rect.some((v, i) => v !== region[i]))
      throw uiError(
        "action_not_allowed",
        "The reference region's rect differs from the policy's safe region of that name.",
      );
  } else if (!policy.allow_unrestricted_screenshots) {
    throw uiError(
      "action_not_allowed",
      "Profile captures in environment-policy mode need DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS=true (or use a policy file with safe_regions).",
    );
  }
  return { region, masks: checkAndMask(policy, windowBounds(window), region), region_name: null };
}
