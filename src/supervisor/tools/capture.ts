import { z } from "zod";
import { uiError } from "../../shared/errors.js";
import { type Rect, rectArea, rectHeight, rectWidth } from "../../shared/geometry.js";
import type { OpResult } from "../../shared/protocol.js";
import { sleep } from "../../shared/sleep.js";
import { shotInOneHop, takeHeldShot } from "../screenshot/oneHop.js";
import { planScreenshot } from "../screenshot/plan.js";
import { captureFrame, stillAuthorized } from "../screenshot/sample.js";
import { changedRects, FrameMemo, shortHash } from "../screenshot/visual.js";
import { defineWindowTool, type TargetCall } from "./define.js";

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

/** Tile hashes of the frames each client was handed, to say later what changed since one. */
const memo = new FrameMemo();

type Frame = OpResult<"capture.region">;

/** The image block and the fields every frame result carries. */
function frameResult(ctx: TargetCall, r: Frame, region: Rect) {
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
    _meta: { correlation_id: ctx.correlationId, window_offset: windowOffset, image_size: size },
  };
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
    handler: async (ctx, args) => {
      const { sup, policy, target } = ctx;
      const plan = planScreenshot(policy, target.window, args);
      try {
        // Taken in the message that resolved the target when the call allowed it (oneHop).
        const r = ctx.held
          ? takeHeldShot(ctx.held, plan)
          : await captureFrame(sup, ctx.call, ctx.signal, policy.limits.max_png_bytes, target, plan, {
              grid_spacing: args.grid ? args.grid_spacing : null,
              output: "png",
              unless_hash: null,
              tiles: true,
            });
        const hash = hashOf(r);
        memo.remember(ctx.client.hash, hash, r.tiles);
        const out = frameResult(ctx, r, plan.region);
        ctx.counters.masks = plan.masks.length;
        if (args.if_changed_since === hash) {
          // The client has this image: nothing was shown, so the pixels go back.
          ctx.charge?.refund();
          ctx.counters.unchanged = true;
          return {
            structured: { ...out.fields, png_bytes: 0, hash, unchanged: true },
            _meta: out._meta,
          };
        }
        if (!r.png) throw uiError("platform_unavailable", "No image was produced.");
        ctx.counters.pixels = rectArea(plan.region);
        ctx.counters.png_bytes = r.png.byteLength;
        return {
          structured: { ...out.fields, png_bytes: r.png.byteLength, hash },
          content: out.content,
          _meta: out._meta,
        };
      } catch (e) {
        // No image left the server (memory wait cancelled, worker refusal, crash or deadline,
        // image too large): the pixels go back, so failing captures cannot drain the budget.
        ctx.charge?.refund();
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
    handler: async (ctx, args) => {
      const { sup, policy, target } = ctx;
      const plan = planScreenshot(policy, target.window, args);
      const interval = 1000 / sup.config.visualSampleRate;
      const start = Date.now();
      // Authorized by a grant (not a lease): the grant must stay live for every sample.
      const byGrant = sup.grants.get(ctx.client.hash, target.instanceKey) !== undefined;
      // Samples are hashes only: no image is made until the frame that differs.
      const sample = (output: "png" | "frame_hash", unless: string | null) =>
        captureFrame(sup, ctx.call, ctx.signal, policy.limits.max_png_bytes, target, plan, {
          grid_spacing: null,
          output,
          unless_hash: unless,
          tiles: true,
        });
      try {
        let since = args.since ?? null;
        let sinceTiles = since === null ? null : memo.tiles(ctx.client.hash, since);
        let samples = 0;
        for (;;) {
          const denied = stillAuthorized(sup, ctx.client.hash, policy, target, byGrant);
          if (denied) throw denied;
          const r = await sample(args.include_frame && since !== null ? "png" : "frame_hash", since);
          samples += 1;
          ctx.counters.samples = samples;
          const hash = hashOf(r);
          const elapsed = Date.now() - start;
          if (since === null) {
            // The first frame is the one changes are measured from.
            since = hash;
            sinceTiles = r.tiles ?? null;
          } else if (hash !== since) {
            memo.remember(ctx.client.hash, hash, r.tiles);
            const out = frameResult(ctx, r, plan.region);
            const rects = changedRects(sinceTiles, r.tiles ?? [], out.fields.width, out.fields.height, [
              plan.region[0],
              plan.region[1],
            ]);
            if (!args.include_frame) ctx.charge?.refund();
            else ctx.counters.png_bytes = r.png?.byteLength ?? 0;
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
            ctx.charge?.refund();
            return { structured: { changed: false, elapsed_ms: elapsed, hash } };
          }
          await ctx.progress(elapsed, args.timeout_ms);
          await sleep(Math.min(interval, args.timeout_ms - elapsed), ctx.signal).catch(() => {
            throw uiError("cancelled");
          });
        }
      } catch (e) {
        ctx.charge?.refund();
        throw e;
      }
    },
  }),
];
