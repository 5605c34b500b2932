import { uiError } from "../../shared/errors.js";
import { rectArea } from "../../shared/geometry.js";
import type { OpResult } from "../../shared/protocol.js";
import type { ResolvedTarget } from "../access/targets.js";
import { type EffectivePolicy, policyStatusAt } from "../policy/load.js";
import { actionAllowed, windowAllowed } from "../policy/match.js";
import type { Supervisor } from "../supervisor.js";
import type { ScreenshotPlan } from "./plan.js";
import type { ShotLane } from "./shotLane.js";

/**
 * One frame of a planned region through the capture worker's capture.region (the same
 * check → read → check → masks path as screenshot_window), under the screenshot memory budget.
 * Every sampler (screenshot_window, wait_for_visual_change, frame streams) takes its frames here.
 */

/**
 * zlib level of the PNG: measured on 800×600 gtk3-widget-factory and xterm frames
 * (docs/reference.md, "Screenshots: PNG encoding"), level 2 encodes in the time of level 1
 * (zlib's fast deflate, levels 1–3) for 1–9% fewer bytes, and level 3 costs up to 1.5× for a
 * few % more; from level 4 on time grows faster than size falls.
 */
export const PNG_LEVEL = 2;

export interface FrameRequest {
  grid_spacing: number | null;
  /** "png": an image unless its hash is unless_hash; "frame_hash": the hash (and tiles) only. */
  output: "png" | "frame_hash";
  unless_hash: string | null;
  /** "later": kept in the worker under the frame hash for CaptureService.tilesOf. */
  tiles: boolean | "later";
}

/**
 * `keepFor`: the identity a "later" frame is for. The worker keeps its PNG for that identity
 * and the target's instance only while the identity holds a grant on it when the message goes:
 * a grant that ends after that has its kept frames forgotten behind this message (capture.forget),
 * one that ended before keeps nothing.
 */
export function captureFrame(
  sup: Supervisor,
  lane: ShotLane,
  maxPngBytes: number,
  target: ResolvedTarget,
  plan: ScreenshotPlan,
  req: FrameRequest,
  keepFor: string | null = null,
): Promise<OpResult<"capture.region">> {
  const pixels = rectArea(plan.region);
  // Raw frame (3 B/px RGB on X11, the 4 B/px DIB on Win32, in the worker) plus 4 B/px for the PNG
  // and its base64 copy (UI-like frames compress far below that; noise-like ones can exceed it,
  // up to max_png_bytes), held until the caller is done with the result. A hash alone encodes the
  // PNG too (the frame hash is the PNG's, workers/capture/frameHash.ts), in the worker only.
  return lane.turn(pixels * 8, () => {
    // Read as the message goes: a grant that ended while the shot waited keeps nothing.
    const keep =
      req.tiles === "later" && keepFor !== null && sup.grants.get(keepFor, target.instanceKey) !== undefined;
    return lane.call("capture.region", {
      target: target.expectation,
      region: plan.region,
      masks: plan.masks,
      grid_spacing: req.grid_spacing,
      output: req.output,
      max_png_bytes: maxPngBytes,
      compression_level: PNG_LEVEL,
      // The worker's own listing by the id it gave it (nothing copied back), else the listing.
      listing: target.listing?.id === undefined ? (target.listing ?? null) : null,
      listing_id: target.listing?.id ?? null,
      unless_hash: req.unless_hash,
      tiles: req.tiles,
      keep_for: keep ? keepFor : null,
    });
  });
}

/**
 * Whether frames of the target may still be taken for this client: its grant (when the call
 * was authorized by one) is live, and the policy in force is the one the sampling started
 * under and still allows observing the window. Else the error that ends the sampling.
 */
export function stillAuthorized(
  sup: Supervisor,
  client: string,
  policy: EffectivePolicy,
  target: ResolvedTarget,
  byGrant: boolean,
): ReturnType<typeof uiError> | null {
  const state = policyStatusAt(sup.policyState, () => new Date(sup.clock()));
  if (state.status !== "ok" || state.policy !== policy)
    return uiError("action_not_allowed", "The policy changed; ask again.");
  const p = state.policy;
  if (!actionAllowed(p, "observe")) return uiError("action_not_allowed");
  const exe = target.instance.exe_path;
  if (!windowAllowed(p, { title: target.window.title, exe_path: exe })) return uiError("target_not_allowed");
  if (byGrant) {
    const g = sup.grants.get(client, target.instanceKey);
    if (!g?.capabilities.has("observe")) return uiError("consent_required");
  }
  return null;
}
