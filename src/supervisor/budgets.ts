/**
 * The supervisor's budgets, one module each: the sliding-window limiter (budgets/limiter.ts),
 * the per-client and per-application rate budgets built from it (budgets/rate.ts) and the
 * process-wide image memory budget (budgets/memory.ts). Their settings are read through the
 * settings table (src/shared/settingsReader.ts).
 */
export {
  type Clock,
  MINUTE_MS,
  SlidingWindowLimiter,
  type TakeResult,
  type Usage,
} from "./budgets/limiter.js";
export {
  DEFAULT_MEMORY_BUDGET_BYTES,
  MAX_MEMORY_BUDGET_BYTES,
  MemoryBudget,
  MIB,
  MIN_MEMORY_BUDGET_BYTES,
  memoryBudgetBytesFromEnv,
  memoryBudgetFromEnv,
  type Reservation,
} from "./budgets/memory.js";
export {
  type ApplicationBudgetRequest,
  type ApplicationCharge,
  type ApplicationLimits,
  type ApplicationUsage,
  type BudgetConfig,
  type BudgetKind,
  type BudgetState,
  budgetConfigFromEnv,
  DEFAULT_BUDGET_CONFIG,
  RateBudgets,
} from "./budgets/rate.js";
