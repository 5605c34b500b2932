import { uiError } from "../../shared/errors.js";
import { intersect, type Rect, rectArea, sameRect } from "../../shared/geometry.js";
import { sameInstance } from "../../shared/identity.js";
import type { OpResult } from "../../shared/protocol.js";
import type { HeldShot, OneHopCall, OneHopReply } from "../access/calls.js";
import { sameShownBefore } from "../access/shownBefore.js";
import type { EffectivePolicy } from "../policy/load.js";
import { MAX_SCREENSHOT_PIXELS, type ScreenshotPlan } from "./plan.js";
import { PNG_LEVEL } from "./sample.js";

/**
 * screenshot_window in one worker message (capture.window): the capture worker lists the
 * desktop, checks, reads, checks again and encodes, and the supervisor resolves and authorizes
 * the target from that listing before the frame is looked at (src/supervisor/access/chain.ts).
 * Only a call whose region is known before the window is: an hwnd (a title is matched against
 * the policy, which only the supervisor holds) and a named region the policy allows (the caller's
 * grants on that window go with it, for the windows shown when each began). Any other
 * call, and any call whose region the policy would refuse, takes the chain's own listing first,
 * so its refusal comes where it always did.
 */

export interface OneHopShotArgs {
  hwnd?: string | undefined;
  region_name?: string | undefined;
  grid: boolean;
  grid_spacing: number;
}

/** The region and masks of a named region, without the window; null when the plan would refuse. */
export function namedRegionPlan(policy: EffectivePolicy, name: string | undefined): ScreenshotPlan | null {
  if (!name) return null;
  if (policy.source !== "file" && !policy.allow_unrestricted_screenshots) return null;
  const found = policy.safe_regions.find((r) => r.name === name);
  if (!found) return null;
  const region: Rect = [...found.rect];
  const pixels = rectArea(region);
  if (pixels === 0 || pixels > MAX_SCREENSHOT_PIXELS) return null;
  const masks: Rect[] = [];
  for (const m of policy.screenshot_masks) {
    const clipped = intersect(m, region);
    if (clipped) masks.push(clipped);
  }
  return { region, masks, region_name: name };
}

export function shotInOneHop(
  call: OneHopCall,
  args: OneHopShotArgs,
  policy: EffectivePolicy,
): Promise<OneHopReply> | null {
  if (args.hwnd === undefined) return null;
  const plan = namedRegionPlan(policy, args.region_name);
  if (!plan) return null;
  const hwnd = args.hwnd;
  // As captureFrame: the frame in the worker plus the PNG and its base64 copy here.
  return call.turn(rectArea(plan.region) * 8, async () => {
    // The worker judges popups against the windows shown when the caller's grant began, and
    // keeps the frame for its tiles only under a grant: read as the message goes, so one that
    // ended during the wait for the turn and the memory is neither (its frames were forgotten
    // as it ended).
    const grants = call.grantsOn(hwnd);
    const r = await call.captureWindow({
      hwnd,
      region: plan.region,
      masks: plan.masks,
      grid_spacing: args.grid ? args.grid_spacing : null,
      output: "png",
      unless_hash: null,
      // Only a later visual wait reads them (CaptureService.tilesOf): hashed after the answer.
      tiles: "later",
      max_png_bytes: policy.limits.max_png_bytes,
      compression_level: PNG_LEVEL,
      granted: grants.slice(0, 16).map((g) => ({
        instance: g.instance,
        shown_before: g.shownBefore.slice(0, 4096),
      })),
    });
    const listed = r.windows.find((w) => w.hwnd === hwnd)?.instance ?? null;
    const used = grants.find((g) => listed !== null && sameInstance(g.instance, listed))?.shownBefore ?? [];
    return { windows: r.windows, held: holdShot(plan.region, r.shot, r.refused, used) };
  });
}

/** The frame as the chain keeps it: nothing reads it but the handler, and drop() zeroes it. */
export function holdShot(
  region: Rect,
  frame: OpResult<"capture.region"> | null,
  refused: { code: Parameters<typeof uiError>[0]; message: string } | null,
  shownBefore: readonly string[] = [],
): HeldShot {
  return {
    region,
    frame,
    shownBefore,
    refused: refused ? uiError(refused.code, refused.message) : null,
    drop() {
      frame?.png?.fill(0);
    },
  };
}

/**
 * Whether the held frame was checked against the windows shown when the call's grant began (a
 * grant that began in this call's authorization, under the lease, was not known to the worker).
 */
export function heldFits(held: HeldShot, want: readonly string[]): boolean {
  return sameShownBefore(held.shownBefore, want);
}

/**
 * The held frame for the plan the handler made with the resolved window: the check's refusal
 * if there was one (now that the call is authorized), else the frame of exactly that region.
 */
export function takeHeldShot(held: HeldShot, plan: ScreenshotPlan): OpResult<"capture.region"> {
  if (held.refused) throw held.refused;
  if (!held.frame || !sameRect(held.region, plan.region))
    throw uiError("platform_unavailable", "The capture did not produce the planned region.");
  return held.frame;
}
