import { setPriority } from "node:os";

/**
 * How much lower than the supervisor thread the observation workers (capture, uia) run on
 * Linux. Under a full CPU the supervisor thread is what every identity shares (policy, consent,
 * budgets, every reply), while a tree walk or a PNG is the bulk of the work. At nice 5 the
 * kernel gives such a worker about a third of the supervisor's share when both want a core, and
 * the whole core when the supervisor is idle. The input worker keeps its priority: a press and
 * its release should not wait behind a screenshot.
 */
export const OBSERVATION_WORKER_NICE = 5;

/**
 * Lowers the calling thread's CPU priority. On Linux a nice value belongs to a thread
 * (setpriority with who 0), so this lowers this worker thread alone, or a worker process's main
 * thread and the threads it starts later. On other systems the same call lowers the whole
 * process, supervisor included, so it is not made there.
 */
export function yieldCpuToSupervisor(
  platform: NodeJS.Platform = process.platform,
  set: (pid: number, priority: number) => void = setPriority,
): boolean {
  if (platform !== "linux") return false;
  try {
    set(0, OBSERVATION_WORKER_NICE);
    return true;
  } catch {
    // A sandbox that forbids it leaves the worker at the supervisor's priority: only slower.
    return false;
  }
}
