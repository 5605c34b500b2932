import { type BoundedRead, decodeUtf8, readBoundedFile } from "../../shared/boundedFile.js";
import { uiError } from "../../shared/errors.js";
import type { Rect } from "../../shared/geometry.js";
import { normalizeExecutablePath } from "../../shared/identity.js";
import { formatPath, MAX_REPORTED_PROBLEMS, parseStrictJson } from "../../shared/strictJson.js";
import { type CoordinateProfile, CoordinateProfileSchema } from "./schema.js";

/**
 * Coordinate profiles: reading and validating files, resolving named points (no platform
 * calls), comparing a live window with a profile, and building a profile from a
 * recording. Pixels never come here: the capture worker hands back only the hash.
 */

export const MAX_PROFILE_FILE_BYTES = 1024 * 1024;

export type ProfileReadResult = { ok: true; profile: CoordinateProfile } | { ok: false; reasons: string[] };

export const READ_PROBLEMS: Record<Exclude<BoundedRead, { ok: true }>["problem"], string> = {
  cannot_open: "the file cannot be opened",
  not_a_file: "not a regular file",
  too_big: `(root): the file is larger than ${MAX_PROFILE_FILE_BYTES} bytes (1 MiB)`,
  cannot_read: "the file cannot be read",
  refused: "the file was refused",
};

/**
 * Reasons name fields and positions only: nothing read from the file (and no parser message
 * that quotes it) is repeated beyond a cut, quoted key.
 */
export function readProfileFile(path: string): ProfileReadResult {
  const read = readBoundedFile(path, MAX_PROFILE_FILE_BYTES);
  if (!read.ok) return { ok: false, reasons: [READ_PROBLEMS[read.problem]] };
  return parseProfileBytes(read.bytes);
}

export function parseProfileBytes(bytes: Uint8Array): ProfileReadResult {
  if (bytes.length > MAX_PROFILE_FILE_BYTES) return { ok: false, reasons: [READ_PROBLEMS.too_big] };
  const text = decodeUtf8(bytes);
  if (text === null) return { ok: false, reasons: ["(root): the file is not valid UTF-8"] };
  return parseProfileText(text);
}

/**
 * A profile file is JSON (no YAML): linear-time parsing with a nesting cap and duplicate keys
 * refused (src/shared/strictJson.ts), then the zod schema.
 */
export function parseProfileText(text: string): ProfileReadResult {
  const json = parseStrictJson(text);
  if (!json.ok) return json;
  const parsed = CoordinateProfileSchema.safeParse(json.value);
  if (parsed.success) return { ok: true, profile: parsed.data };
  const reasons = parsed.error.issues.map((issue) => {
    if (issue.code === "unrecognized_keys") return `${formatPath(issue.path)}: unknown field(s)`;
    return `${formatPath(issue.path)}: ${issue.message}`;
  });
  return { ok: false, reasons: [...new Set(reasons)].slice(0, MAX_REPORTED_PROBLEMS) };
}

/** For MCP tools: the profile or invalid_argument naming the first problems (fields only). */
export function profileOrThrow(read: ProfileReadResult): CoordinateProfile {
  if (read.ok) return read.profile;
  throw uiError(
    "invalid_argument",
    `The coordinate profile is invalid: ${read.reasons.slice(0, 5).join("; ")}.`,
  );
}

/** `uiinspect-mcp validate-profile FILE`: exit 0 when ok, 1 otherwise. */
export function validateProfileFile(path: string): { ok: boolean; lines: string[] } {
  const read = readProfileFile(path);
  if (!read.ok)
    return { ok: false, lines: ["invalid coordinate profile:", ...read.reasons.map((r) => `  ${r}`)] };
  const p = read.profile;
  return {
    ok: true,
    lines: [
      "valid coordinate profile",
      `  profile_id: ${p.profile_id}`,
      `  app_version: ${p.app_version ?? "(none)"}`,
      `  application: ${p.application.executable_path}`,
      `  window_size: ${p.window_size[0]}x${p.window_size[1]}`,
      `  reference region: ${p.reference_region.name} [${p.reference_region.rect.join(", ")}]`,
      `  safe regions: ${p.safe_regions.length}, verification points: ${p.verification_points.length}`,
    ],
  };
}

export interface ResolvedPoint {
  /** Window-relative. */
  x: number;
  y: number;
  kind: "safe_region" | "verification_point";
  /** The window size the point is valid for. */
  window_size: [number, number];
}

/** Centre pixel of a rect (right/bottom exclusive), rounded towards the top-left. */
export function rectCentre(r: Rect | readonly number[]): { x: number; y: number } {
  return { x: Math.floor((r[0] + r[2] - 1) / 2), y: Math.floor((r[1] + r[3] - 1) / 2) };
}

/** Names a profile can resolve, safe regions first, in file order. */
export function profileNames(profile: CoordinateProfile): string[] {
  return [...profile.safe_regions.map((r) => r.name), ...profile.verification_points.map((p) => p.name)];
}

/**
 * The window-relative point for a name: the centre of that safe region, or that
 * verification point. No platform calls. Unknown names list the profile's names (they are
 * the recorder's, not the target's).
 */
export function resolvePoint(profile: CoordinateProfile, regionName: string): ResolvedPoint {
  const window_size: [number, number] = [profile.window_size[0], profile.window_size[1]];
  const region = profile.safe_regions.find((r) => r.name === regionName);
  if (region) return { ...rectCentre(region.rect), kind: "safe_region", window_size };
  const point = profile.verification_points.find((p) => p.name === regionName);
  if (point) return { x: point.x, y: point.y, kind: "verification_point", window_size };
  const known = profileNames(profile);
  throw uiError(
    "invalid_argument",
    known.length > 0
      ? `Unknown region_name; the profile defines: ${known.slice(0, 20).join(", ")}${known.length > 20 ? ", …" : ""}.`
      : "Unknown region_name; the profile defines no regions or points.",
  );
}

export type ProfileCheckReason =
  | "ok"
  | "application_mismatch"
  | "size_mismatch"
  | "hash_mismatch"
  | "color_mismatch";

export interface ProfileCheck {
  matches: boolean;
  reason: ProfileCheckReason;
  expected_size: [number, number];
  actual_size: [number, number];
}

function windowSize(window: { rect: Rect }): [number, number] {
  return [Math.max(0, window.rect[2] - window.rect[0]), Math.max(0, window.rect[3] - window.rect[1])];
}

/** What the capture of the reference region gave back: its hash and the points' colours. */
export interface ReferenceCapture {
  hash: string;
  colors: readonly string[];
}

/**
 * Application first: a window of another executable is `application_mismatch` (nothing is
 * captured). Then size: a window of another size is `size_mismatch` and its pixels are not
 * compared (pass capture = null: the reference region may not even fit). Same size:
 * `hash_mismatch`, then `color_mismatch` (a verification point's colour differs), or `ok`.
 */
export function checkProfile(
  profile: CoordinateProfile,
  window: { rect: Rect; exe_path: string },
  capture: ReferenceCapture | null,
): ProfileCheck {
  const expected_size: [number, number] = [profile.window_size[0], profile.window_size[1]];
  const actual_size = windowSize(window);
  const base = { expected_size, actual_size };
  if (
    window.exe_path === "" ||
    normalizeExecutablePath(window.exe_path) !== normalizeExecutablePath(profile.application.executable_path)
  ) {
    return { matches: false, reason: "application_mismatch", ...base };
  }
  if (actual_size[0] !== expected_size[0] || actual_size[1] !== expected_size[1]) {
    return { matches: false, reason: "size_mismatch", ...base };
  }
  if (capture === null || capture.hash.toLowerCase() !== profile.reference_hash) {
    return { matches: false, reason: "hash_mismatch", ...base };
  }
  if (profile.verification_points.some((p, i) => capture.colors[i] !== p.color)) {
    return { matches: false, reason: "color_mismatch", ...base };
  }
  return { matches: true, reason: "ok", ...base };
}

export interface RecordProfileArgs {
  profile_id: string;
  reference_region_name: string;
  safe_regions: { name: string; rect: Rect; description?: string | undefined }[];
  verification_points: { name: string; x: number; y: number }[];
  app_version?: string | undefined;
}

/**
 * The rect of the reference region. In file mode it is the policy's safe region of that name,
 * exactly (a recorded safe region of the same name must have the same rect); in env mode, one
 * of the safe regions being recorded. Every verification point must lie inside it, since its
 * colour is sampled from that capture. Call it before capturing; recordProfile calls it again.
 */
export function resolveReferenceRegion(
  args: Pick<RecordProfileArgs, "reference_region_name" | "safe_regions" | "verification_points">,
  policyRegions: readonly { name: string; rect: Rect }[] = [],
): { name: string; rect: Rect } {
  const name = args.reference_region_name;
  const fromPolicy = policyRegions.find((r) => r.name === name);
  const recorded = args.safe_regions.find((r) => r.name === name);
  if (fromPolicy && recorded?.rect.some((v, i) => v !== fromPolicy.rect[i]))
    throw uiError(
      "invalid_argument",
      "safe_regions: the region named like the reference region has another rect than the policy's.",
    );
  const found = fromPolicy ?? recorded;
  if (!found) {
    const known = [
      ...new Set([...args.safe_regions.map((r) => r.name), ...policyRegions.map((r) => r.name)]),
    ];
    throw uiError(
      "invalid_argument",
      known.length > 0
        ? `Unknown reference_region_name; known regions: ${known.join(", ")}.`
        : "Unknown reference_region_name; no safe regions were given.",
    );
  }
  const rect: Rect = [found.rect[0], found.rect[1], found.rect[2], found.rect[3]];
  const outsideAt = args.verification_points.findIndex(
    (p) => p.x < rect[0] || p.x >= rect[2] || p.y < rect[1] || p.y >= rect[3],
  );
  if (outsideAt !== -1)
    throw uiError(
      "invalid_argument",
      `verification_points[${outsideAt}]: lies outside the reference region.`,
    );
  return { name, rect };
}

/**
 * A profile for the live window from the capture of its masked reference region. Writes no
 * file. The result passes the schema (else invalid_argument naming the fields), and
 * checkProfile(result, window, capture) is `ok`.
 */
export function recordProfile(
  args: RecordProfileArgs,
  window: { rect: Rect; exe_path: string },
  capture: ReferenceCapture,
  policyRegions: readonly { name: string; rect: Rect }[] = [],
): CoordinateProfile {
  const candidate = {
    schema_version: 1,
    profile_id: args.profile_id,
    application: { executable_path: window.exe_path },
    ...(args.app_version !== undefined ? { app_version: args.app_version } : {}),
    window_size: windowSize(window),
    reference_region: resolveReferenceRegion(args, policyRegions),
    reference_hash: capture.hash.toLowerCase(),
    safe_regions: args.safe_regions.map((r) => ({
      name: r.name,
      rect: r.rect,
      ...(r.description !== undefined ? { description: r.description } : {}),
    })),
    verification_points: args.verification_points.map((p, i) => ({
      name: p.name,
      x: p.x,
      y: p.y,
      color: capture.colors[i],
    })),
  };
  const parsed = CoordinateProfileSchema.safeParse(candidate);
  if (parsed.success) return parsed.data;
  const reasons = [...new Set(parsed.error.issues.map((i) => `${formatPath(i.path)}: ${i.message}`))];
  throw uiError("invalid_argument", `The profile would be invalid: ${reasons.slice(0, 5).join("; ")}.`);
}
