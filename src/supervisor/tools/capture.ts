import { z } from "zod";
import { uiError } from "../../shared/errors.js";
import { rectArea, rectHeight, rectWidth } from "../../shared/geometry.js";
import { planScreenshot } from "../screenshot/plan.js";
import { defineWindowTool } from "./define.js";

const Crop = z.number().int().min(0).max(100_000);
/**
 * zlib level of the PNG: measured on 800×600 gtk3-widget-factory and xterm frames
 * (docs/reference.md, "Screenshots: PNG encoding"), level 2 encodes in the time of level 1
 * (zlib's fast deflate, levels 1–3) for 1–9% fewer bytes, and level 3 costs up to 1.5× for a
 * few % more; from level 4 on time grows faster than size falls.
 */
const PNG_LEVEL = 2;

export const captureTools = [
  defineWindowTool({
    name: "screenshot_window",
    title: "Screenshot a window region",
    description:
      "PNG of a named safe region of the window (env mode with unrestricted screenshots: the window minus crop_* margins); masks painted black.",
    capability: "observe",
    budget: "inspection",
    args: {
      region_name: z.string().min(1).max(128).optional(),
      crop_left: Crop.default(12),
      crop_top: Crop.default(40),
      crop_right: Crop.default(12),
      crop_bottom: Crop.default(12),
      grid: z.boolean().default(false),
      grid_spacing: z.number().int().min(5).max(2000).default(50),
    },
    output: z.object({
      width: z.number().int(),
      height: z.number().int(),
      window_offset: z.tuple([z.number().int(), z.number().int()]),
      png_bytes: z.number().int(),
    }),
    effect: "read_only",
    cost: (args, policy, target) => ({
      screenshotPixels: rectArea(planScreenshot(policy, target.window, args).region),
    }),
    handler: async (ctx, args) => {
      const { sup, policy, target } = ctx;
      const plan = planScreenshot(policy, target.window, args);
      const pixels = rectArea(plan.region);
      try {
        // Raw frame (3 B/px RGB on X11, the 4 B/px DIB on Win32, in the worker) plus 4 B/px for the PNG and its base64 copy (UI-like
        // frames compress far below that; noise-like ones can exceed it, up to max_png_bytes), held
        // until the handler returns; the SDK's JSON frame written after that is not counted.
        const reservation = await sup.memory.reserve(pixels * 8, ctx.signal);
        try {
          const r = await ctx.call("capture.region", {
            target: target.expectation,
            region: plan.region,
            masks: plan.masks,
            grid_spacing: args.grid ? args.grid_spacing : null,
            output: "png",
            max_png_bytes: policy.limits.max_png_bytes,
            compression_level: PNG_LEVEL,
            // The worker's own listing by the id it gave it (nothing copied back), else the listing.
            listing: target.listing?.id === undefined ? (target.listing ?? null) : null,
            listing_id: target.listing?.id ?? null,
          });
          if (!r.png) throw uiError("platform_unavailable", "No image was produced.");
          ctx.counters.pixels = pixels;
          ctx.counters.png_bytes = r.png.byteLength;
          ctx.counters.masks = plan.masks.length;
          const size: [number, number] = [rectWidth(plan.region), rectHeight(plan.region)];
          // Window-relative position of the image: image pixel (u, v) is window pixel (u + ox, v + oy),
          // the space every input tool takes (and the grid labels show).
          const windowOffset: [number, number] = [plan.region[0], plan.region[1]];
          return {
            structured: {
              width: size[0],
              height: size[1],
              window_offset: windowOffset,
              png_bytes: r.png.byteLength,
            },
            content: [
              {
                type: "image",
                // A view of the transferred PNG, not a copy of it.
                data: Buffer.from(r.png.buffer, r.png.byteOffset, r.png.byteLength).toString("base64"),
                mimeType: "image/png",
              },
            ],
            _meta: { correlation_id: ctx.correlationId, window_offset: windowOffset, image_size: size },
          };
        } finally {
          reservation.release();
        }
      } catch (e) {
        // No image left the server (memory wait cancelled, worker refusal, crash or deadline,
        // image too large): the pixels go back, so failing captures cannot drain the budget.
        ctx.charge?.refund();
        throw e;
      }
    },
  }),
];
