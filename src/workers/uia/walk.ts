import { isUiError, toUiError, uiError } from "../../shared/errors.js";
import type { Rect } from "../../shared/geometry.js";
import type { A11yHandle, A11yNodeFacts, A11ySession } from "../../shared/platform.js";

/**
 * A wall-clock budget for one request: it stops at its deadline (the walk then reports what
 * it has, truncated) and on the caller's signal (cancel: the request fails with "cancelled").
 * Provider calls are raced against it, so a provider that never answers cannot hang a walk.
 */
export class Budget {
  private readonly stop: Promise<"deadline" | "cancelled">;
  private timer: NodeJS.Timeout | undefined;
  private onAbort: (() => void) | undefined;
  private state: "running" | "deadline" | "cancelled" = "running";

  constructor(
    readonly deadlineAt: number,
    private readonly signal: AbortSignal,
  ) {
    this.stop = new Promise((resolve) => {
      const finish = (why: "deadline" | "cancelled") => {
        if (this.state === "running") this.state = why;
        this.release();
        resolve(why);
      };
      if (signal.aborted) {
        finish("cancelled");
        return;
      }
      this.onAbort = () => finish("cancelled");
      signal.addEventListener("abort", this.onAbort, { once: true });
      this.timer = setTimeout(() => finish("deadline"), Math.max(0, deadlineAt - Date.now()));
    });
  }

  get expired(): boolean {
    if (this.state === "running" && Date.now() >= this.deadlineAt) this.state = "deadline";
    return this.state !== "running";
  }

  get cancelled(): boolean {
    return this.state === "cancelled";
  }

  /** Fails with "cancelled" when the caller cancelled. */
  throwIfCancelled(): void {
    if (this.state === "cancelled") {
      const r: unknown = this.signal.reason;
      throw isUiError(r) ? r : uiError("cancelled");
    }
  }

  /** The value, or STOPPED when the budget ran out first. */
  async race<T>(p: Promise<T>): Promise<T | typeof STOPPED> {
    if (this.expired) {
      p.catch(() => {});
      return STOPPED;
    }
    const r = await Promise.race([p, this.stop]);
    if (this.state !== "running") return STOPPED;
    return r as T;
  }

  /** Like race, but running out is an error (for single calls that have no partial result). */
  async must<T>(p: Promise<T>): Promise<T> {
    const r = await this.race(p);
    if (r === STOPPED) {
      this.throwIfCancelled();
      throw uiError("worker_timeout", "The accessibility provider did not answer in time.");
    }
    return r;
  }

  release(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.onAbort !== undefined) this.signal.removeEventListener("abort", this.onAbort);
    this.onAbort = undefined;
  }
}

export const STOPPED: unique symbol = Symbol("stopped");

/** Runs `fn` over `items` with at most `limit` at a time; results in input order. */
export async function mapPool<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** One node reached by a walk. */
export interface Visit {
  handle: A11yHandle;
  facts: A11yNodeFacts;
  depth: number;
  /** Index of the parent visit in visit order, -1 for the root. */
  parent: number;
}

export interface WalkOptions {
  maxDepth: number;
  maxNodes: number;
  concurrency: number;
  /**
   * Called for each level's visits in order; return true to stop the walk there (the rest of
   * the tree is then reported as not seen, i.e. truncated).
   */
  onLevel?: (visits: readonly Visit[]) => boolean;
}

export interface WalkResult {
  /** Every visited node, breadth first; visits[0] is the root. */
  visits: Visit[];
  /** Whether nodes exist (or may exist) that were not visited. */
  truncated: boolean;
}

interface Pending {
  handle: A11yHandle;
  parent: number;
}

type Fetched =
  | { kind: "ok"; facts: A11yNodeFacts; children: A11yHandle[] | null }
  | { kind: "failed"; error: unknown }
  | { kind: "stopped" };

/**
 * Breadth-first, bounded walk from `root`. A level's facts and children are fetched in
 * parallel (bounded). It never reads values or text: only facts() and children().
 * Limits: maxDepth (0 = the root only), maxNodes, and the budget's deadline. A node that
 * fails below the root (it vanished meanwhile) is left out and the result is truncated;
 * the root failing fails the walk.
 */
export async function walk(
  session: A11ySession,
  root: A11yHandle,
  budget: Budget,
  opts: WalkOptions,
): Promise<WalkResult> {
  const visits: Visit[] = [];
  let truncated = false;
  let level: Pending[] = [{ handle: root, parent: -1 }];
  for (let depth = 0; level.length > 0; depth += 1) {
    const room = opts.maxNodes - visits.length;
    if (level.length > room) {
      level = level.slice(0, Math.max(0, room));
      truncated = true;
      if (level.length === 0) break;
    }
    // Children of the deepest level are asked for only to know whether the depth cut anything.
    const fetched = await mapPool(level, opts.concurrency, async (p): Promise<Fetched> => {
      if (budget.expired) return { kind: "stopped" };
      try {
        const facts = await budget.race(session.facts(p.handle));
        if (facts === STOPPED) return { kind: "stopped" };
        const children = await budget.race(session.children(p.handle));
        if (children === STOPPED) return { kind: "ok", facts, children: null };
        return { kind: "ok", facts, children };
      } catch (error) {
        return { kind: "failed", error };
      }
    });
    budget.throwIfCancelled();
    const next: Pending[] = [];
    const added: Visit[] = [];
    for (let i = 0; i < level.length; i += 1) {
      const f = fetched[i] as Fetched;
      const p = level[i] as Pending;
      if (f.kind === "failed") {
        if (depth === 0) throw toUiError(f.error);
        truncated = true;
        continue;
      }
      if (f.kind === "stopped") {
        if (depth === 0)
          throw uiError("worker_timeout", "The accessibility provider did not answer in time.");
        truncated = true;
        continue;
      }
      const index = visits.length;
      const v: Visit = { handle: p.handle, facts: f.facts, depth, parent: p.parent };
      visits.push(v);
      added.push(v);
      if (f.children === null) {
        truncated = true;
        continue;
      }
      if (f.children.length === 0) continue;
      if (depth >= opts.maxDepth) {
        truncated = true;
        continue;
      }
      for (const c of f.children) {
        // Never hold more handles than could be shown; more means truncated.
        if (next.length >= opts.maxNodes) {
          truncated = true;
          break;
        }
        next.push({ handle: c, parent: index });
      }
    }
    if (opts.onLevel?.(added)) {
      if (next.length > 0) truncated = true;
      break;
    }
    if (budget.expired) {
      budget.throwIfCancelled();
      if (next.length > 0) truncated = true;
      break;
    }
    level = next;
  }
  return { visits, truncated };
}

/** A screen rect → window-relative integer rect. */
export function relativeRect(screen: Rect | null, windowRect: Rect): Rect | null {
  if (screen === null) return null;
  const [l, t, r, b] = screen.map((v) => Math.round(v)) as Rect;
  return [l - windowRect[0], t - windowRect[1], r - windowRect[0], b - windowRect[1]];
}
