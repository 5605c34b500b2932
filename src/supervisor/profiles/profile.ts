import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { uiError } from "../../shared/errors.js";
import type { Rect } from "../../shared/geometry.js";
import { formatPath } from "../policy/parse.js";
import { type CoordinateProfile, CoordinateProfileSchema } from "./schema.js";

/**
 * Coordinate profiles: reading and validating files, resolving named points (no platform
 * calls), comparing a live window with a profile, and building a profile from a
 * recording. Pixels never come here: the capture worker hands back only the hash.
 */

export const MAX_PROFILE_FILE_BYTES = 1024 * 1024;

export type ProfileReadResult = { ok: true; profile: CoordinateProfile } | { ok: false; reasons: string[] };

/**
 * Reasons name fields and positions only. The path comes from an agent and may name any
 * file, so nothing read from the file (and no parser message that quotes it) is repeated.
 */
export function readProfileFile(path: string): ProfileReadResult {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO must not hang the server; it is refused below as not a regular file.
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch {
    return { ok: false, reasons: ["the file cannot be opened"] };
  }
  let bytes: Buffer;
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { ok: false, reasons: ["not a regular file"] };
    if (st.size > MAX_PROFILE_FILE_BYTES) return { ok: false, reasons: [tooBig()] };
    const buf = Buffer.alloc(MAX_PROFILE_FILE_BYTES + 1);
    let n = 0;
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0 || n + got === buf.length) {
        n += got;
        break;
      }
      n += got;
    }
    bytes = buf.subarray(0, n);
  } catch {
    return { ok: false, reasons: ["the file cannot be read"] };
  } finally {
    closeSync(fd);
  }
  return parseProfileBytes(bytes);
}

function tooBig(): string {
  return `(root): the file is larger than ${MAX_PROFILE_FILE_BYTES} bytes (1 MiB)`;
}

export function parseProfileBytes(bytes: Uint8Array): ProfileReadResult {
  if (bytes.length > MAX_PROFILE_FILE_BYTES) return { ok: false, reasons: [tooBig()] };
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return { ok: false, reasons: ["(root): the file is not valid UTF-8"] };
  }
  return parseProfileText(text);
}

/** A profile file is JSON (no YAML): duplicate keys are refused, then the zod schema. */
export function parseProfileText(text: string): ProfileReadResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    if (e instanceof RangeError) return { ok: false, reasons: ["(root): the document is nested too deeply"] };
    // The engine's message quotes the input; only its position is passed on.
    const m = e instanceof SyntaxError ? /position (\d+)/.exec(e.message) : null;
    return { ok: false, reasons: [`(root): not valid JSON${m ? ` (offset ${m[1]})` : ""}`] };
  }
  const dups = duplicateKeys(text);
  if (dups.length > 0) return { ok: false, reasons: dups };
  const parsed = CoordinateProfileSchema.safeParse(value);
  if (parsed.success) return { ok: true, profile: parsed.data };
  const reasons = parsed.error.issues.map((issue) => {
    if (issue.code === "unrecognized_keys") return `${formatPath(issue.path)}: unknown field(s)`;
    return `${formatPath(issue.path)}: ${issue.message}`;
  });
  return { ok: false, reasons: [...new Set(reasons)] };
}

/** JSON.parse keeps the last of duplicate keys silently; this scan over valid JSON finds them. */
function duplicateKeys(text: string): string[] {
  type Frame = { keys: Set<string> | null; expectKey: boolean; path: (string | number)[]; index: number };
  const reasons: string[] = [];
  const stack: Frame[] = [];
  let lastKey: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = stack[stack.length - 1];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) reasons.push(`${formatPath([...top.path, key])}: duplicate key`);
        top.keys.add(key);
        top.expectKey = false;
        lastKey = key;
      }
      i = j;
    } else if (c === "{" || c === "[") {
      const at = top ? [...top.path, top.keys ? (lastKey ?? "") : top.index] : [];
      stack.push({ keys: c === "{" ? new Set() : null, expectKey: c === "{", path: at, index: 0 });
    } else if (c === "}" || c === "]") {
      stack.pop();
    } else if (c === "," && top) {
      if (top.keys) top.expectKey = true;
      else top.index++;
    }
  }
  return reasons;
}

/** For MCP tools: the profile or invalid_argument naming the first problems (fields only). */
export function loadProfile(path: string): CoordinateProfile {
  const read = readProfileFile(path);
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
      ? `Unknown region_name; the profile defines: ${known.join(", ")}.`
      : "Unknown region_name; the profile defines no regions or points.",
  );
}

export type ProfileCheckReason = "ok" | "size_mismatch" | "hash_mismatch";

export interface ProfileCheck {
  matches: boolean;
  reason: ProfileCheckReason;
  expected_size: [number, number];
  actual_size: [number, number];
}

function windowSize(window: { rect: Rect }): [number, number] {
  return [Math.max(0, window.rect[2] - window.rect[0]), Math.max(0, window.rect[3] - window.rect[1])];
}

/**
 * Size first: a window of another size is `size_mismatch` and its pixels are not compared
 * (pass captureHash = null then: the reference region may not even fit). Same size:
 * `hash_mismatch` or `ok`.
 */
export function checkProfile(
  profile: CoordinateProfile,
  window: { rect: Rect },
  captureHash: string | null,
): ProfileCheck {
  const expected_size: [number, number] = [profile.window_size[0], profile.window_size[1]];
  const actual_size = windowSize(window);
  const base = { expected_size, actual_size };
  if (actual_size[0] !== expected_size[0] || actual_size[1] !== expected_size[1]) {
    return { matches: false, reason: "size_mismatch", ...base };
  }
  if (captureHash === null || captureHash.toLowerCase() !== profile.reference_hash) {
    return { matches: false, reason: "hash_mismatch", ...base };
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
 * The rect of the reference region: one of the safe regions being recorded, else a safe
 * region of the policy (file mode). Call it before capturing; recordProfile calls it again
 * with the same inputs.
 */
export function resolveReferenceRegion(
  args: Pick<RecordProfileArgs, "reference_region_name" | "safe_regions">,
  policyRegions: readonly { name: string; rect: Rect }[] = [],
): { name: string; rect: Rect } {
  const name = args.reference_region_name;
  const found = args.safe_regions.find((r) => r.name === name) ?? policyRegions.find((r) => r.name === name);
  if (found) return { name, rect: [found.rect[0], found.rect[1], found.rect[2], found.rect[3]] };
  const known = [...new Set([...args.safe_regions.map((r) => r.name), ...policyRegions.map((r) => r.name)])];
  throw uiError(
    "invalid_argument",
    known.length > 0
      ? `Unknown reference_region_name; known regions: ${known.join(", ")}.`
      : "Unknown reference_region_name; no safe regions were given.",
  );
}

/**
 * A profile for the live window and the hash of its masked reference region. Writes no
 * file. The result passes the schema (else invalid_argument naming the fields), and
 * checkProfile(result, window, hash) is `ok`.
 */
export function recordProfile(
  args: RecordProfileArgs,
  window: { rect: Rect },
  hash: string,
  policyRegions: readonly { name: string; rect: Rect }[] = [],
): CoordinateProfile {
  const candidate = {
    schema_version: 1,
    profile_id: args.profile_id,
    ...(args.app_version !== undefined ? { app_version: args.app_version } : {}),
    window_size: windowSize(window),
    reference_region: resolveReferenceRegion(args, policyRegions),
    reference_hash: hash.toLowerCase(),
    safe_regions: args.safe_regions.map((r) => ({
      name: r.name,
      rect: r.rect,
      ...(r.description !== undefined ? { description: r.description } : {}),
    })),
    verification_points: args.verification_points.map((p) => ({ name: p.name, x: p.x, y: p.y })),
  };
  const parsed = CoordinateProfileSchema.safeParse(candidate);
  if (parsed.success) return parsed.data;
  const reasons = [...new Set(parsed.error.issues.map((i) => `${formatPath(i.path)}: ${i.message}`))];
  throw uiError("invalid_argument", `The profile would be invalid: ${reasons.slice(0, 5).join("; ")}.`);
}
