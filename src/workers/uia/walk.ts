import { isUiError, toUiError, uiError } from "../../shared/errors.js";
import type { Rect } from "../../shared/geometry.js";
import type { A11yHandle, A11yNodeFacts, A11yNodeSource, A11ySession } from "../../shared/platform.js";

/**
 * A wall-clock budget for one request: it stops at its deadline (the walk then reports what
 * it has, truncated) and on the caller's signal (cancel: the request fails with "cancelled").
 * Provider calls are raced against it, so a provider that never answers cannot hang a walk.
 */
export class Budget {
  /**
   * The races still waiting, each told when the budget stops. Not one long-lived promise raced
   * with Promise.race: each race left a reaction on it until the walk ended, so every call's
   * race stayed reachable and was copied by each scavenge of a walk of hundreds of calls.
   */
  private readonly waiting = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private onAbort: (() => void) | undefined;
  private state: "running" | "deadline" | "cancelled" = "running";

  constructor(
    readonly deadlineAt: number,
    private readonly signal: AbortSignal,
  ) {
    if (signal.aborted) {
      this.finish("cancelled");
      return;
    }
    this.onAbort = () => this.finish("cancelled");
    signal.addEventListener("abort", this.onAbort, { once: true });
    this.timer = setTimeout(() => this.finish("deadline"), Math.max(0, deadlineAt - Date.now()));
  }

  private finish(why: "deadline" | "cancelled"): void {
    if (this.state === "running") this.state = why;
    this.release();
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const stop of waiting) stop();
  }

  get expired(): boolean {
    if (this.state === "running" && Date.now() >= this.deadlineAt) this.state = "deadline";
    return this.state !== "running";
  }

  get cancelled(): boolean {
    return this.state === "cancelled";
  }

  /** Whether the deadline or a cancel stopped the budget (what race checks an answer against). */
  get ended(): boolean {
    return this.state !== "running";
  }

  /**
   * Calls `f` once when the budget stops (never when it had stopped already); the returned
   * function unsubscribes. One listener for a whole walk instead of a race per call.
   */
  onStop(f: () => void): () => void {
    if (this.state !== "running") return () => {};
    this.waiting.add(f);
    return () => {
      this.waiting.delete(f);
    };
  }

  /** Fails with "cancelled" when the caller cancelled. */
  throwIfCancelled(): void {
    if (this.state === "cancelled") {
      const r: unknown = this.signal.reason;
      throw isUiError(r) ? r : uiError("cancelled");
    }
  }

  /** The value, or STOPPED when the budget ran out first. */
  race<T>(p: Promise<T>): Promise<T | typeof STOPPED> {
    if (this.expired) {
      p.catch(() => {});
      return Promise.resolve(STOPPED);
    }
    return new Promise<T | typeof STOPPED>((resolve, reject) => {
      const off = this.onStop(() => resolve(STOPPED));
      p.then(
        (v) => {
          off();
          resolve(this.state !== "running" ? STOPPED : v);
        },
        (e: unknown) => {
          off();
          reject(e);
        },
      );
    });
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

  /**
   * A budget with the same deadline and the same caller's signal that also stops on its own
   * `stop()`: for work that may have to be dropped while it runs (a walk whose target check
   * refused meanwhile).
   */
  branch(): { budget: Budget; stop: () => void } {
    const own = new AbortController();
    const budget = new Budget(this.deadlineAt, AbortSignal.any([this.signal, own.signal]));
    return { budget, stop: () => own.abort() };
  }

  release(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.onAbort !== undefined) this.signal.removeEventListener("abort", this.onAbort);
    this.onAbort = undefined;
  }
}

export const STOPPED: unique symbol = Symbol("stopped");

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
  /** Provider calls (facts or children) in flight at once. */
  concurrency: number;
  /** false: the facts' patterns are not needed (see WalkLimits.patterns). */
  patterns?: boolean;
  /** false: the facts' rects are not needed (see WalkLimits.bounds). */
  bounds?: boolean;
  /**
   * Called for each visit in breadth-first order; return true to stop the walk there (the
   * rest of the tree is then reported as not seen, i.e. truncated).
   */
  onVisit?: (visit: Visit) => boolean;
}

export interface WalkResult {
  /** Every visited node, breadth first; visits[0] is the root. */
  visits: Visit[];
  /** Whether nodes exist (or may exist) that were not visited. */
  truncated: boolean;
}

type Outcome<T> =
  | { kind: "pending" }
  | { kind: "ok"; value: T }
  | { kind: "failed"; error: unknown }
  | { kind: "stopped" };

/** A node known to the walk, at its breadth-first rank (its index in `slots`). */
interface Slot {
  handle: A11yHandle;
  depth: number;
  /** Rank of the parent, -1 for the root. */
  parent: number;
  facts: Outcome<A11yNodeFacts>;
  children: Outcome<A11yHandle[]>;
  /** Index in visits once emitted, -1 when left out. */
  visit: number;
}

const PENDING = { kind: "pending" } as const;
const STOPPED_OUTCOME = { kind: "stopped" } as const;

/** One provider call of the walk: a slot's facts or its children. */
interface Task {
  slot: Slot;
  field: "facts" | "children";
  /** Settled (answered, failed or stopped): a later settle is dropped. */
  done: boolean;
}

/**
 * Breadth-first, bounded, streaming walk from `root`: a node's facts and children are asked
 * as soon as the node is known, in rank order, with at most `concurrency` calls in flight and
 * no barrier between levels; the result is assembled in breadth-first order, so it is the same
 * tree a level-by-level walk returns. Only facts() and children() are read (never values or
 * text), from the session's walkSource() when it has one (told the limits, so a source that
 * asks ahead never asks past them; released when the walk ends).
 *
 * Limits: maxDepth (0 = the root only; children of the deepest level are asked only to know
 * whether the depth cut anything), maxNodes (a node is ranked only within the first maxNodes,
 * so nothing beyond is ever asked) and the budget's deadline (the visits emitted so far, in
 * order, truncated). A node that fails below the root (it vanished meanwhile) is left out with
 * its subtree and the result is truncated; the root failing fails the walk.
 */
export async function walk(
  session: A11ySession,
  root: A11yHandle,
  budget: Budget,
  opts: WalkOptions,
): Promise<WalkResult> {
  const limits = {
    maxNodes: opts.maxNodes,
    maxDepth: opts.maxDepth,
    patterns: opts.patterns !== false,
    bounds: opts.bounds !== false,
  };
  let source: A11yNodeSource = session;
  if (session.walkSource) {
    const pending = session.walkSource(root, limits);
    try {
      source = await budget.must(pending);
    } catch (e) {
      // Out of time before the source was ready: it is released whenever it comes.
      pending.then(
        (s) => s.release?.(),
        () => {},
      );
      throw e;
    }
  }
  try {
    return await streamWalk(source, root, budget, opts);
  } finally {
    source.release?.();
  }
}

function streamWalk(
  source: A11yNodeSource,
  root: A11yHandle,
  budget: Budget,
  opts: WalkOptions,
): Promise<WalkResult> {
  return new Promise<WalkResult>((resolve, reject) => {
    new StreamWalk(source, budget, opts, resolve, reject).start(root);
  });
}

/**
 * One streaming walk: slots ranked breadth-first as children lists arrive, their facts and
 * children asked at most `concurrency` at a time, visits emitted in rank order.
 */
class StreamWalk {
  private readonly slots: Slot[] = [];
  private readonly visits: Visit[] = [];
  private readonly tasks: Array<Task | null> = [];
  /** Calls started and not yet settled: the budget's stop settles them as stopped. */
  private readonly inFlight = new Set<Task>();
  private unsubscribe: () => void = () => {};
  private head = 0;
  private active = 0;
  /** Next slot whose children are to be ranked, and next slot to emit. */
  private structure = 0;
  private emit = 0;
  private truncated = false;
  private stopped = false;
  private settled = false;

  constructor(
    private readonly source: A11yNodeSource,
    private readonly budget: Budget,
    private readonly opts: WalkOptions,
    private readonly resolve: (r: WalkResult) => void,
    private readonly reject: (e: unknown) => void,
  ) {}

  start(root: A11yHandle): void {
    // After a turn, as a raced promise would settle: never inside the caller's abort().
    this.unsubscribe = this.budget.onStop(() => queueMicrotask(() => this.stopInFlight()));
    this.rank(root, 0, -1);
    this.pump();
  }

  private finish(): void {
    if (this.settled) return;
    this.settled = true;
    this.unsubscribe();
    if (this.budget.cancelled) {
      try {
        this.budget.throwIfCancelled();
      } catch (e) {
        this.reject(e);
        return;
      }
    }
    this.resolve({ visits: this.visits, truncated: this.truncated });
  }

  private fail(e: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.unsubscribe();
    this.reject(e);
  }

  /** Queues the provider call of one slot's field (its facts or its children). */
  private run(slot: Slot, field: "facts" | "children"): void {
    this.tasks.push({ slot, field, done: false });
  }

  /**
   * Starts one call: its answer, its error, or "stopped" (the walk stopped, the budget ran out
   * before it started or before it answered) becomes the slot's field, then the walk pumps.
   * Plain callbacks, not an async function and a race per call: a walk makes hundreds.
   */
  private begin(task: Task): void {
    if (this.stopped || this.budget.expired) {
      queueMicrotask(() => this.settle(task, STOPPED_OUTCOME));
      return;
    }
    let p: Promise<A11yNodeFacts | A11yHandle[]>;
    try {
      const h = task.slot.handle;
      p = task.field === "children" ? this.source.children(h) : this.source.facts(h);
    } catch (error) {
      queueMicrotask(() => this.settle(task, { kind: "failed", error }));
      return;
    }
    this.inFlight.add(task);
    p.then(
      (value) => this.settle(task, this.budget.ended ? STOPPED_OUTCOME : { kind: "ok", value }),
      (error: unknown) => this.settle(task, { kind: "failed", error }),
    );
  }

  private settle(task: Task, out: Outcome<unknown>): void {
    if (this.record(task, out)) this.pump();
  }

  private record(task: Task, out: Outcome<unknown>): boolean {
    if (task.done) return false;
    task.done = true;
    this.inFlight.delete(task);
    (task.slot[task.field] as Outcome<unknown>) = out;
    this.active -= 1;
    return true;
  }

  /**
   * The budget stopped: calls still out are stopped (their late answers are dropped), all of
   * them before the walk looks again, so what settled is emitted past every stopped slot.
   */
  private stopInFlight(): void {
    let any = false;
    for (const task of [...this.inFlight]) any = this.record(task, STOPPED_OUTCOME) || any;
    if (any) this.pump();
  }

  private rank(handle: A11yHandle, depth: number, parent: number): void {
    const slot: Slot = { handle, depth, parent, facts: PENDING, children: PENDING, visit: -1 };
    this.slots.push(slot);
    // Children first: they fix the order of what comes next, so the window stays full.
    this.run(slot, "children");
    this.run(slot, "facts");
  }

  /** Ranks the children of settled slots, in order (this fixes the breadth-first order). */
  private advanceStructure(): void {
    while (this.structure < this.slots.length) {
      const s = this.slots[this.structure] as Slot;
      if (s.children.kind === "pending") return;
      this.structure += 1;
      if (s.children.kind !== "ok") {
        if (s.children.kind === "stopped") this.truncated = true;
        continue;
      }
      const kids = s.children.value;
      if (kids.length === 0) continue;
      if (s.depth >= this.opts.maxDepth) {
        this.truncated = true;
        continue;
      }
      for (const c of kids) {
        // Never hold more handles than could be shown; more means truncated.
        if (this.slots.length >= this.opts.maxNodes) {
          this.truncated = true;
          break;
        }
        this.rank(c, s.depth + 1, this.structure - 1);
      }
    }
  }

  /** Emits settled slots in rank order; false when the walk is to stop. */
  private advanceEmission(): boolean {
    while (this.emit < this.slots.length) {
      const s = this.slots[this.emit] as Slot;
      if (s.facts.kind === "pending" || s.children.kind === "pending") return true;
      this.emit += 1;
      const parentVisit = s.parent < 0 ? -1 : (this.slots[s.parent] as Slot).visit;
      const ok = s.facts.kind === "ok" && s.children.kind !== "failed";
      if (s.parent < 0 && !ok) {
        if (s.facts.kind === "failed") throw toUiError(s.facts.error);
        if (s.children.kind === "failed") throw toUiError(s.children.error);
        throw uiError("worker_timeout", "The accessibility provider did not answer in time.");
      }
      if (!ok || (s.parent >= 0 && parentVisit < 0) || s.facts.kind !== "ok") {
        this.truncated = true;
        continue;
      }
      s.visit = this.visits.length;
      const v: Visit = { handle: s.handle, facts: s.facts.value, depth: s.depth, parent: parentVisit };
      this.visits.push(v);
      if (this.opts.onVisit?.(v)) {
        if (this.more(s)) this.truncated = true;
        return false;
      }
    }
    return true;
  }

  /** Whether anything lies beyond the visit that stopped the walk. */
  private more(s: Slot): boolean {
    return (
      this.emit < this.slots.length ||
      this.structure < this.slots.length ||
      s.children.kind !== "ok" ||
      s.children.value.length > 0
    );
  }

  /** Past the deadline: what was emitted is the (truncated) answer; nothing yet is a timeout. */
  private expire(): void {
    this.stopped = true;
    if (this.emit === 0) {
      this.budget.throwIfCancelled();
      throw uiError("worker_timeout", "The accessibility provider did not answer in time.");
    }
    this.truncated = true;
    this.finish();
  }

  /** Starts queued calls up to the concurrency; each one's end pumps again. */
  private launch(): void {
    const limit = Math.max(this.opts.concurrency, this.source.inFlight ?? 0);
    while (this.active < limit && this.head < this.tasks.length) {
      const task = this.tasks[this.head] as Task;
      this.tasks[this.head] = null;
      this.head += 1;
      this.active += 1;
      this.begin(task);
    }
  }

  private pump(): void {
    if (this.settled) return;
    try {
      this.advanceStructure();
      if (!this.advanceEmission()) {
        this.stopped = true;
        this.finish();
        return;
      }
      if (this.emit >= this.slots.length && this.structure >= this.slots.length) {
        this.finish();
        return;
      }
      if (this.budget.expired) {
        this.expire();
        return;
      }
      this.launch();
    } catch (e) {
      this.stopped = true;
      this.fail(e);
    }
  }
}

/** A screen rect → window-relative integer rect. */
export function relativeRect(screen: Rect | null, windowRect: Rect): Rect | null {
  if (screen === null) return null;
  const [l, t, r, b] = screen.map((v) => Math.round(v)) as Rect;
  return [l - windowRect[0], t - windowRect[1], r - windowRect[0], b - windowRect[1]];
}
