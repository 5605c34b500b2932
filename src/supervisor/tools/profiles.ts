import { z } from "zod";
import { RectSchema, rectArea } from "../../shared/geometry.js";
import type { CaptureService } from "../access/services.js";
import type { ResolvedTarget } from "../access/targets.js";
import type { EffectivePolicy } from "../policy/load.js";
import { loadProfileInFolder, profilesFolder } from "../profiles/folder.js";
import {
  checkProfile,
  type ReferenceCapture,
  recordProfile,
  resolvePoint,
  resolveReferenceRegion,
} from "../profiles/profile.js";
import { CoordinateProfileSchema } from "../profiles/schema.js";
import type { ScreenshotPlan } from "../screenshot/plan.js";
import { planReferenceCapture } from "../screenshot/plan.js";
import { type ActingCall, defineOpenTool, defineWindowTool } from "./define.js";

const ProfilePath = z
  .string()
  .min(1)
  .max(4096)
  .describe(
    "Path of a coordinate profile JSON file inside the operator's profiles folder (relative to it, or absolute).",
  );
const Name = z.string().min(1).max(64);

/**
 * The same capture chain as screenshots, but only a hash of the masked region leaves the worker.
 * The raw frame the worker reads still counts against the process-wide memory budget, reserved
 * before the capture and released when it is done (4 bytes a pixel: no PNG is made).
 */
async function referenceCapture(
  call: ActingCall & { capture: CaptureService },
  plan: ScreenshotPlan,
  points: readonly { x: number; y: number }[],
): Promise<ReferenceCapture> {
  try {
    const r = await call.capture.hash(plan, points);
    call.counters.pixels = rectArea(plan.region);
    return r;
  } catch (e) {
    // No hash came back: nothing of the window was used, so its pixels go back (as screenshots).
    call.charge?.refund();
    throw e;
  }
}

/** The profile at `path` in the operator's profiles folder (action_not_allowed without one). */
function loadProfile(policy: EffectivePolicy | null, path: string) {
  return loadProfileInFolder(profilesFolder(policy), path);
}

/** Windows as checkProfile / recordProfile see them: rect and the OS's executable path. */
const facts = (t: ResolvedTarget) => ({ rect: t.window.rect, exe_path: t.instance.exe_path });

const referencePixels = (rect: readonly number[]) =>
  Math.max(0, rect[2] - rect[0]) * Math.max(0, rect[3] - rect[1]);

export const profileTools = [
  defineOpenTool({
    name: "resolve_coordinate_profile_point",
    title: "Resolve a profile point",
    description: "Window-relative point of a profile's named safe region (centre) or verification point.",
    input: z.strictObject({ profile_path: ProfilePath, region_name: Name }),
    output: z.object({
      x: z.number().int(),
      y: z.number().int(),
      kind: z.enum(["safe_region", "verification_point"]),
      window_size: z.tuple([z.number().int(), z.number().int()]),
    }),
    effect: "read_only",
    uses: ["policies"],
    handler: async (call, args) => {
      // Needs no capability, but the folder is the policy's: without a usable policy there is none.
      const profile = loadProfile(call.policies.current(), args.profile_path);
      return { structured: resolvePoint(profile, args.region_name) };
    },
  }),

  defineWindowTool({
    name: "check_coordinate_profile",
    title: "Check a coordinate profile",
    description:
      "Whether the live window still matches a profile (executable, size, masked reference hash, point colours).",
    capability: "observe",
    budget: "inspection",
    args: { profile_path: ProfilePath },
    output: z.object({
      matches: z.boolean(),
      reason: z.enum(["ok", "application_mismatch", "size_mismatch", "hash_mismatch", "color_mismatch"]),
      expected_size: z.tuple([z.number().int(), z.number().int()]),
      actual_size: z.tuple([z.number().int(), z.number().int()]),
    }),
    effect: "read_only",
    cost: (args, policy) => {
      try {
        return {
          screenshotPixels: referencePixels(loadProfile(policy, args.profile_path).reference_region.rect),
        };
      } catch {
        return {};
      }
    },
    uses: ["capture"],
    handler: async (call, args) => {
      const profile = loadProfile(call.policy, args.profile_path);
      const window = facts(call.target);
      const early = checkProfile(profile, window, null);
      if (early.reason === "application_mismatch" || early.reason === "size_mismatch") {
        // Answered from the window's executable or size alone: nothing was captured.
        call.charge?.refund();
        return { structured: early };
      }
      const capture = await referenceCapture(
        call,
        planReferenceCapture(call.policy, window, profile.reference_region),
        profile.verification_points,
      );
      return { structured: checkProfile(profile, window, capture) };
    },
  }),

  defineWindowTool({
    name: "record_coordinate_profile",
    title: "Record a coordinate profile",
    description:
      "Builds a coordinate profile from the live window (executable, size, masked reference hash, point colours); writes no file.",
    capability: "observe",
    budget: "inspection",
    args: {
      profile_id: z.string().min(1).max(128),
      reference_region_name: Name,
      safe_regions: z
        .array(z.strictObject({ name: Name, rect: RectSchema, description: z.string().max(256).optional() }))
        .max(256),
      verification_points: z
        .array(z.strictObject({ name: Name, x: z.number().int(), y: z.number().int() }))
        .max(256),
      app_version: z.string().min(1).max(128).optional(),
    },
    output: z.object({ profile: CoordinateProfileSchema }),
    effect: "read_only",
    // The reference region is captured (hashed), so it counts like screenshot pixels.
    cost: (args, policy) => {
      try {
        return { screenshotPixels: referencePixels(resolveReferenceRegion(args, policy.safe_regions).rect) };
      } catch {
        return {};
      }
    },
    uses: ["capture"],
    handler: async (call, args) => {
      const { policy } = call;
      const window = facts(call.target);
      const reference = resolveReferenceRegion(args, policy.safe_regions);
      const capture = await referenceCapture(
        call,
        planReferenceCapture(policy, window, reference),
        args.verification_points,
      );
      return {
        structured: {
          profile: recordProfile(args, window, capture, policy.safe_regions),
        },
      };
    },
  }),
];
