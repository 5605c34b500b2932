import type { Platform } from "../shared/platform.js";
import type { OpName, OpParsedArgs, OpResult, WorkerInit } from "../shared/protocol.js";

/** What a handler gets besides its arguments. */
export interface HandlerContext {
  /** Aborted on supervisor cancel or when the deadline passes. */
  signal: AbortSignal;
  /** Epoch ms by which the handler should have answered. */
  deadline: number;
  init: WorkerInit;
  platform: Platform;
}

export type Handler<K extends OpName> = (args: OpParsedArgs<K>, ctx: HandlerContext) => Promise<OpResult<K>>;

/** A worker kind's table of handlers; ops it does not list are refused. */
export type HandlerTable = { [K in OpName]?: Handler<K> };

/** Sleep that wakes early (rejecting with "cancelled") when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
