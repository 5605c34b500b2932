import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import { libc } from "./libc.js";

/** SCHED_BATCH of <sched.h>. */
const SCHED_BATCH = 3;

/** The nice value an observation worker thread takes (at least; an operator's higher one stands). */
export const OBSERVATION_NICE = 5;

/**
 * Puts the calling thread in Linux's batch scheduling class; the observation workers (capture,
 * uia) call it as they start. Under a full CPU the supervisor thread is what every identity
 * shares (policy, consent, budgets, every reply), and a tree walk or a PNG is the bulk of the
 * work. A worker woken by the supervisor's request used to preempt the supervisor in the middle
 * of its postMessage (5% of a loaded remote server's main-thread profile). A batch thread keeps
 * its full share of the CPU but no longer preempts the thread that woke it. A nice value alone
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

/**
 * Lowers the calling thread's priority to nice OBSERVATION_NICE (never raises it: an operator's
 * higher nice stands); the observation workers call it beside scheduleAsBatch. The batch class
 * stops a worker's wake-ups from preempting the supervisor thread but leaves it the same share of
 * the CPU, and under load the supervisor thread was runnable nine tenths of the time and
 * running one tenth (/proc schedstat, docs/benchmarks.md): its event loop waits on its share.
 * At nice 5 a worker weighs about a third of a nice-0 thread, so the supervisor thread gets the
 * larger part of what the process's threads share. Linux groups a session's processes for the
 * CPU (autogroup, or the service's cgroup), so the workers' lost weight goes to the supervisor
 * and the server's own session, not to other programs'. Only the observation workers: their
 * answers are checked again after the effect (a slower capture or walk cannot pass a check it
 * would fail), and the input worker, whose checks and effect must follow each other closely,
 * keeps its priority, as do the consent dialog and the supervisor thread.
 *
 * Linux keeps a nice value per thread: `os.setPriority` with the thread's own id (from
 * /proc/thread-self, "pid/task/tid") changes only that thread and the threads it starts later.
 * Returns false where that is not possible (not Linux, no /proc).
 */
export function lowerObservationPriority(): boolean {
  if (process.platform !== "linux") return false;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").at(-1));
    if (!Number.isInteger(tid) || tid <= 0) return false;
    if (getPriority(tid) < OBSERVATION_NICE) setPriority(tid, OBSERVATION_NICE);
    return true;
  } catch {
    return false;
  }
}
