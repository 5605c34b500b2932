import { libc } from "./libc.js";

/** SCHED_BATCH of <sched.h>. */
const SCHED_BATCH = 3;

/**
 * Puts the calling thread in Linux's batch scheduling class; the observation workers (capture,
 * uia) call it as they start. Under a full CPU the supervisor thread is what every identity
 * shares (policy, consent, budgets, every reply), and a tree walk or a PNG is the bulk of the
 * work. A worker woken by the supervisor's request used to preempt the supervisor in the middle
 * of its postMessage (5% of a loaded remote server's main-thread profile). A batch thread keeps
 * its full share of the CPU but no longer preempts the thread that woke it. A lower nice value
 * was tried instead and lost a third to three quarters of the calls/s to the machine's other
 * programs (docs/benchmarks.md). The input worker stays as it is: a press and its release should
 * wait behind nothing.
 *
 * On Linux the class belongs to the thread (pid 0 is the caller), so a worker thread changes
 * only itself, and a worker process its main thread and the threads it starts later. Returns
 * false where the call is not possible (not Linux, another C library, a sandbox): the thread
 * then runs as before.
 */
export function scheduleAsBatch(): boolean {
  if (process.platform !== "linux") return false;
  try {
    return libc().schedSetScheduler(0, SCHED_BATCH, 0) === 0;
  } catch {
    return false;
  }
}
