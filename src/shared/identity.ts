import { createHash } from "node:crypto";
import { posix, win32 } from "node:path";
import { z } from "zod";

/**
 * One exact process instance. PID alone is never an identity: a reused PID has a
 * different start time, a replaced binary a different path.
 */
export const ProcessInstanceSchema = z.object({
  pid: z.number().int().nonnegative(),
  /** RFC 3339 UTC, millisecond precision; what the OS reports as creation time. */
  start_time: z.string(),
  /** Normalized executable path (see normalizeExecutablePath). */
  exe_path: z.string(),
  /** OS session: Windows session id, or "display:uid" on X11. */
  session: z.string(),
});
export type ProcessInstance = z.infer<typeof ProcessInstanceSchema>;

export function isWindowsStylePath(p: string): boolean {
  return /^[a-zA-Z]:[\\/]/.test(p) || p.startsWith("\\\\");
}

/**
 * Windows paths are compared normalized and case-insensitively (the file system is);
 * POSIX paths are normalized but compared exactly. The path's form decides, so the
 * simulated desktop (shaped after Win32) behaves like Windows.
 */
export function normalizeExecutablePath(p: string): string {
  let out = normalizedPaths.get(p);
  if (out === undefined) {
    out = isWindowsStylePath(p) ? win32.normalize(p.replace(/\//g, "\\")).toLowerCase() : posix.normalize(p);
    // Every listing checks every window's path against the policy: remembered, not normalized again.
    if (normalizedPaths.size >= PATHS_KEPT) normalizedPaths.clear();
    normalizedPaths.set(p, out);
  }
  return out;
}

const PATHS_KEPT = 256;
const normalizedPaths = new Map<string, string>();

export function sameExecutablePath(a: string, b: string): boolean {
  return normalizeExecutablePath(a) === normalizeExecutablePath(b);
}

export function sameInstance(a: ProcessInstance, b: ProcessInstance): boolean {
  return (
    a.pid === b.pid &&
    a.start_time === b.start_time &&
    normalizeExecutablePath(a.exe_path) === normalizeExecutablePath(b.exe_path) &&
    a.session === b.session
  );
}

/** A stable key for maps: never shown to anyone. */
export function instanceKey(i: ProcessInstance): string {
  const raw = `${i.pid}\u0000${i.start_time}\u0000${i.exe_path}\u0000${i.session}`;
  let key = instanceKeys.get(raw);
  if (key === undefined) {
    key = createHash("sha256")
      .update(`${i.pid}\u0000${i.start_time}\u0000${normalizeExecutablePath(i.exe_path)}\u0000${i.session}`)
      .digest("hex")
      .slice(0, 32);
    // Every listing asks for the key of every window's instance: remembered, not rehashed.
    if (instanceKeys.size >= INSTANCE_KEYS_KEPT) instanceKeys.clear();
    instanceKeys.set(raw, key);
  }
  return key;
}

const INSTANCE_KEYS_KEPT = 1024;
const instanceKeys = new Map<string, string>();
