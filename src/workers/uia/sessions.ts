import { isUiError, toUiError, uiError } from "../../shared/errors.js";
import { type ProcessInstance, sameInstance } from "../../shared/identity.js";
import type {
  A11yHandle,
  A11ySession,
  AccessibilityPort,
  DesktopPort,
  WindowInfo,
} from "../../shared/platform.js";
import type { TargetExpectation } from "../../shared/protocol.js";
import { verifyTarget } from "../verify.js";

/**
 * One live automation session: a provider session on one window of one process instance,
 * owned by one session_key (the supervisor derives it from client and process instance), plus
 * the refs handed out for its nodes. Refs are minted from a counter of the store that never
 * restarts, so a ref of an ended session never names a node of a later one.
 */
export class LiveSession {
  private readonly refs = new Map<string, A11yHandle>();
  /** Handle objects, or the provider's stable identity of a node when it has one, → ref. */
  private readonly refOf = new Map<unknown, string>();
  /** ref → the key it is filed under in refOf. */
  private readonly keyOf = new Map<string, unknown>();
  private ended = false;

  constructor(
    readonly sessionKey: string,
    readonly hwnd: string,
    readonly instance: ProcessInstance,
    readonly provider: A11ySession,
    private readonly mint: () => string,
    private readonly maxRefs: number,
  ) {}

  get closed(): boolean {
    return this.ended;
  }

  /** The ref of a node (the same ref again when the provider hands out the same handle). */
  refFor(handle: A11yHandle): string {
    if (this.ended) throw uiError("element_stale", "The automation session has ended.");
    const key = this.provider.identity?.(handle) ?? handle;
    const known = this.refOf.get(key);
    if (known !== undefined) return known;
    const ref = this.mint();
    this.refs.set(ref, handle);
    this.refOf.set(key, ref);
    this.keyOf.set(ref, key);
    // Oldest refs go first when a session has handed out very many (they become stale).
    while (this.refs.size > this.maxRefs) {
      const oldest = this.refs.keys().next();
      if (oldest.done) break;
      this.forget(oldest.value);
    }
    return ref;
  }

  /** The handle of a ref of this session, or element_stale. */
  handle(ref: string): A11yHandle {
    if (this.ended) throw uiError("element_stale", "The automation session has ended.");
    if (!this.refs.has(ref)) throw uiError("element_stale");
    return this.refs.get(ref);
  }

  /** Forgets one ref (its node is gone). */
  forget(ref: string): void {
    const key = this.keyOf.get(ref);
    this.refs.delete(ref);
    this.keyOf.delete(ref);
    if (key !== undefined && this.refOf.get(key) === ref) this.refOf.delete(key);
  }

  get refCount(): number {
    return this.refs.size;
  }

  /** Ends the session: every ref becomes stale at once; the provider is released. */
  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.refs.clear();
    this.refOf.clear();
    this.keyOf.clear();
    try {
      await this.provider.dispose();
    } catch {
      // A provider that fails to release is gone for us either way.
    }
  }
}

export interface SessionStoreOptions {
  /** Prefix of every ref ("e" → e1, e2, …). */
  refPrefix: string;
  /** Live sessions kept at most; the least recently used one ends first. */
  maxSessions: number;
  /** Refs kept at most per session; the oldest become stale first. */
  maxRefsPerSession: number;
}

/** Races a promise against the caller's signal (cancel or deadline). */
export type Guard = <T>(p: Promise<T>) => Promise<T>;

/**
 * The uia worker's sessions. A session_key may own sessions on several windows of its
 * process instance; ending a key ends all of them.
 */
export class SessionStore {
  private readonly live = new Map<string, LiveSession>();
  private readonly opening = new Map<string, Promise<LiveSession>>();
  /** Bumped whenever a key's sessions are ended, so a session opened meanwhile is not kept. */
  private readonly epochs = new Map<string, number>();
  private counter = 0;

  constructor(private readonly opts: SessionStoreOptions) {}

  private static id(sessionKey: string, hwnd: string): string {
    return `${sessionKey}\u0000${hwnd}`;
  }

  private readonly mint = (): string => {
    this.counter += 1;
    return `${this.opts.refPrefix}${this.counter}`;
  };

  get size(): number {
    return this.live.size;
  }

  /** The live session of (key, window), or null; it becomes the most recently used. */
  find(sessionKey: string, hwnd: string): LiveSession | null {
    const id = SessionStore.id(sessionKey, hwnd);
    const s = this.live.get(id) ?? null;
    if (s === null || s.closed) return null;
    this.live.delete(id);
    this.live.set(id, s);
    return s;
  }

  /**
   * The session of (key, target), opened on first use. After opening, the identity is
   * re-resolved: any difference ends the new session and fails.
   */
  async obtain(
    sessionKey: string,
    target: TargetExpectation,
    window: WindowInfo,
    accessibility: AccessibilityPort,
    desktop: DesktopPort,
    guard: Guard,
  ): Promise<LiveSession> {
    const id = SessionStore.id(sessionKey, target.hwnd);
    const existing = this.live.get(id);
    if (existing !== undefined && !existing.closed) {
      if (!sameInstance(existing.instance, target.instance)) {
        await this.endKey(sessionKey);
        throw uiError("target_changed");
      }
      // Most recently used last.
      this.live.delete(id);
      this.live.set(id, existing);
      return existing;
    }
    let pending = this.opening.get(id);
    if (pending === undefined) {
      pending = this.open(sessionKey, target, window, accessibility, desktop);
      this.opening.set(id, pending);
      const clear = () => {
        if (this.opening.get(id) === pending) this.opening.delete(id);
      };
      pending.then(clear, clear);
    }
    return guard(pending);
  }

  private async open(
    sessionKey: string,
    target: TargetExpectation,
    window: WindowInfo,
    accessibility: AccessibilityPort,
    desktop: DesktopPort,
  ): Promise<LiveSession> {
    const epoch = this.epochs.get(sessionKey) ?? 0;
    let provider: A11ySession;
    try {
      provider = await accessibility.openSession(window);
    } catch (e) {
      throw toUiError(e);
    }
    try {
      // Identity re-resolved after attach (docs/spec.md §3).
      const { window: again } = await verifyTarget(desktop, target);
      if (again.instance === null || !sameInstance(again.instance, target.instance))
        throw uiError("target_changed");
    } catch (e) {
      try {
        await provider.dispose();
      } catch {
        // Released as far as we are concerned.
      }
      throw isUiError(e) ? e : uiError("target_changed");
    }
    const session = new LiveSession(
      sessionKey,
      target.hwnd,
      target.instance,
      provider,
      this.mint,
      this.opts.maxRefsPerSession,
    );
    if ((this.epochs.get(sessionKey) ?? 0) !== epoch) {
      // The key was ended while this session was being opened.
      await session.end();
      throw uiError("element_stale", "The automation session has ended.");
    }
    this.live.set(SessionStore.id(sessionKey, target.hwnd), session);
    while (this.live.size > this.opts.maxSessions) {
      const oldest = this.live.entries().next();
      if (oldest.done) break;
      this.live.delete(oldest.value[0]);
      await oldest.value[1].end();
    }
    return session;
  }

  /** Ends the session of (key, window); true when there was one. */
  async end(sessionKey: string, hwnd: string): Promise<boolean> {
    const id = SessionStore.id(sessionKey, hwnd);
    const s = this.live.get(id);
    this.epochs.set(sessionKey, (this.epochs.get(sessionKey) ?? 0) + 1);
    if (s === undefined) return false;
    this.live.delete(id);
    const was = !s.closed;
    await s.end();
    return was;
  }

  /** Ends every session of a key; true when there was at least one. */
  async endKey(sessionKey: string): Promise<boolean> {
    this.epochs.set(sessionKey, (this.epochs.get(sessionKey) ?? 0) + 1);
    const mine = [...this.live.values()].filter((s) => s.sessionKey === sessionKey);
    for (const s of mine) this.live.delete(SessionStore.id(s.sessionKey, s.hwnd));
    let any = false;
    for (const s of mine) {
      if (!s.closed) any = true;
      await s.end();
    }
    return any;
  }

  /** Ends every session (worker shutdown). */
  async endAll(): Promise<void> {
    const all = [...this.live.values()];
    this.live.clear();
    for (const key of new Set(all.map((s) => s.sessionKey))) {
      this.epochs.set(key, (this.epochs.get(key) ?? 0) + 1);
    }
    for (const s of all) await s.end();
  }
}
