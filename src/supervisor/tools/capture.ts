import { z } from "zod";
import { uiError } from "../../shared/errors.js";
import { type Rect, rectArea, rectHeight, rectWidth } from "../../shared/geometry.js";
import type { OpResult } from "../../shared/protocol.js";
import { sleep } from "../../shared/sleep.js";
import type { CaptureService } from "../access/services.js";
import { heldFits, shotInOneHop, takeHeldShot } from "../screenshot/oneHop.js";
import { planScreenshot } from "../screenshot/plan.js";
import { changedRects, type MemoTiles, frameMemo as memo, shortHash } from "../screenshot/visual.js";
import { type CallBase, defineWindowTool } from "./define.js";

const Crop = z.number().int().min(0).max(100_000);
/** Where a screenshot looks: a policy's named region, or (env mode) the window minus crops. */
const RegionArgs = {
  region_name: z.string().min(1).max(128).optional(),
  crop_left: Crop.default(12),
  crop_top: Crop.default(40),
  crop_right: Crop.default(12),
  crop_bottom: Crop.default(12),
};
const Hash = z.string().regex(/^[0-9a-f]{32}$/);

type Frame = OpResult<"capture.region">;

/** The image block and the fields every frame result carries. */
function frameResult(call: CallBase, r: Frame, region: Rect) {
  const size: [number, number] = [rectWidth(region), rectHeight(region)];
  // Window-relative position of the image: image pixel (u, v) is window pixel (u + ox, v + oy),
  // the space every input tool takes (and the grid labels show).
  const windowOffset: [number, number] = [region[0], region[1]];
  const png = r.png;
  return {
    fields: { width: size[0], height: size[1], window_offset: windowOffset },
    content: png
      ? [
          {
            type: "image" as const,
            // A view of the transferred PNG, not a copy of it.
            data: Buffer.from(png.buffer, png.byteOffset, png.byteLength).toString("base64"),
            mimeType: "image/png",
          },
        ]
      : [],
    _meta: { correlation_id: call.correlationId, window_offset: windowOffset, image_size: size },
  };
}

/** A memo entry's tile hashes, asked of the capture worker when it kept them (tiles "later"). */
async function tilesFor(capture: CaptureService, kept: MemoTiles | null): Promise<readonly number[] | null> {
  if (kept === null) return null;
  return "later" in kept ? capture.tilesOf(kept.later) : kept;
}

function hashOf(r: Frame): string {
  if (!r.frame_hash) throw uiError("platform_unavailable", "No frame hash was produced.");
  return shortHash(r.frame_hash);
}

export const captureTools = [
  defineWindowTool({
    name: "screenshot_window",
    title: "Screenshot a window region",
    description:
      "PNG of a named safe region (env mode: the window minus crop_* margins); masks painted black. if_changed_since: no image when the same.",
    capability: "observe",
    budget: "inspection",
    args: {
      ...RegionArgs,
      grid: z.boolean().default(false),
      grid_spacing: z.number().int().min(5).max(2000).default(50),
      if_changed_since: Hash.optional(),
    },
    output: z.object({
      width: z.number().int(),
      height: z.number().int(),
      window_offset: z.tuple([z.number().int(), z.number().int()]),
      png_bytes: z.number().int(),
      hash: z.string(),
      unchanged: z.boolean().optional(),
    }),
    effect: "read_only",
    cost: (args, policy, target) => ({
      screenshotPixels: rectArea(planScreenshot(policy, target.window, args).region),
    }),
    oneHop: shotInOneHop,
    uses: ["capture"],
    handler: async (call, args) => {
      const { policy, target, capture } = call;
      const plan = planScreenshot(policy, target.window, args);
      try {
        // Taken in the message that resolved the target when the call allowed it (oneHop).
        const r =
          capture.held && heldFits(capture.held, target.expectation.shown_before ?? [])
            ? takeHeldShot(capture.held, plan)
            : await capture.frame(plan, {
                grid_spacing: args.grid ? args.grid_spacing : null,
                output: "png",
                unless_hash: null,
                // Only a later visual wait reads them (CaptureService.tilesOf): hashed after the answer.
                tiles: "later",
              });
        const hash = hashOf(r);
        memo.remember(
          call.client.hash,
          hash,
          r.tiles ?? (r.frame_hash ? { later: r.frame_hash } : undefined),
          target.instanceKey,
        );
        const out = frameResult(call, r, plan.region);
        call.counters.masks = plan.masks.length;
        if (args.if_changed_since === hash) {
          // The client has this image: nothing was shown, so the pixels go back.
          call.charge?.refund();
          call.counters.unchanged = true;
          return {
            structured: { ...out.fields, png_bytes: 0, hash, unchanged: true },
            _meta: out._meta,
          };
        }
        if (!r.png) throw uiError("platform_unavailable", "No image was produced.");
        call.counters.pixels = rectArea(plan.region);
        call.counters.png_bytes = r.png.byteLength;
        return {
          structured: { ...out.fields, png_bytes: r.png.byteLength, hash },
          content: out.content,
          _meta: out._meta,
        };
      } catch (e) {
        // No image left the server (memory wait cancelled, worker refusal, crash or deadline,
        // image too large): the pixels go back, so failing captures cannot drain the budget.
        call.charge?.refund();
        throw e;
      }
    },
  }),

  defineWindowTool({
    name: "wait_for_visual_change",
    title: "Wait for a visual change",
    description:
      "Waits ≤ 30 s for the region to differ from frame `since` (a screenshot hash; default now): changed rects, PNG if include_frame.",
    capability: "observe",
    budget: "inspection",
    // Env mode without region_name: screenshot_window's default crops.
    args: {
      region_name: RegionArgs.region_name,
      since: Hash.optional(),
      timeout_ms: z.number().int().min(0).max(30_000).default(10_000),
      include_frame: z.boolean().default(false),
    },
    output: z.object({
      changed: z.boolean(),
      elapsed_ms: z.number(),
      hash: z.string(),
      changed_rects: z.array(z.tuple([z.number(), z.number(), z.number(), z.number()])).optional(),
      png_bytes: z.number().int().optional(),
    }),
    effect: "read_only",
    cost: (args, policy, target) => ({
      screenshotPixels: args.include_frame ? rectArea(planScreenshot(policy, target.window, args).region) : 0,
    }),
    uses: ["capture"],
    handler: async (call, args) => {
      const { policy, target } = call;
      const plan = planScreenshot(policy, target.window, args);
      const interval = call.capture.sampleIntervalMs;
      const start = Date.now();
      // Samples are hashes only: no image is made until the frame that differs.
      const sample = (output: "png" | "frame_hash", unless: string | null) =>
        call.capture.frame(plan, {
          grid_spacing: null,
          output,
          unless_hash: unless,
          tiles: true,
        });
      try {
        let since = args.since ?? null;
        let sinceTiles =
          since === null ? null : await tilesFor(call.capture, memo.tiles(call.client.hash, since));
        let samples = 0;
        for (;;) {
          // Authorized by a grant (not a lease): the grant must stay live for every sample.
          const denied = call.capture.stillAuthorized();
          if (denied) throw denied;
          const r = await sample(args.include_frame && since !== null ? "png" : "frame_hash", since);
          samples += 1;
          call.counters.samples = samples;
          const hash = hashOf(r);
          const elapsed = Date.now() - start;
          if (since === null) {
            // The first frame is the one changes are measured from.
            since = hash;
            sinceTiles = r.tiles ?? null;
          } else if (hash !== since) {
            memo.remember(call.client.hash, hash, r.tiles, call.target.instanceKey);
            const out = frameResult(call, r, plan.region);
            const rects = changedRects(sinceTiles, r.tiles ?? [], out.fields.width, out.fields.height, [
              plan.region[0],
              plan.region[1],
            ]);
            if (!args.include_frame) call.charge?.refund();
            else call.counters.png_bytes = r.png?.byteLength ?? 0;
            return {
              structured: {
                changed: true,
                elapsed_ms: elapsed,
                hash,
                changed_rects: rects,
                ...(r.png ? { png_bytes: r.png.byteLength } : {}),
              },
              content: out.content,
              ...(r.png ? { _meta: out._meta } : {}),
            };
          }
          if (elapsed >= args.timeout_ms) {
            call.charge?.refund();
            return { structured: { changed: false, elapsed_ms: elapsed, hash } };
          }
          await call.progress(elapsed, args.timeout_ms);
          await sleep(Math.min(interval, args.timeout_ms - elapsed), call.signal).catch(() => {
            throw uiError("cancelled");
          });
        }
      } catch (e) {
        call.charge?.refund();
        throw e;
      }
    },
  }),
];
