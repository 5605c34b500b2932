import { readFileSync, readlinkSync } from "node:fs";
import { normalizeExecutablePath, type ProcessInstance } from "../shared/identity.js";

/**
 * Re-resolving a process instance from the OS, as the broker does on every validation.
 * Linux: start time = boot time (`btime` of /proc/stat) + field 22 of /proc/PID/stat in
 * clock ticks, as RFC 3339 UTC with milliseconds; executable = /proc/PID/exe. The session is
 * not read from the process: it is the broker's own scope (a lease never reaches beyond it).
 */

export type InstanceResolver = (pid: number) => Promise<ProcessInstance | null>;

/** Field 22 (starttime, clock ticks since boot) of /proc/PID/stat text, or null. */
export function parseStatStartTicks(stat: string): number | null {
  const close = stat.lastIndexOf(")");
  if (close < 0) return null;
  // After "pid (comm)" come fields 3.. separated by single spaces; field 22 is index 19.
  const fields = stat
    .slice(close + 2)
    .trim()
    .split(" ");
  const raw = fields[19];
  if (raw === undefined || !/^\d+$/.test(raw)) return null;
  return Number(raw);
}

export function readBootTimeSeconds(procRoot = "/proc"): number {
  const text = readFileSync(`${procRoot}/stat`, "utf8");
  const m = /^btime (\d+)$/m.exec(text);
  if (!m) throw new Error("no btime");
  return Number(m[1]);
}

export function linuxStartTime(bootSeconds: number, startTicks: number, clockTicks: number): string {
  return new Date(bootSeconds * 1000 + Math.round((startTicks * 1000) / clockTicks)).toISOString();
}

export interface LinuxResolverOptions {
  /** sysconf(_SC_CLK_TCK); 100 on every mainstream Linux build. */
  clockTicks: number;
  /** The scope's instance session string. */
  session: string;
  procRoot?: string;
}

export function linuxInstanceResolver(opts: LinuxResolverOptions): InstanceResolver {
  const procRoot = opts.procRoot ?? "/proc";
  return async (pid: number) => {
    if (!Number.isInteger(pid) || pid <= 0) return null;
    try {
      const ticks = parseStatStartTicks(readFileSync(`${procRoot}/${pid}/stat`, "utf8"));
      if (ticks === null) return null;
      const exe = readlinkSync(`${procRoot}/${pid}/exe`);
      // A replaced or deleted binary reads "<path> (deleted)": that is not the approved executable.
      const exePath = exe.endsWith(" (deleted)") ? exe : normalizeExecutablePath(exe);
      const ticksAgain = parseStatStartTicks(readFileSync(`${procRoot}/${pid}/stat`, "utf8"));
      if (ticksAgain !== ticks) return null;
      return {
        pid,
        start_time: linuxStartTime(readBootTimeSeconds(procRoot), ticks, opts.clockTicks),
        exe_path: exePath,
        session: opts.session,
      };
    } catch {
      return null;
    }
  };
}
