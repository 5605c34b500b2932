import { MemoryBudget } from "../budgets/memory.js";
import type { Supervisor } from "../supervisor.js";

/**
 * The process-wide cap of frames kept by streams, keyed by the process's screenshot memory budget
 * (one per server process; every session's view of the supervisor shares it).
 */
const caps = new WeakMap<MemoryBudget, MemoryBudget>();
export function streamMemory(sup: Supervisor): MemoryBudget {
  let m = caps.get(sup.memory);
  if (!m) {
    m = new MemoryBudget(sup.config.streamMemoryBytes);
    caps.set(sup.memory, m);
  }
  return m;
}

/** PNG bytes kept by every stream of the process, and the most ever kept at once. */
export function streamMemoryUse(sup: Supervisor): { in_use: number; peak: number } {
  const m = caps.get(sup.memory);
  return { in_use: m?.inUse ?? 0, peak: m?.peak ?? 0 };
}
