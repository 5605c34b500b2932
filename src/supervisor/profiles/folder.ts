import { readlinkSync, realpathSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { readBoundedFile } from "../../shared/boundedFile.js";
import { uiError } from "../../shared/errors.js";
import type { EffectivePolicy } from "../policy/load.js";
import { MAX_PROFILE_FILE_BYTES, parseProfileBytes, profileOrThrow, READ_PROBLEMS } from "./profile.js";
import type { CoordinateProfile } from "./schema.js";

/**
 * Coordinate profiles are read only from the operator's folder (policy `profiles_dir`, or
 * DESKTOP_AUTOMATION_PROFILES_DIR): the agent names a file, it does not choose which files the
 * server reads. The path is resolved with every symlink (realpath) and must stay inside the
 * folder's own real path; on Linux the opened descriptor is checked again, so a symlink swapped
 * in between resolving and opening is refused as well.
 */

/** The folder, or action_not_allowed when the operator named none. */
export function profilesFolder(policy: EffectivePolicy | null): string {
  if (policy?.profiles_dir) return policy.profiles_dir;
  throw uiError(
    "action_not_allowed",
    "No profiles folder is configured (policy profiles_dir or DESKTOP_AUTOMATION_PROFILES_DIR).",
  );
}

function inside(folder: string, path: string): boolean {
  const rel = relative(folder, path);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
}

const outside = () => uiError("action_not_allowed", "The profile path leads outside the profiles folder.");

/** Where the descriptor really leads (Linux), or null where the OS cannot say. */
function openedPath(fd: number): string | null {
  if (process.platform !== "linux") return null;
  return readlinkSync(`/proc/self/fd/${fd}`);
}

/**
 * The profile at `requested` (relative to the folder, or absolute and inside it). A path that
 * leads outside is action_not_allowed, whether or not anything exists there; a bad file is
 * invalid_argument naming its problems.
 */
export function loadProfileInFolder(folder: string, requested: string): CoordinateProfile {
  let realFolder: string;
  try {
    realFolder = realpathSync(folder);
  } catch {
    throw uiError("action_not_allowed", "The profiles folder cannot be resolved.");
  }
  const candidate = resolve(realFolder, requested);
  let real: string;
  try {
    real = realpathSync(candidate);
  } catch {
    if (!inside(realFolder, candidate)) throw outside();
    throw uiError("invalid_argument", `The coordinate profile is invalid: ${READ_PROBLEMS.cannot_open}.`);
  }
  if (!inside(realFolder, real)) throw outside();
  const read = readBoundedFile(real, MAX_PROFILE_FILE_BYTES, (fd) => {
    try {
      const opened = openedPath(fd);
      return opened === null || inside(realFolder, opened);
    } catch {
      return false;
    }
  });
  if (!read.ok) {
    if (read.problem === "refused") throw outside();
    return profileOrThrow({ ok: false, reasons: [READ_PROBLEMS[read.problem]] });
  }
  return profileOrThrow(parseProfileBytes(read.bytes));
}
