/**
 * The per-node calls of one walk, asked ahead from the tree the application's Cache.GetItems
 * predicts. A walk learns a node only from its parent's GetChildren answer (or, where the cache
 * holds a parent's children complete and in place, from the cache), which chains one round trip
 * per level; the cache already names the nodes to come, so their GetExtents / GetActions /
 * GetChildren leave at once (every GetChildren first, then the facts' calls, each in the
 * predicted breadth-first order), within the walk's node and depth limits, with at most WINDOW
 * of them in flight. A GetChildren answer that names a node the prediction placed nowhere (the
 * cache's parent link disagrees) adds that node's cached subtree. The walk then takes each
 * answer (once) instead of asking, and asks itself for any node the prediction missed. The calls
 * are the same ones the walk would make: only what the cache lacks, never a value or text.
 *
 * A session's next walk of the same root with the same limits sends the calls the last one
 * sent (`seeded`) right behind its GetItems, in the same write: the app answers them while this
 * side reads and parses the cache instead of idling. A seeded call is taken only where the new
 * prediction asks that same call (same kind, same path), so the tree is the new walk's; the
 * others are dropped unread. The calls the walk makes itself for nodes the cache lacks (GTK's
 * tree view cells: `props`, `role`, `state`, their extents, actions and children) are kept and
 * sent early the same way (`own`): each is taken only where the new walk makes that same call
 * of that same path, once that node is known from the new walk's own answers.
 */

/** One node as the cache describes it. */
export interface PredictedNode {
  path: string;
  interfaces: readonly string[];
  childCount: number;
}

/**
 * The calls asked ahead: a node's GetExtents, GetActions and GetChildren, and for a node the
 * cache lacks also its Accessible properties (`props`, one GetAll), GetRoleName and GetState.
 */
export type CallKind = "extents" | "actions" | "children" | "props" | "role" | "state";

export interface PrefetchPlan {
  root: string;
  /** Cached children of a path, in the cache's order (a prediction, not the walk's order). */
  childrenOf(path: string): readonly PredictedNode[];
  node(path: string): PredictedNode | undefined;
  /** The calls a node needs (same rule as the walk's own). */
  needs(node: PredictedNode): readonly CallKind[];
  /** The paths (same application) a GetChildren answer names. */
  childPaths(body: unknown[]): readonly string[];
  maxNodes: number;
  maxDepth: number;
}

/**
 * Calls in flight at once. Measured on gtk3-widget-factory at load ~20: 1024 in flight walked in
 * 0.8–0.9× the time of 128 (fewer wake-ups of both processes); bounded all the same, since a
 * walk that stops early (find_elements found enough) wastes at most this many calls, and as
 * many again of the calls sent early behind its GetItems (the session sends at most this many).
 */
export const PREFETCH_WINDOW = 512;

/** Facts' calls in flight while a GetChildren is out (see Prefetch.next). */
export const FACTS_AHEAD = 48;

type Call = (kind: CallKind, path: string) => Promise<unknown[]>;

export const keyOf = (kind: CallKind, path: string): string => `${kind}\u0000${path}`;

/** A call a walk sent, to send again behind the next walk's GetItems. */
export interface SentCall {
  kind: CallKind;
  path: string;
}

export class Prefetch {
  private readonly answers = new Map<string, Promise<unknown[]>>();
  /**
   * Calls still to leave, in order: every GetChildren before any facts' call (a children answer
   * is what tells the walk the nodes the cache lacks, whose own calls then leave while the app
   * still works through the facts instead of after them). `queued` holds the keys of those not
   * taken meanwhile.
   */
  private readonly kidsQueue: Array<{ kind: CallKind; path: string }> = [];
  private readonly factsQueue: Array<{ kind: CallKind; path: string }> = [];
  private readonly queued = new Set<string>();
  private kidsHead = 0;
  private factsHead = 0;
  private active = 0;
  /** GetChildren calls in flight. */
  private activeKids = 0;
  private stopped = false;
  /** Depth of every node planned so far (the root 0); their count is bounded by maxNodes. */
  private readonly depthOf = new Map<string, number>();
  /** The calls sent (or adopted from `seeded`), in order. */
  private readonly sentCalls: SentCall[] = [];
  /** The keys of the walk's own calls among them (each kept once). */
  private readonly ownKeys = new Set<string>();

  constructor(
    private readonly plan: PrefetchPlan,
    private readonly call: Call,
    private readonly window = PREFETCH_WINDOW,
    /** Calls already in flight, by keyOf: the walk takes those the prediction asks for. */
    private readonly seeded = new Map<string, Promise<unknown[]>>(),
  ) {
    // Predicted breadth-first order: the order the walk asks in, as far as the cache knows it.
    if (plan.node(plan.root) === undefined) return;
    this.predict(plan.root, 0);
    this.pump();
  }

  /** Plans `path` (at `depth`) and its cached subtree, breadth first, within the limits. */
  private predict(path: string, depth: number): void {
    const plan = this.plan;
    const top = plan.node(path);
    if (top === undefined || this.depthOf.has(path) || this.depthOf.size >= plan.maxNodes) return;
    this.depthOf.set(path, depth);
    const level: Array<{ node: PredictedNode; depth: number }> = [{ node: top, depth }];
    for (let i = 0; i < level.length; i += 1) {
      const { node, depth: d } = level[i] as { node: PredictedNode; depth: number };
      for (const kind of plan.needs(node)) {
        const key = keyOf(kind, node.path);
        if (this.queued.has(key) || this.answers.has(key)) continue;
        const early = this.seeded.get(key);
        if (early !== undefined) {
          this.adopt(kind, node.path, key, early);
          continue;
        }
        this.queued.add(key);
        (kind === "children" ? this.kidsQueue : this.factsQueue).push({ kind, path: node.path });
      }
      // The walk asks the deepest level's children only to tell whether the depth cut anything.
      if (d >= plan.maxDepth) continue;
      for (const c of plan.childrenOf(node.path)) {
        if (this.depthOf.size >= plan.maxNodes) break;
        if (this.depthOf.has(c.path)) continue;
        this.depthOf.set(c.path, d + 1);
        level.push({ node: c, depth: d + 1 });
      }
    }
  }

  /** A seeded call the prediction asks: its answer is taken like one sent here. */
  private adopt(kind: CallKind, path: string, key: string, p: Promise<unknown[]>): void {
    this.seeded.delete(key);
    this.answers.set(key, p);
    this.sentCalls.push({ kind, path });
    if (kind !== "children") return;
    p.then(
      (body) => {
        try {
          this.learn(path, body);
        } catch {
          // Only a prediction, as for the calls sent here.
        }
      },
      () => {},
    );
  }

  /** The calls this walk sent or adopted, in order. */
  sent(): readonly SentCall[] {
    return this.sentCalls;
  }

  /**
   * A GetChildren answer asked ahead: children the cache placed elsewhere (its parent links
   * can disagree with GetChildren, as GTK's window children do) are planned from here, with
   * their cached subtrees, so the walk does not meet them unasked.
   */
  private learn(parent: string, body: unknown[]): void {
    const depth = this.depthOf.get(parent);
    if (this.stopped || depth === undefined || depth >= this.plan.maxDepth) return;
    const before = this.kidsQueue.length + this.factsQueue.length;
    for (const path of this.plan.childPaths(body)) this.predict(path, depth + 1);
    if (this.kidsQueue.length + this.factsQueue.length > before) this.pump();
  }

  /**
   * The answer asked ahead for (kind, path), once. Undefined when there is none (not predicted,
   * or not left yet: the walk then asks itself and the queued call is dropped).
   */
  take(kind: CallKind, path: string): Promise<unknown[]> | undefined {
    const key = keyOf(kind, path);
    const p = this.answers.get(key);
    if (p !== undefined) {
      this.answers.delete(key);
      return p;
    }
    this.queued.delete(key);
    return undefined;
  }

  /**
   * A call the walk makes itself (a node the cache lacks, read node by node): the last walk's
   * same call of the same path if it was sent early behind GetItems, taken once, else `ask()`.
   * Either way it is kept among this walk's calls, for the next walk to send early.
   */
  own(kind: CallKind, path: string, ask: () => Promise<unknown[]>): Promise<unknown[]> {
    if (this.stopped) return ask();
    const key = keyOf(kind, path);
    if (!this.ownKeys.has(key)) {
      this.ownKeys.add(key);
      this.sentCalls.push({ kind, path });
    }
    const early = this.seeded.get(key);
    if (early === undefined) return ask();
    this.seeded.delete(key);
    return early;
  }

  /** No further calls leave (the walk ended: done, cut, out of time or cancelled). */
  stop(): void {
    this.stopped = true;
    this.answers.clear();
    this.seeded.clear();
    this.queued.clear();
    this.kidsQueue.length = 0;
    this.factsQueue.length = 0;
  }

  /**
   * The next call to leave. While a GetChildren is still out or to go, at most FACTS_AHEAD
   * facts' calls are in flight: the app answers in order, so a GetChildren that an answer adds
   * (learn) then waits behind a few calls, not behind every facts' call of the walk.
   */
  private next(): { kind: CallKind; path: string } | undefined {
    if (this.kidsHead < this.kidsQueue.length) return this.kidsQueue[this.kidsHead++];
    if (this.activeKids > 0 && this.active - this.activeKids >= FACTS_AHEAD) return undefined;
    if (this.factsHead < this.factsQueue.length) return this.factsQueue[this.factsHead++];
    return undefined;
  }

  private pump(): void {
    while (!this.stopped && this.active < this.window) {
      const c = this.next();
      if (c === undefined) break;
      const { kind, path } = c;
      const key = keyOf(kind, path);
      if (!this.queued.delete(key)) continue;
      this.active += 1;
      if (kind === "children") this.activeKids += 1;
      const p = this.call(kind, path);
      this.answers.set(key, p);
      this.sentCalls.push({ kind, path });
      const done = (): void => {
        this.active -= 1;
        if (kind === "children") this.activeKids -= 1;
        this.pump();
      };
      // A failure belongs to whoever takes the answer (the walk treats it as its own call's).
      p.then((body) => {
        try {
          if (kind === "children") this.learn(path, body);
        } catch {
          // Only a prediction: the walk asks itself for whatever was not asked ahead.
        } finally {
          done();
        }
      }, done);
    }
  }
}
