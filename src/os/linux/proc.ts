import { readFileSync, readlinkSync, realpathSync, statSync } from "node:fs";
import type { ProcessInstance } from "../../shared/identity.js";

/**
 * Process instances from /proc: executable (realpath of /proc/PID/exe, which must be the very
 * file the process runs: same st_dev and st_ino), start time (field 22 of /proc/PID/stat, clock
 * ticks since boot, + btime of /proc/stat), session = DISPLAY:uid for the backend, the lease
 * scope's for the broker. Node built-ins only, so the broker can load it without the X11 code.
 */

let bootTimeS: number | null = null;
let ticksPerS = 100;

export function setClockTicks(hz: number): void {
  if (Number.isFinite(hz) && hz > 0) ticksPerS = hz;
}

function bootTime(): number | null {
  if (bootTimeS !== null) return bootTimeS;
  try {
    const m = /^btime\s+(\d+)$/m.exec(readFileSync("/proc/stat", "latin1"));
    if (m) bootTimeS = Number(m[1]);
  } catch {
    return null;
  }
  return bootTimeS;
}

/** Fields 3… of /proc/PID/stat text (rest[0] = field 3, the state), or null when it has none. */
function statFieldsOf(stat: string): string[] | null {
  // comm (field 2) may contain spaces and parentheses: split after the last ")".
  const close = stat.lastIndexOf(")");
  return close < 0
    ? null
    : stat
        .slice(close + 2)
        .trim()
        .split(" ");
}

/** Fields 3… of /proc/PID/stat, or null when unreadable. */
function statFields(pid: number): string[] | null {
  try {
    return statFieldsOf(readFileSync(`/proc/${pid}/stat`, "latin1"));
  } catch {
    return null;
  }
}

/** Field 22 (starttime, clock ticks since boot) out of fields 3…, or null. */
function ticksField(fields: string[] | null): number | null {
  const raw = fields?.[19];
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : null;
}

/** Field 22 (starttime, clock ticks since boot) of /proc/PID/stat text, or null. */
export function parseStatStartTicks(stat: string): number | null {
  return ticksField(statFieldsOf(stat));
}

/** Start time in clock ticks since boot, or null when the process does not exist. */
export function startTicks(pid: number): number | null {
  return ticksField(statFields(pid));
}

/** RFC 3339 UTC with milliseconds: boot time + start ticks at `clockTicks` per second. */
export function linuxStartTime(bootSeconds: number, ticks: number, clockTicks: number): string {
  return new Date(bootSeconds * 1000 + Math.round((ticks * 1000) / clockTicks)).toISOString();
}

/**
 * True when the process no longer runs: no such PID (kill 0 → ESRCH), or a zombie waiting to be
 * reaped. Another user's process (EPERM, or unreadable under hidepid) counts as running.
 */
export function processExited(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ESRCH") return true;
  }
  const state = statFields(pid)?.[0];
  return state === "Z" || state === "X";
}

export function exePath(pid: number): string | null {
  try {
    return realpathSync(`/proc/${pid}/exe`);
  } catch {
    try {
      // A replaced or deleted binary: the link text, which then never equals the allowed path.
      return readlinkSync(`/proc/${pid}/exe`);
    } catch {
      return null;
    }
  }
}

/**
 * Whether the path text names, in this server's mount namespace, the very file the process
 * runs: (st_dev, st_ino) of /proc/PID/exe (the kernel's own reference to the executable) against
 * stat of the path. A binary bind-mounted over an allowed path in a private mount namespace
 * reads as that path through /proc but is another file; so is a binary replaced since.
 */
export function runsFile(pid: number, path: string): boolean {
  try {
    const running = statSync(`/proc/${pid}/exe`, { bigint: true });
    const named = statSync(path, { bigint: true });
    return running.dev === named.dev && running.ino === named.ino;
  } catch {
    return false;
  }
}

export function sessionId(display: string): string {
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  return `${display}:${uid}`;
}

/** The instance behind `pid` with this server's X11 session (DISPLAY:uid), or null. */
export function resolveInstance(pid: number, display: string): ProcessInstance | null {
  return resolveProcessInstance(pid, sessionId(display));
}

/**
 * The exact instance behind `pid`, or null when it has none that can be trusted: the one
 * resolver of Linux process identity, used by the X11 backend and by the lease broker (which
 * passes its own scope as the session and the clock-tick rate it read from sysconf).
 */
export function resolveProcessInstance(
  pid: number,
  session: string,
  clockTicks: number = ticksPerS,
): ProcessInstance | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  const boot = bootTime();
  const ticks = startTicks(pid);
  const exe = exePath(pid);
  if (boot === null || ticks === null || exe === null) return null;
  // The path must be the file itself, whatever mount namespace the process lives in (another
  // namespace's path text proves nothing here): otherwise the process has no usable identity.
  if (!runsFile(pid, exe)) return null;
  // Re-read the start time after the path: a PID reused in between gives a different start.
  if (startTicks(pid) !== ticks) return null;
  return { pid, start_time: linuxStartTime(boot, ticks, clockTicks), exe_path: exe, session };
}
