import { getPriority } from "node:os";
import { libc } from "./libc.js";

/** SCHED_OTHER and SCHED_BATCH of <sched.h>. */
const SCHED_OTHER = 0;
const SCHED_BATCH = 3;
/** SCHED_FLAG_RESET_ON_FORK of <linux/sched.h>: what the thread starts does not inherit it. */
const SCHED_FLAG_RESET_ON_FORK = 0x01;
/** SCHED_ATTR_SIZE_VER1: `struct sched_attr` up to its utilization clamps. */
const SCHED_ATTR_SIZE = 56;

/**
 * The time slice the supervisor thread asks of the kernel's fair scheduler: its shortest, 0.1
 * ms (the default is 0.7 ms × (1 + log2 of the CPUs), 1.4 ms on 2 cores). See
 * favourSupervisorThread.
 */
export const SUPERVISOR_SLICE_NS = 100_000;

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

/**
 * Asks the kernel for a short time slice for thread `tid` (the supervisor thread: the capture
 * worker thread calls it as it starts, since the supervisor thread loads no native code). On a
 * full CPU most of the supervisor's delay was waiting for a core, not work: 1.3 s of CPU
 * against 12.7 s runnable and waiting in 15 s of a loaded remote server (/proc schedstat,
 * docs/benchmarks.md). Linux's fair scheduler (EEVDF, 6.12 and later) runs first the runnable
 * thread whose slice ends soonest, so a thread that asks a short slice is picked sooner each
 * time it wakes, and its wake-up preempts a thread with a longer one; its share of the CPU
 * (its weight, its nice value) does not change, so it takes no time from the workers or from
 * other programs, it only stops waiting behind their full slices. Older kernels accept the
 * call and ignore the slice.
 *
 * Reset on fork: the threads and processes the supervisor starts afterwards (uia and input
 * workers, the consent dialog, worker processes) keep the kernel's default slice, so the timing
 * of the input worker's checks and its effect is what it was. Only a thread in the normal class
 * is changed, and at its own nice value (an operator's `nice` stands). Returns false where the
 * call is not possible (not Linux, another C library or architecture, a sandbox).
 */
export function favourSupervisorThread(tid: number): boolean {
  if (process.platform !== "linux") return false;
  try {
    const c = libc();
    if (c.schedGetScheduler(tid) !== SCHED_OTHER) return false;
    const attr = Buffer.alloc(SCHED_ATTR_SIZE);
    attr.writeUInt32LE(SCHED_ATTR_SIZE, 0); // size
    attr.writeUInt32LE(SCHED_OTHER, 4); // sched_policy
    attr.writeBigUInt64LE(BigInt(SCHED_FLAG_RESET_ON_FORK), 8); // sched_flags
    attr.writeInt32LE(getPriority(tid), 16); // sched_nice
    attr.writeBigUInt64LE(BigInt(SUPERVISOR_SLICE_NS), 24); // sched_runtime: the slice
    return c.schedSetAttr(tid, attr) === 0;
  } catch {
    return false;
  }
}
