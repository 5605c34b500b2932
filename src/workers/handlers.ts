import type { Platform } from "../shared/platform.js";
import type { OpName, OpParsedArgs, OpWireResult, WorkerInit } from "../shared/protocol.js";

/** What a handler gets besides its arguments. */
export interface HandlerContext {
  /** Aborted on supervisor cancel or when the deadline passes. */
  signal: AbortSignal;
  /** Epoch ms by which the handler should have answered. */
  deadline: number;
  init: WorkerInit;
  platform: Platform;
}

export type Handler<K extends OpName> = (
  args: OpParsedArgs<K>,
  ctx: HandlerContext,
) => Promise<OpWireResult<K>>;

/** A worker kind's table of handlers; ops it does not list are refused. */
export type HandlerTable = { [K in OpName]?: Handler<K> };
