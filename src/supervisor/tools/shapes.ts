import { z } from "zod";
import { RectSchema } from "../../shared/geometry.js";
import { exactlyOneTarget, TARGET_REFINE_MESSAGE, type TargetArgs, TargetShape } from "../access/targets.js";

export const CorrelationId = z.string().regex(/^[0-9a-f]{12}$/);

/**
 * A token from request_confirmation, the one spelling of the argument. Every tool that acts on or
 * reads a window takes it (the window and ref kinds add it, src/supervisor/tools/define.ts): the
 * policy may protect any capability (protected_actions only adds), and a protected one needs it.
 */
export const ConfirmationToken = z
  .string()
  .min(1)
  .max(128)
  .optional()
  .describe("A token from request_confirmation.");

/** An element ref from inspect_tree / find_elements / wait_for_element (s1.e12). */
export const Ref = z.string().min(1).max(64);

/** An object schema plus "exactly one of hwnd / title_contains". */
export function withTarget<S extends z.ZodRawShape>(shape: S) {
  return z
    .strictObject({ ...TargetShape, ...shape })
    .refine((v) => exactlyOneTarget(v as TargetArgs), { message: TARGET_REFINE_MESSAGE });
}

export const WindowSummary = z.object({
  title: z.string(),
  pid: z.number().int(),
  hwnd: z.string(),
  rect: RectSchema,
  process_path: z.string(),
  window_class: z.string(),
  foreground: z.boolean(),
});
