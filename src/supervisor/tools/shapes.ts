import { z } from "zod";
import { RectSchema } from "../../shared/geometry.js";
import { exactlyOneTarget, TARGET_REFINE_MESSAGE, type TargetArgs, TargetShape } from "../targets.js";

export const CorrelationId = z.string().regex(/^[0-9a-f]{12}$/);

/**
 * A token from request_confirmation. Every tool that acts on or reads a window takes one: the
 * policy may protect any capability (protected_actions only adds), and a protected one needs it.
 */
export const ConfirmationToken = z
  .string()
  .min(1)
  .max(128)
  .optional()
  .describe("From request_confirmation, for protected capabilities.");

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

export const EffectOutput = z.object({ correlation_id: CorrelationId });

export const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true } as const;
export const EFFECT = { readOnlyHint: false, destructiveHint: false, idempotentHint: false } as const;
export const DESTRUCTIVE = { readOnlyHint: false, destructiveHint: true, idempotentHint: false } as const;
