import type { OpArgs, OpResult } from "../../shared/protocol.js";
import type { Supervisor } from "../supervisor.js";

type ShotOp = "capture.region" | "capture.window";

/**
 * How one identity's image work reaches the one capture worker. A shot waits first for its
 * identity's turn (Supervisor.shotTurns: a few in flight, then round robin by identity), then,
 * holding the turn, for its bytes of the memory budget. In that order one identity's backlog waits
 * in its own queue. The other way round, its shots would hold the process-wide budget, whose
 * queue is first come, first served, ahead of every other identity's shot. Every reservation is
 * made inside a turn, so the budget's holders are calls in flight, which end on their own (worker
 * deadlines): the two waits cannot deadlock.
 */
export interface ShotLane {
  /** `work` in the identity's turn, with `bytes` of the memory budget held; both freed after. */
  turn<T>(bytes: number, work: () => Promise<T>): Promise<T>;
  /** One capture worker message: made inside `turn`. */
  call<K extends ShotOp>(op: K, args: OpArgs<K>): Promise<OpResult<K>>;
}

export function shotLane(
  sup: Pick<Supervisor, "shotTurns" | "memory" | "workers" | "config">,
  who: string,
  signal: AbortSignal,
): ShotLane {
  return {
    turn: (bytes, work) =>
      sup.shotTurns.run(who, signal, async () => {
        const reservation = await sup.memory.reserve(bytes, signal);
        try {
          return await work();
        } finally {
          reservation.release();
        }
      }),
    call: (op, args) =>
      sup.workers.capture.call(op, args, { deadlineMs: sup.config.workerDeadlineMs, signal }),
  };
}
