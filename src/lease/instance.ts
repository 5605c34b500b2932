import { resolveProcessInstance } from "../os/linux/proc.js";
import type { ProcessInstance } from "../shared/identity.js";

/**
 * Re-resolving a process instance from the OS, as the broker does on every validation, with
 * the very resolver the backend uses (Linux: os/linux/proc.ts; Windows:
 * os/win32/identity.ts through native/windows.ts), so a lease never trusts a weaker
 * identity than the one the server approved: on Linux the executable is the file the process
 * runs by (st_dev, st_ino), whatever mount namespace it lives in. The session is not read from
 * the process: it is the broker's own scope (a lease never reaches beyond it).
 */

export type InstanceResolver = (pid: number) => Promise<ProcessInstance | null>;

export { linuxStartTime, parseStatStartTicks } from "../os/linux/proc.js";

export interface LinuxResolverOptions {
  /** sysconf(_SC_CLK_TCK); 100 on every mainstream Linux build. */
  clockTicks: number;
  /** The scope's instance session string. */
  session: string;
}

export function linuxInstanceResolver(opts: LinuxResolverOptions): InstanceResolver {
  return async (pid: number) => resolveProcessInstance(pid, opts.session, opts.clockTicks);
}
