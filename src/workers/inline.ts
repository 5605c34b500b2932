import type { WorkerInit, WorkerKind, WorkerToSupervisor } from "../shared/protocol.js";
import type { HandlerTable } from "./handlers.js";
import { type Channel, type ServedWorker, serveWorker } from "./runtime.js";

/**
 * The `inline` endpoint (tests only, never a user setting): a worker's dispatcher on the
 * supervisor's own thread, behind the same messages a thread or a child process exchanges.
 * Every message is structured-cloned and delivered on a later turn, as a MessagePort would, so
 * the supervisor's workerHost checks them with the same zod schemas and sees the same ordering;
 * only process boundaries (a native crash, signals, the release guardian) are out of its reach,
 * and the stdio suites keep covering those.
 */
export interface InlineWorker {
  /** A supervisor-to-worker message (cloned, delivered asynchronously). */
  deliver(msg: unknown): void;
  /** Aborts what is in flight, drops later messages and disposes the platform it loaded. */
  stop(): Promise<void>;
}

async function handlersFor(kind: WorkerKind): Promise<HandlerTable> {
  switch (kind) {
    case "capture":
      return (await import("./capture/handlers.js")).captureHandlers;
    case "input":
      return (await import("./input/handlers.js")).inputHandlers;
    case "uia":
      // Each uia worker owns its sessions and refs, as a thread of its own would.
      return (await import("./uia/handlers.js")).createUiaRuntime().handlers;
  }
}

/** Starts a dispatcher for `init.kind`; `toSupervisor` receives its messages (already cloned). */
export function startInlineWorker(
  init: WorkerInit,
  dialogFlag: SharedArrayBuffer | undefined,
  toSupervisor: (msg: unknown) => void,
): InlineWorker {
  let listener: ((msg: unknown) => void) | null = null;
  let stopped = false;
  const early: unknown[] = [];
  const channel: Channel = {
    send: (msg: WorkerToSupervisor) => {
      const copy = structuredClone(msg);
      setImmediate(() => {
        if (!stopped) toSupervisor(copy);
      });
    },
    onMessage: (l) => {
      listener = l;
      for (const m of early.splice(0)) l(m);
    },
  };
  const served: Promise<ServedWorker | null> = handlersFor(init.kind)
    .then((handlers) => serveWorker(channel, init, handlers, { dialogFlag }))
    .catch(() => null);
  return {
    deliver: (msg) => {
      const copy = structuredClone(msg);
      setImmediate(() => {
        if (stopped) return;
        if (listener) listener(copy);
        else early.push(copy);
      });
    },
    stop: async () => {
      stopped = true;
      const s = await served;
      s?.stop();
      await s?.platform?.dispose().catch(() => undefined);
    },
  };
}
