import { isUiError, toUiError, uiError } from "../../shared/errors.js";
import { isEmpty, type Rect } from "../../shared/geometry.js";
import { sameInstance } from "../../shared/identity.js";
import { packTrees } from "../../shared/packedTree.js";
import type { A11yHandle, A11yNodeFacts, Platform, WalkShown, WindowInfo } from "../../shared/platform.js";
import type {
  A11yNodeOut,
  OpParsedArgs,
  OpResult,
  OpWireResult,
  TargetExpectation,
} from "../../shared/protocol.js";
import { ACTION_PATTERN, normalizePatterns, normalizeRole, ROLES } from "../../shared/roles.js";
import { type ElementState, statesOf } from "../../shared/states.js";
import type { HandlerContext, HandlerTable } from "../handlers.js";
import { pointsInside, type VerifiedTarget, verifyTarget } from "../verify.js";
import { type LiveSession, SessionStore } from "./sessions.js";
import { Budget, relativeRect, STOPPED, type Visit, walk } from "./walk.js";

/**
 * The uia worker's handlers: a11y.inspect, a11y.find, a11y.act, a11y.element_center and
 * a11y.dispose on ctx.platform.accessibility. Nothing here logs: names, values and provider
 * errors never leave except as the result an agent asked for (names) or as a code.
 */

export interface UiaOptions {
  /** Prefix of refs (default "e": e1, e2, …). */
  refPrefix?: string;
  /** Live sessions kept at most (default 64; the least recently used ends first). */
  maxSessions?: number;
  /** Refs kept per session at most (default 20000; the oldest become stale first). */
  maxRefsPerSession?: number;
  /** Provider calls in flight at once during a walk (default 32). */
  concurrency?: number;
  /** Where UIINSPECT_SERVER_PID / UIINSPECT_HOST_PID are read (default process.env, at each call). */
  env?: () => Record<string, string | undefined>;
}

/** Nodes a find walks at most, and its depth limit. */
export const FIND_MAX_NODES = 5000;
export const FIND_MAX_DEPTH = 32;
/** Target-provided strings (name, automation_id, class_name) are cut to this many UTF-16 units. */
export const MAX_TEXT_CHARS = 256;

export interface UiaRuntime {
  handlers: HandlerTable;
  store: SessionStore;
  /** Ends every session (worker shutdown). */
  shutdown(): Promise<void>;
}

/** Pids never inspected: this process, its parent, and the server/host the supervisor names. */
export function protectedPids(env: Record<string, string | undefined>): Set<number> {
  const pids = new Set<number>([process.pid, process.ppid]);
  for (const name of ["UIINSPECT_SERVER_PID", "UIINSPECT_HOST_PID"]) {
    const v = env[name];
    if (v !== undefined && /^\d{1,10}$/.test(v.trim())) {
      const n = Number(v.trim());
      if (n > 0) pids.add(n);
    }
  }
  return pids;
}

function cut(s: string | null): string | null {
  if (s === null || s.length <= MAX_TEXT_CHARS) return s;
  let end = MAX_TEXT_CHARS - 1;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end -= 1;
  return `${s.slice(0, end)}…`;
}

/** Password fields: flagged by the provider, or a platform role that says so. */
export function isPassword(f: A11yNodeFacts): boolean {
  return f.is_password === true || /password/i.test(f.role);
}

/** What the caller shows of a walk's nodes: without them, a walk skips the calls they alone need. */
const ALL_SHOWN: WalkShown = { patterns: true, bounds: true };

/** The args' `patterns` and `bounds` (absent: shown). */
function shownBy(args: { patterns?: boolean | undefined; bounds?: boolean | undefined }): WalkShown {
  return { patterns: args.patterns !== false, bounds: args.bounds !== false };
}

/**
 * Provider facts → the node of the protocol (redacted, window-relative, vocabulary only).
 * Not shown, patterns are [] and the rect null rather than the few a walk without action
 * names or extents could tell.
 */
export function toNode(
  ref: string,
  f: A11yNodeFacts,
  windowRect: Rect,
  shown: WalkShown = ALL_SHOWN,
): A11yNodeOut {
  const password = isPassword(f);
  const node: A11yNodeOut = {
    ref,
    role: normalizeRole(f.role),
    name: password ? null : cut(f.name),
    automation_id: cut(f.automation_id),
    class_name: cut(f.class_name),
    rect: shown.bounds ? relativeRect(f.rect, windowRect) : null,
    enabled: f.enabled === true,
    offscreen: f.offscreen === true,
    focused: f.focused === true,
    states: statesOf(f),
    patterns: shown.patterns ? normalizePatterns(f.patterns) : [],
    children: [],
  };
  if (password) node.is_password = true;
  return node;
}

/** Visits of one walk → the nodes of the protocol, linked to their parents; [0] is the root. */
function buildTree(
  live: LiveSession,
  visits: readonly { handle: A11yHandle; facts: A11yNodeFacts; parent: number }[],
  windowRect: Rect,
  shown: WalkShown = ALL_SHOWN,
): A11yNodeOut[] {
  const out: A11yNodeOut[] = [];
  for (const v of visits) {
    const node = toNode(live.refFor(v.handle), v.facts, windowRect, shown);
    out.push(node);
    if (v.parent >= 0) out[v.parent]?.children.push(node);
  }
  return out;
}

/**
 * The instance's popup roots; none when the provider cannot tell them or they vanish, and
 * `cut` when the deadline left no time to ask (the answer is then truncated).
 */
async function popupRootsOf(
  live: LiveSession,
  budget: Budget,
  target: TargetExpectation,
): Promise<{ roots: A11yHandle[]; cut: boolean }> {
  if (live.provider.popupRoots === undefined) return { roots: [], cut: false };
  // What the grant's beginning already showed is never its popup.
  const before = new Set(target.shown_before ?? []);
  const r = await budget.race(live.provider.popupRoots(before).catch(() => [] as A11yHandle[]));
  budget.throwIfCancelled();
  return r === STOPPED ? { roots: [], cut: true } : { roots: r, cut: false };
}

function deadlineFor(ms: number | null, ctx: HandlerContext): number {
  const now = Date.now();
  // Answer a little before the worker's own deadline, so a truncated result still arrives.
  const margin = Math.min(250, Math.max(0, Math.floor((ctx.deadline - now) * 0.1)));
  const hard = ctx.deadline - margin;
  return ms === null ? hard : Math.min(now + ms, hard);
}

const ROLE_NAMES: ReadonlySet<string> = new Set(ROLES);

/** What every handler of one uia worker shares: its session store and its limits. */
interface UiaCore {
  store: SessionStore;
  concurrency: number;
  env: () => Record<string, string | undefined>;
}

function refuseSelf(core: UiaCore, target: TargetExpectation): void {
  if (protectedPids(core.env()).has(target.instance.pid)) {
    throw uiError("target_not_allowed", "The server's own process and its host are never inspected.");
  }
}

/** A refusal of the target check: a target that no longer verifies ends the sessions bound to it. */
async function refused(
  core: UiaCore,
  sessionKey: string,
  target: TargetExpectation,
  e: unknown,
): Promise<never> {
  const code = isUiError(e) ? e.code : null;
  if (code === "target_changed") await core.store.endKey(sessionKey);
  else if (code === "target_gone" || code === "minimized") await core.store.end(sessionKey, target.hwnd);
  throw toUiError(e);
}

/** verifyTarget; a target that no longer verifies ends the sessions bound to it. */
async function checked(
  core: UiaCore,
  platform: Platform,
  sessionKey: string,
  target: TargetExpectation,
  budget: Budget,
): Promise<WindowInfo> {
  try {
    const { window } = await budget.must(verifyTarget(platform.desktop, target));
    return window;
  } catch (e) {
    return refused(core, sessionKey, target, e);
  }
}

/** The session of (key, target), opened when there is none (inspections only). */
function obtained(
  core: UiaCore,
  platform: Platform,
  args: { session_key: string; target: TargetExpectation },
  window: WindowInfo,
  budget: Budget,
): Promise<LiveSession> {
  return core.store.obtain(
    args.session_key,
    args.target,
    window,
    platform.accessibility,
    platform.desktop,
    (p) => budget.must(p),
  );
}

/** The existing session of (key, target) for a ref; a ref can never belong to a new one. */
async function existing(core: UiaCore, sessionKey: string, target: TargetExpectation): Promise<LiveSession> {
  const live = core.store.find(sessionKey, target.hwnd);
  if (live === null) throw uiError("element_stale");
  if (!sameInstance(live.instance, target.instance)) {
    await core.store.endKey(sessionKey);
    throw uiError("target_changed");
  }
  return live;
}

/** The live node of a ref, or element_stale (the ref is forgotten when its node is gone). */
async function liveNode(live: LiveSession, ref: string, budget: Budget): Promise<A11yHandle> {
  const handle = live.handle(ref);
  let alive: boolean;
  try {
    alive = await budget.must(live.provider.alive(handle));
  } catch (e) {
    if (isUiError(e) && (e.code === "worker_timeout" || e.code === "cancelled")) throw e;
    alive = false;
  }
  if (!alive || live.closed) {
    live.forget(ref);
    throw uiError("element_stale");
  }
  return handle;
}

function throwIfClosed(live: LiveSession): void {
  if (live.closed) throw uiError("element_stale", "The automation session has ended.");
}

async function run<T>(
  ctx: HandlerContext,
  deadlineMs: number | null,
  fn: (b: Budget) => Promise<T>,
): Promise<T> {
  const budget = new Budget(deadlineFor(deadlineMs, ctx), ctx.signal);
  try {
    return await fn(budget);
  } catch (e) {
    throw toUiError(e);
  } finally {
    budget.release();
  }
}

/**
 * The instance's menus, popups and dialogs as extra roots of a whole-window walk, within what is
 * left of the node limit; a popup that closed while it was read only marks the tree cut.
 */
async function popupTrees(
  core: UiaCore,
  live: LiveSession,
  budget: Budget,
  window: WindowInfo,
  limits: { maxDepth: number; room: number; shown: WalkShown },
  found: Promise<{ roots: A11yHandle[]; cut: boolean }>,
): Promise<{ popups: A11yNodeOut[]; nodes: number; cut: boolean }> {
  const extra = await found;
  let cut = extra.cut;
  let nodes = 0;
  const popups: A11yNodeOut[] = [];
  for (const p of extra.roots) {
    const room = limits.room - nodes;
    if (room <= 0 || budget.expired) {
      cut = true;
      break;
    }
    let sub: Awaited<ReturnType<typeof walk>>;
    try {
      sub = await walk(live.provider, p, budget, {
        maxDepth: limits.maxDepth,
        maxNodes: room,
        concurrency: core.concurrency,
        ...limits.shown,
      });
    } catch (e) {
      if (isUiError(e) && e.code === "cancelled") throw e;
      cut = true;
      continue;
    }
    throwIfClosed(live);
    const tree = buildTree(live, sub.visits, window.rect, limits.shown);
    const top = tree[0];
    if (top === undefined) continue;
    top.popup = true;
    popups.push(top);
    nodes += tree.length;
    cut ||= sub.truncated;
  }
  return { popups, nodes, cut };
}

/** What the walk of an inspection found, before any of it becomes a node or a ref. */
interface WindowWalk {
  visits: Visit[];
  truncated: boolean;
  /** The popup roots being looked for (whole-window walks only). */
  found: Promise<{ roots: A11yHandle[]; cut: boolean }> | null;
}

/**
 * The root, the popup lookup and the window's own walk. `started` is called as soon as the
 * walk's first provider call is out (the walk sends it in the same turn it is called).
 */
async function walkWindow(
  core: UiaCore,
  args: OpParsedArgs<"a11y.inspect">,
  live: LiveSession,
  budget: Budget,
  started: () => void,
): Promise<WindowWalk> {
  const root =
    args.root_ref !== null
      ? await liveNode(live, args.root_ref, budget)
      : await budget.must(live.provider.root());
  // The popups are looked for while the window's own tree is walked (a few calls beside its
  // hundreds) instead of after it; their trees are walked after it, as before.
  const found = args.root_ref === null ? popupRootsOf(live, budget, args.target) : null;
  // Settled here too, so a walk that fails leaves no unhandled rejection behind.
  found?.catch(() => {});
  const walking = walk(live.provider, root, budget, {
    maxDepth: args.max_depth,
    maxNodes: args.max_nodes,
    concurrency: core.concurrency,
    ...shownBy(args),
  });
  started();
  const { visits, truncated } = await walking;
  return { visits, truncated, found };
}

/** The checked window's nodes, refs and popups from a walk (only ever after the check passed). */
async function answer(
  core: UiaCore,
  args: OpParsedArgs<"a11y.inspect">,
  live: LiveSession,
  window: WindowInfo,
  walked: WindowWalk,
  budget: Budget,
): Promise<OpWireResult<"a11y.inspect">> {
  throwIfClosed(live);
  const shown = shownBy(args);
  const out = buildTree(live, walked.visits, window.rect, shown);
  const rootNode = out[0];
  if (rootNode === undefined)
    throw uiError("worker_timeout", "The accessibility provider did not answer in time.");
  const { truncated, found } = walked;
  // A subtree walk (root_ref) is about that subtree only.
  if (found === null) return { trees: packTrees([rootNode]), node_count: out.length, truncated };
  const extra = await popupTrees(
    core,
    live,
    budget,
    window,
    { maxDepth: args.max_depth, room: args.max_nodes - out.length, shown },
    found,
  );
  return {
    // As columns: a structured clone of hundreds of node objects cost more than the walk's own work.
    trees: packTrees([rootNode, ...extra.popups]),
    node_count: out.length + extra.nodes,
    truncated: truncated || extra.cut,
  };
}

/**
 * What an observation (inspect, find) does on its session: a walk that only gathers what the
 * provider says, and an answer that makes nodes and refs of it (only ever after the check passed).
 */
interface Observation<W, R> {
  /** The walk; `started` is called as soon as its first provider calls are out. */
  walk(live: LiveSession, budget: Budget, started: () => void): Promise<W>;
  answer(live: LiveSession, window: WindowInfo, walked: W, budget: Budget): Promise<R>;
}

/** An observation's arguments: `ahead` while the supervisor has not yet authorized the call. */
interface ObservedArgs {
  session_key: string;
  target: TargetExpectation;
  ahead?: boolean | undefined;
}

/**
 * An observation sent ahead of its authorization (`ahead`) walks only a session already open,
 * and changes nothing when it cannot: the supervisor drops this answer and, once the call is
 * authorized, asks again without `ahead`, and that call's refusal ends what it ends.
 */
function notAhead(): never {
  throw uiError("element_stale", "No open session to observe ahead.");
}

/**
 * An observation on a session already open: the worker's own target check runs beside the walk
 * instead of before it. Its requests go out once the walk's first calls are written (or once the
 * walk failed before one), so what it describes is no older than when it ran first. It decides
 * first: on a refusal the walk is stopped and dropped before the refusal is answered, as it
 * was; nothing the walk found becomes a node or a ref before the check passed.
 */
async function beside<W, R>(
  core: UiaCore,
  platform: Platform,
  args: ObservedArgs,
  live: LiveSession,
  budget: Budget,
  o: Observation<W, R>,
): Promise<R> {
  const branch = budget.branch();
  try {
    let startCheck: () => void = () => {};
    const checking = new Promise<VerifiedTarget>((resolve, reject) => {
      let sent = false;
      startCheck = () => {
        if (sent || budget.ended) return;
        sent = true;
        verifyTarget(platform.desktop, args.target).then(resolve, reject);
      };
    });
    // After a turn: the AT-SPI peer link writes the calls of a turn at its end (nextTick), and
    // the X11 check reads its replies blocking, so a check started in the same turn would hold
    // the walk's first calls back until it is done and describe a state before them.
    const walking = o.walk(live, branch.budget, () => setImmediate(startCheck));
    walking.then(startCheck, startCheck);
    let window: WindowInfo;
    try {
      ({ window } = await budget.must(checking));
    } catch (e) {
      branch.stop();
      await walking.catch(() => {});
      if (args.ahead === true) throw toUiError(e);
      return await refused(core, args.session_key, args.target, e);
    }
    if (live.closed) {
      // Ended while it was checked (another call's refusal, a dispose): as before, the checked
      // window gets a session of its own and is walked on it.
      branch.stop();
      await walking.catch(() => {});
      if (args.ahead === true) notAhead();
      const fresh = await obtained(core, platform, args, window, budget);
      return await o.answer(fresh, window, await o.walk(fresh, budget, () => {}), budget);
    }
    return await o.answer(live, window, await walking, branch.budget);
  } finally {
    branch.budget.release();
  }
}

/**
 * An observation of the target: beside its check on a session already open, in order otherwise
 * (opening a session needs the checked window; a session of another instance is ended by obtain).
 */
async function observe<W, R>(
  core: UiaCore,
  platform: Platform,
  args: ObservedArgs,
  budget: Budget,
  o: Observation<W, R>,
): Promise<R> {
  const kept = core.store.find(args.session_key, args.target.hwnd);
  if (kept !== null && sameInstance(kept.instance, args.target.instance)) {
    return beside(core, platform, args, kept, budget, o);
  }
  if (args.ahead === true) notAhead();
  const window = await checked(core, platform, args.session_key, args.target, budget);
  const live = await obtained(core, platform, args, window, budget);
  return o.answer(live, window, await o.walk(live, budget, () => {}), budget);
}

async function inspect(
  core: UiaCore,
  args: OpParsedArgs<"a11y.inspect">,
  platform: Platform,
  budget: Budget,
): Promise<OpWireResult<"a11y.inspect">> {
  refuseSelf(core, args.target);
  return observe(core, platform, args, budget, {
    walk: (live, b, started) => walkWindow(core, args, live, b, started),
    answer: (live, window, walked, b) => answer(core, args, live, window, walked, b),
  });
}

/** The filter of a find: role (by the shared vocabulary), automation id, state, name substring. */
function findFilter(args: OpParsedArgs<"a11y.find">): (f: A11yNodeFacts) => boolean {
  let role: string | null = null;
  if (args.role !== null) {
    role = normalizeRole(args.role);
    if (role === "unknown" && args.role.trim().toLowerCase() !== "unknown") {
      throw uiError("invalid_argument", "Unknown role; see docs/roles.md for the vocabulary.");
    }
    if (!ROLE_NAMES.has(role)) throw uiError("invalid_argument");
  }
  const needle = args.name_contains?.toLowerCase() ?? null;
  const wanted: ElementState | null = args.state;
  return (f) => {
    if (role !== null && normalizeRole(f.role) !== role) return false;
    if (args.automation_id !== null && f.automation_id !== args.automation_id) return false;
    if (wanted !== null && !statesOf(f).includes(wanted)) return false;
    if (needle !== null) {
      // A password field never matches by name: its name may itself be the secret.
      if (isPassword(f) || f.name === null) return false;
      if (!f.name.toLowerCase().includes(needle)) return false;
    }
    return true;
  };
}

/** One element a find matched (a ref is made of it only in the answer). */
interface FindMatch {
  handle: A11yHandle;
  facts: A11yNodeFacts;
  popup: boolean;
}

/** What the walks of a find matched, before any of it becomes a node or a ref. */
interface FindWalk {
  found: FindMatch[];
  truncated: boolean;
}

/**
 * The walks of a find: the window's tree, then its instance's popups, within FIND_MAX_NODES and
 * FIND_MAX_DEPTH, until more than max_results matched. `started` is called as soon as the first
 * walk's first provider calls are out.
 */
async function walkFind(
  core: UiaCore,
  args: OpParsedArgs<"a11y.find">,
  matches: (f: A11yNodeFacts) => boolean,
  live: LiveSession,
  budget: Budget,
  started: () => void,
): Promise<FindWalk> {
  const root = await budget.must(live.provider.root());
  const found: FindMatch[] = [];
  let walked = 0;
  let truncated = false;
  const enough = () => found.length > args.max_results;
  const search = async (from: A11yHandle, popup: boolean) => {
    const result = await walk(live.provider, from, budget, {
      maxDepth: FIND_MAX_DEPTH,
      maxNodes: FIND_MAX_NODES - walked,
      concurrency: core.concurrency,
      ...shownBy(args),
      onVisit: (v) => {
        if (matches(v.facts)) found.push({ handle: v.handle, facts: v.facts, popup });
        return enough();
      },
    });
    walked += result.visits.length;
    truncated ||= result.truncated;
  };
  // The walk sends its first calls in the same turn it is called.
  const searching = search(root, false);
  started();
  await searching;
  // The instance's menus, popups and dialogs are part of the granted window.
  const extra = enough() ? { roots: [], cut: false } : await popupRootsOf(live, budget, args.target);
  truncated ||= extra.cut;
  for (const p of extra.roots) {
    if (walked >= FIND_MAX_NODES || budget.expired || enough()) {
      truncated = true;
      break;
    }
    try {
      await search(p, true);
    } catch (e) {
      if (isUiError(e) && e.code === "cancelled") throw e;
      truncated = true;
    }
  }
  return { found, truncated: truncated || enough() };
}

/** The matches of a find as nodes with refs, on the checked window (only after the check passed). */
function findAnswer(
  args: OpParsedArgs<"a11y.find">,
  live: LiveSession,
  window: WindowInfo,
  walked: FindWalk,
): OpResult<"a11y.find"> {
  throwIfClosed(live);
  const shown = shownBy(args);
  return {
    elements: walked.found.slice(0, args.max_results).map((m) => {
      const node = toNode(live.refFor(m.handle), m.facts, window.rect, shown);
      if (m.popup) node.popup = true;
      return node;
    }),
    truncated: walked.truncated,
  };
}

async function find(
  core: UiaCore,
  args: OpParsedArgs<"a11y.find">,
  platform: Platform,
  budget: Budget,
): Promise<OpResult<"a11y.find">> {
  refuseSelf(core, args.target);
  const matches = findFilter(args);
  return observe(core, platform, args, budget, {
    walk: (live, b, started) => walkFind(core, args, matches, live, b, started),
    answer: async (live, window, walked) => findAnswer(args, live, window, walked),
  });
}

/** A ref op's target: never our own process; identity, visible, not minimized (no foreground: semantic ops need none). */
async function refTarget(
  core: UiaCore,
  args: { target: TargetExpectation; session_key: string },
  platform: Platform,
  budget: Budget,
): Promise<{ window: WindowInfo; live: LiveSession }> {
  refuseSelf(core, args.target);
  const window = await checked(core, platform, args.session_key, args.target, budget);
  return { window, live: await existing(core, args.session_key, args.target) };
}

/** The ref's live node and its facts. */
async function refFacts(
  live: LiveSession,
  ref: string,
  budget: Budget,
): Promise<{ handle: A11yHandle; facts: A11yNodeFacts }> {
  const handle = await liveNode(live, ref, budget);
  return { handle, facts: await budget.must(live.provider.facts(handle)) };
}

async function act(
  core: UiaCore,
  args: OpParsedArgs<"a11y.act">,
  platform: Platform,
  budget: Budget,
): Promise<OpResult<"a11y.act">> {
  const takesValue = args.action === "set_value" || args.action === "select_option";
  if (takesValue && args.value === null) throw uiError("invalid_argument", "This action needs a value.");
  if (!takesValue && args.value !== null) {
    throw uiError("invalid_argument", "Only set_value and select_option take a value.");
  }
  const { live } = await refTarget(core, args, platform, budget);
  const { handle, facts } = await refFacts(live, args.ref, budget);
  // Only through the pattern itself: no pattern, no action (never a click instead).
  if (!normalizePatterns(facts.patterns).includes(ACTION_PATTERN[args.action])) {
    throw uiError("pattern_not_supported");
  }
  await budget.must(live.provider.act(handle, args.action, args.value ?? undefined));
  return {};
}

async function describeRef(
  core: UiaCore,
  args: OpParsedArgs<"a11y.describe">,
  platform: Platform,
  budget: Budget,
): Promise<OpResult<"a11y.describe">> {
  const { window, live } = await refTarget(core, args, platform, budget);
  try {
    const { facts } = await refFacts(live, args.ref, budget);
    return { node: toNode(args.ref, facts, window.rect) };
  } catch (e) {
    // Gone is an answer here (expect gone: true), not a failure.
    if (isUiError(e) && e.code === "element_stale" && !live.closed) return { node: null };
    throw e;
  }
}

async function elementCenter(
  core: UiaCore,
  args: OpParsedArgs<"a11y.element_center">,
  platform: Platform,
  budget: Budget,
): Promise<OpResult<"a11y.element_center">> {
  const { window, live } = await refTarget(core, args, platform, budget);
  const { facts } = await refFacts(live, args.ref, budget);
  const rect = relativeRect(facts.rect, window.rect);
  if (rect === null || isEmpty(rect) || facts.offscreen) {
    throw uiError("out_of_bounds", "The element has no visible rectangle.");
  }
  const x = Math.floor((rect[0] + rect[2]) / 2);
  const y = Math.floor((rect[1] + rect[3]) / 2);
  // Inside the window or one of its instance's popups, menus, dialogs (part of it).
  const all = await budget.must(platform.desktop.listWindows());
  await budget.must(
    pointsInside(platform.desktop, window, all, [{ x, y }], new Set(args.target.shown_before ?? [])),
  );
  return { x, y };
}

export function createUiaRuntime(opts: UiaOptions = {}): UiaRuntime {
  const core: UiaCore = {
    store: new SessionStore({
      refPrefix: opts.refPrefix ?? "e",
      maxSessions: opts.maxSessions ?? 64,
      maxRefsPerSession: opts.maxRefsPerSession ?? 20000,
    }),
    concurrency: opts.concurrency ?? 32,
    env: opts.env ?? (() => process.env),
  };
  const handlers: HandlerTable = {
    "a11y.inspect": (args, ctx) => run(ctx, args.deadline_ms, (b) => inspect(core, args, ctx.platform, b)),
    "a11y.find": (args, ctx) => run(ctx, args.deadline_ms, (b) => find(core, args, ctx.platform, b)),
    "a11y.act": (args, ctx) => run(ctx, null, (b) => act(core, args, ctx.platform, b)),
    "a11y.describe": (args, ctx) => run(ctx, null, (b) => describeRef(core, args, ctx.platform, b)),
    "a11y.element_center": (args, ctx) => run(ctx, null, (b) => elementCenter(core, args, ctx.platform, b)),
    "a11y.dispose": async (args) => ({ disposed: await core.store.endKey(args.session_key) }),
  };
  return { handlers, store: core.store, shutdown: () => core.store.endAll() };
}

/** The uia worker's runtime: one session store per worker. */
export const uiaRuntime: UiaRuntime = createUiaRuntime();
export const uiaHandlers: HandlerTable = uiaRuntime.handlers;
