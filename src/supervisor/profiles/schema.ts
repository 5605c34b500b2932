import { z } from "zod";
import { AbsoluteExecutablePathSchema } from "../policy/schema.js";

/**
 * Coordinate profile (docs/spec.md §6): a JSON file that fixes, for one application window
 * size, where the things an agent clicks are, plus a hash that proves the window still
 * looks like it did when the profile was recorded. Every coordinate is window-relative
 * physical pixels; rects are [left, top, right, bottom] with right/bottom exclusive.
 */

const Coordinate = z.number().int().min(0).max(65535);

const ProfileRectSchema = z
  .tuple([Coordinate, Coordinate, Coordinate, Coordinate])
  .superRefine(([l, t, r, b], ctx) => {
    if (r <= l) ctx.addIssue({ code: "custom", message: "right must be greater than left" });
    if (b <= t) ctx.addIssue({ code: "custom", message: "bottom must be greater than top" });
  })
  .describe(
    "[left, top, right, bottom] in window-relative pixels; right and bottom are exclusive; not empty",
  );

/** Same rule as the policy's region names, so a policy safe region can be a profile's reference region. */
const NameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be 1 to 64 letters, digits, '_', '.' or '-'");

export const ProfileSafeRegionSchema = z
  .strictObject({
    name: NameSchema.describe("Name used by resolve_coordinate_profile_point; unique within the profile"),
    rect: ProfileRectSchema,
    description: z.string().max(1024).optional().describe("Free text for people; never logged"),
  })
  .describe("A region the agent may point at; resolves to its centre pixel");

export const ColorSchema = z
  .string()
  .regex(/^#[0-9a-f]{6}$/, "must be a colour as #rrggbb (lowercase hex)")
  .describe("The pixel's colour as #rrggbb, sampled from the masked reference region when recorded");

export const VerificationPointSchema = z
  .strictObject({
    name: NameSchema.describe("Name used by resolve_coordinate_profile_point; unique within the profile"),
    x: Coordinate.describe("Window-relative x, inside the reference region"),
    y: Coordinate.describe("Window-relative y, inside the reference region"),
    color: ColorSchema,
  })
  .describe("A named pixel inside the reference region, with the colour it had when recorded");

/** Executable paths as the policy writes them: absolute, POSIX or Windows style. */
const ExecutablePathSchema = AbsoluteExecutablePathSchema.describe(
  "Full path of the application's executable; check_coordinate_profile requires the live one to match",
);

export const CoordinateProfileSchema = z
  .strictObject({
    schema_version: z.literal(1).describe("Always 1"),
    profile_id: z
      .string()
      .regex(/^[\x21-\x7e]{1,128}$/, "must be 1 to 128 printable ASCII characters without spaces")
      .describe("Identifier of the profile, chosen by whoever recorded it"),
    application: z
      .strictObject({ executable_path: ExecutablePathSchema })
      .describe("The application the profile was recorded against"),
    app_version: z
      .string()
      .min(1)
      .max(128)
      .optional()
      .describe("Version of the application the profile was recorded against (informational)"),
    window_size: z
      .tuple([z.number().int().min(1).max(65535), z.number().int().min(1).max(65535)])
      .describe(
        "[width, height] of the window when recorded; a window of another size is a size_mismatch, not a hash check",
      ),
    reference_region: z
      .strictObject({
        name: NameSchema.describe("Name of the region (a policy safe region or one of this profile's)"),
        rect: ProfileRectSchema,
      })
      .describe("The region whose pixels are hashed to recognise the window"),
    reference_hash: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex digits")
      .describe(
        "SHA-256 (lowercase hex) of the reference region's pixels as raw 8-bit RGB bytes (3 per pixel, row-major, top row first, no alpha, no header), after the policy's screenshot masks were painted black. Raw RGB, not PNG bytes: a PNG of the same pixels differs between encoders, versions and compression levels, so its hash would not recognise the same window",
      ),
    safe_regions: z.array(ProfileSafeRegionSchema).max(256).describe("Named regions inside the window"),
    verification_points: z.array(VerificationPointSchema).max(256).describe("Named points inside the window"),
  })
  .superRefine((p, ctx) => {
    const [w, h] = p.window_size;
    const inside = (r: readonly number[]) => r[2] <= w && r[3] <= h;
    if (!inside(p.reference_region.rect)) {
      ctx.addIssue({
        code: "custom",
        message: "lies outside window_size",
        path: ["reference_region", "rect"],
      });
    }
    const names = new Map<string, string>();
    p.safe_regions.forEach((r, i) => {
      if (!inside(r.rect)) {
        ctx.addIssue({
          code: "custom",
          message: "lies outside window_size",
          path: ["safe_regions", i, "rect"],
        });
      }
      if (names.has(r.name)) {
        ctx.addIssue({ code: "custom", message: "duplicate name", path: ["safe_regions", i, "name"] });
      }
      names.set(r.name, "region");
      if (r.name === p.reference_region.name && r.rect.some((v, k) => v !== p.reference_region.rect[k])) {
        ctx.addIssue({
          code: "custom",
          message: "has the reference region's name but another rect",
          path: ["safe_regions", i, "rect"],
        });
      }
    });
    const ref = p.reference_region.rect;
    p.verification_points.forEach((pt, i) => {
      if (pt.x >= w || pt.y >= h) {
        ctx.addIssue({
          code: "custom",
          message: "lies outside window_size",
          path: ["verification_points", i],
        });
      } else if (pt.x < ref[0] || pt.x >= ref[2] || pt.y < ref[1] || pt.y >= ref[3]) {
        // Its colour is only known from the reference capture, so it must lie inside it.
        ctx.addIssue({
          code: "custom",
          message: "lies outside the reference region",
          path: ["verification_points", i],
        });
      }
      if (names.has(pt.name)) {
        ctx.addIssue({ code: "custom", message: "duplicate name", path: ["verification_points", i, "name"] });
      }
      names.set(pt.name, "point");
    });
  })
  .describe("uiinspect-mcp coordinate profile");

export type CoordinateProfile = z.infer<typeof CoordinateProfileSchema>;

/**
 * JSON Schema of a profile file, generated from the zod schema so they cannot drift
 * (test/capture/profile.test.ts compares it with schema/coordinate_profile.schema.json).
 * Cross-field rules (inside window_size, unique names, right > left) are refinements that
 * JSON Schema cannot state; validate-profile checks them.
 */
export function profileJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(CoordinateProfileSchema, { target: "draft-2020-12", io: "input" });
  return { ...generated, title: "uiinspect-mcp coordinate profile" };
}
