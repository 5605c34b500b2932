import { z } from "zod";
import { quoteClientValue } from "../../shared/echo.js";
import { isWindowsStylePath } from "../../shared/identity.js";

interface CapabilityRow {
  /** Plain words for the consent dialog and for people reading a policy summary. */
  description: string;
  /** Its tools reach into another program (the effect is whatever it does with the input):
   * openWorldHint. Reading a window stays inside what the server shows. */
  openWorld: boolean;
  /** Its tools inject pointer or keyboard input, so in the passive focus mode the window must
   * already be in front (checked before a confirmation token is issued, and again at the effect). */
  injectsInput: boolean;
  /** Always protected (needs a confirmation token); a policy can add to this set, never remove. */
  protectedByDefault: boolean;
}

/** The capabilities of docs/spec.md §4, one row each, in the order they are shown to people. */
export const CAPABILITY_TABLE = {
  observe: {
    description: "see the window: take screenshots, read its position and state, restore it when minimized",
    openWorld: false,
    injectsInput: false,
    protectedByDefault: false,
  },
  inspect: {
    description: "read the window's accessibility tree (element names, roles and positions, never values)",
    openWorld: false,
    injectsInput: false,
    protectedByDefault: false,
  },
  hover: {
    description: "move the mouse pointer over the window",
    openWorld: true,
    injectsInput: true,
    protectedByDefault: false,
  },
  click: {
    description: "click, double-click, right-click and scroll inside the window",
    openWorld: true,
    injectsInput: true,
    protectedByDefault: false,
  },
  interact: {
    description: "use controls directly: press buttons, set values, select, expand, collapse and toggle",
    openWorld: true,
    injectsInput: false,
    protectedByDefault: false,
  },
  key: {
    description: "press single keys from a fixed list (letters, digits, arrows, Enter, Tab, F1-F12, ...)",
    openWorld: true,
    injectsInput: true,
    protectedByDefault: false,
  },
  text: {
    description: "type free text into the window",
    openWorld: true,
    injectsInput: true,
    protectedByDefault: true,
  },
  close: {
    description: "ask the window to close",
    openWorld: true,
    injectsInput: false,
    protectedByDefault: true,
  },
  drag: {
    description: "drag with the mouse button held down inside the window",
    openWorld: true,
    injectsInput: true,
    protectedByDefault: true,
  },
} as const satisfies Record<string, CapabilityRow>;

export type Capability = keyof typeof CAPABILITY_TABLE;

export const CAPABILITIES = Object.keys(CAPABILITY_TABLE) as [Capability, ...Capability[]];

/** Always protected (need a confirmation token); a policy can add to this set, never remove. */
export const BUILTIN_PROTECTED: readonly Capability[] = CAPABILITIES.filter(
  (c) => CAPABILITY_TABLE[c].protectedByDefault,
);

/** Plain words for the consent dialog and for people reading a policy summary. */
export const CAPABILITY_DESCRIPTIONS: Readonly<Record<Capability, string>> = Object.fromEntries(
  CAPABILITIES.map((c) => [c, CAPABILITY_TABLE[c].description]),
) as Record<Capability, string>;

export function isCapability(s: string): s is Capability {
  return (CAPABILITIES as readonly string[]).includes(s);
}

export const CapabilitySchema = z.enum(CAPABILITIES, {
  error: (iss) =>
    typeof iss.input === "string"
      ? `unknown action ${quoteClientValue(iss.input)} (known: ${CAPABILITIES.join(", ")})`
      : `expected an action name (one of: ${CAPABILITIES.join(", ")})`,
});

/** Window-relative pixel coordinate: non-negative, since nothing to the left of or above a window is in it. */
const Coordinate = z.number().int().min(0);

/** [left, top, right, bottom], right/bottom exclusive, window-relative; must not be empty. */
export const PolicyRectSchema = z
  .tuple([Coordinate, Coordinate, Coordinate, Coordinate])
  .superRefine(([l, t, r, b], ctx) => {
    if (r <= l) ctx.addIssue({ code: "custom", message: "right must be greater than left" });
    if (b <= t) ctx.addIssue({ code: "custom", message: "bottom must be greater than top" });
  })
  .describe("[left, top, right, bottom] in window-relative pixels; right and bottom are exclusive");

/** Keeps identifiers that end up in audit events and dialogs to printable ASCII. */
const PolicyIdSchema = z
  .string()
  .regex(/^[!-~]{1,128}$/, "must be 1 to 128 printable ASCII characters without spaces")
  .describe("Operator's identifier of this policy; recorded in audit events");

/** A full executable path, POSIX or Windows style (also a coordinate profile's application). */
export const AbsoluteExecutablePathSchema = z
  .string()
  .min(1)
  .max(32767)
  .refine((p) => isWindowsStylePath(p) || p.startsWith("/"), "must be a full (absolute) path");

const ExecutablePathSchema = AbsoluteExecutablePathSchema.describe(
  "Full path of the one executable this policy applies to; Windows paths compare case-insensitively",
);

const TitlePatternSchema = z
  .string()
  .min(1)
  .max(512)
  .describe("Case-insensitive glob over the window title: * matches any run, ? one character");

const RegionNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be 1 to 64 letters, digits, '_', '.' or '-'");

export const SafeRegionSchema = z.strictObject({
  name: RegionNameSchema,
  rect: PolicyRectSchema,
  description: z.string().max(1024).optional(),
});

export const ScreenshotMaskSchema = z.union(
  [
    z.strictObject({ rect: PolicyRectSchema }),
    z.strictObject({
      region_name: RegionNameSchema.describe("Name of a safe region whose rectangle is masked"),
    }),
  ],
  { error: 'must be either {"rect": [left, top, right, bottom]} or {"region_name": "<safe region name>"}' },
);

const PositiveInt = z.number().int().positive();

export const LimitsSchema = z.strictObject({
  max_png_bytes: PositiveInt.optional(),
  max_actions_per_minute: PositiveInt.optional(),
  max_text_chars_per_minute: PositiveInt.optional(),
  max_screenshot_pixels_per_minute: PositiveInt.optional(),
});

/** The policy FILE (docs/spec.md §4). Unknown fields are rejected everywhere. */
export const PolicyFileSchema = z
  .strictObject({
    schema_version: z.literal(1),
    policy_id: PolicyIdSchema,
    expires_at: z.iso
      .datetime({ offset: true })
      .describe("RFC 3339 date-time with seconds and a zone (Z or +hh:mm); from then on the policy denies")
      .optional(),
    application: z.strictObject({
      executable_path: ExecutablePathSchema,
      title_patterns: z.array(TitlePatternSchema).min(1).max(64),
    }),
    allowed_actions: z.array(CapabilitySchema).max(64),
    protected_actions: z
      .array(CapabilitySchema)
      .max(64)
      .describe("Added to the built-in protected set (text, close, drag); never removes from it")
      .optional(),
    safe_regions: z.array(SafeRegionSchema).max(256).optional(),
    screenshot_masks: z.array(ScreenshotMaskSchema).max(256).optional(),
    limits: LimitsSchema.optional(),
    profiles_dir: z
      .string()
      .min(1)
      .max(4096)
      .refine((p) => isWindowsStylePath(p) || p.startsWith("/"), "must be a full (absolute) path")
      .describe(
        "Folder the coordinate-profile tools may read profiles from (symlinks resolved; a path leading outside it is refused). Without it (and without DESKTOP_AUTOMATION_PROFILES_DIR) the profile tools answer action_not_allowed",
      )
      .optional(),
  })
  .superRefine((p, ctx) => {
    const names = new Map<string, number>();
    (p.safe_regions ?? []).forEach((r, i) => {
      const first = names.get(r.name);
      if (first === undefined) names.set(r.name, i);
      else
        ctx.addIssue({
          code: "custom",
          path: ["safe_regions", i, "name"],
          message: `duplicate region name (already used by safe_regions[${first}])`,
        });
    });
    (p.screenshot_masks ?? []).forEach((m, i) => {
      if ("region_name" in m && !names.has(m.region_name))
        ctx.addIssue({
          code: "custom",
          path: ["screenshot_masks", i, "region_name"],
          message: "names no safe region of this policy",
        });
    });
  })
  .describe("uiinspect-mcp operator policy (DESKTOP_AUTOMATION_POLICY_FILE)");

export type PolicyFile = z.infer<typeof PolicyFileSchema>;
