import type { FaultKind, ScenarioWindow } from "./scenario.js";

export type FaultWorkerKind = "capture" | "input" | "uia" | "other";

/** What happens when a faulty window is touched; replaceable only in tests of the targeting. */
export type FaultHandler = (kind: FaultKind) => Promise<never>;

/**
 * The real thing, for chaos tests of the worker supervision. Each kind kills or wedges the
 * thread that runs it on purpose; never call this on a thread you want to keep.
 */
export function triggerFault(kind: FaultKind): Promise<never> {
  switch (kind) {
    case "throw":
      // An uncaught exception outside any promise chain: it takes the worker thread down.
      setImmediate(() => {
        throw new Error("simulated fault");
      });
      return new Promise<never>(() => {});
    case "exit":
      // Inside a worker thread this ends only that thread, with exit code 70.
      process.exit(70);
      break;
    case "hang":
      // Deliberate: a synchronous busy loop that never yields, so the worker can only be
      // stopped by terminating it at its deadline (what the supervisor must prove it does).
      for (;;) {
        /* spin forever */
      }
    case "segv":
      return nativeSegfault();
  }
  return new Promise<never>(() => {});
}

/**
 * A real native fault: strlen(NULL) through koffi. In a worker THREAD this takes the whole
 * process down (what UIINSPECT_WORKER_ISOLATION=process exists for); in a child process
 * only that worker dies.
 */
async function nativeSegfault(): Promise<never> {
  const { libc } = await import("../../os/linux/libc.js");
  libc().strlen(null);
  return new Promise<never>(() => {});
}

/** The fault this worker kind should suffer when it touches `w`, if any. */
export function faultFor(w: ScenarioWindow | null | undefined, kind: FaultWorkerKind): FaultKind | null {
  if (w == null || kind === "other" || w.faults === undefined) return null;
  return w.faults[kind] ?? null;
}
