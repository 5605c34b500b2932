import { isMainThread, type MessagePort, workerData } from "node:worker_threads";

/**
 * The entry of every worker thread (a worker process may start here too). It imports nothing
 * but Node's own modules, so it always loads, and then loads the worker's modules itself.
 *
 * Why: when a worker's modules cannot load (a dependency folder missing or half written), a
 * thread that dies of the import error is stopped while the module loader still has other
 * files open for reading, and each of those descriptors then stays open in this process for
 * good (several per failed start). Caught here instead, the thread ends only once its event
 * loop is empty: every read has finished and closed its file. A process simply exits.
 */
const MAINS = {
  capture: () => import("./capture/main.js"),
  input: () => import("./input/main.js"),
  uia: () => import("./uia/main.js"),
} as const;

function kindOf(): unknown {
  if (!isMainThread) return (workerData as { init?: { kind?: unknown } } | null)?.init?.kind;
  try {
    return (JSON.parse(process.env.UIINSPECT_WORKER_INIT ?? "null") as { kind?: unknown } | null)?.kind;
  } catch {
    return undefined;
  }
}

const kind = kindOf();
const load =
  typeof kind === "string" && Object.hasOwn(MAINS, kind) ? MAINS[kind as keyof typeof MAINS] : null;

try {
  if (!load) throw new Error("unknown worker kind");
  await load();
} catch {
  // The host counts the exit as a crash and restarts with backoff; nothing here may hold the
  // thread open: the port is closed and the loop drains on its own.
  process.exitCode = 1;
  if (isMainThread) process.exit(1);
  (workerData as { port?: MessagePort } | null)?.port?.close();
}
