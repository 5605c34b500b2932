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
 * One identity's view of a window: the refs handed out under one session_key (the supervisor
 * derives it from identity and process instance) for nodes of the window's provider session,
 * which every key on that window shares. Refs are minted from a counter of the store that
 * never restarts, so a ref of an ended session never names a node of a later one, and a ref
 * exists only in the session that minted it, so one key's ref never resolves under another.
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
    /** Lets go of the shared provider session (released once its last user has). */
    private readonly release: () => Promise<void>,
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

  /** Ends the session: every ref becomes stale at once; the provider is let go of. */
  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.refs.clear();
    this.refOf.clear();
    this.keyOf.clear();
    await this.release();
  }
}

/** A window's provider session and how many identities' sessions use it. */
interface SharedProvider {
  readonly provider: A11ySession;
  readonly instance: ProcessInstance;
  users: number;
  /** Its last user let go and it was disposed: never handed out again. */
  released: boolean;
}

async function disposeQuietly(provider: A11ySession): Promise<void> {
  try {
    await provider.dispose();
  } catch {
    // A provider that fails to release is gone for us either way.
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
  /** hwnd → a provider session being attached (keys asking meanwhile wait for the same one). */
  private readonly attaching = new Map<string, Promise<SharedProvider>>();
  /** Bumped whenever a key's sessions are ended, so a session opened meanwhile is not kept. */
  private readonly epochs = new Map<string, number>();
  /**
   * hwnd → the provider session every key's session on that window shares (one attach, one
   * provider cache per window of the instance, however many identities walk it).
   */
  private readonly providers = new Map<string, SharedProvider>();
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
    // Counted as a user from here on: it is let go of by the session's end, whatever happens.
    const shared = await this.providerFor(target, window, accessibility, desktop);
    const release = async () => {
      shared.users -= 1;
      if (shared.users > 0) return;
      shared.released = true;
      if (this.providers.get(target.hwnd) === shared) this.providers.delete(target.hwnd);
      await disposeQuietly(shared.provider);
    };
    const session = new LiveSession(
      sessionKey,
      target.hwnd,
      target.instance,
      shared.provider,
      this.mint,
      this.opts.maxRefsPerSession,
      release,
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

  /**
   * The window's shared provider session, attached on first use, with the caller counted as a
   * user (in the same turn as the lookup, so no release can dispose it in between). After
   * attaching, the identity is re-resolved: any difference releases the new attachment and
   * fails. A kept one of another instance is never shared (its users keep it until they end).
   */
  private async providerFor(
    target: TargetExpectation,
    window: WindowInfo,
    accessibility: AccessibilityPort,
    desktop: DesktopPort,
  ): Promise<SharedProvider> {
    const kept = this.providers.get(target.hwnd);
    if (kept !== undefined && !kept.released && sameInstance(kept.instance, target.instance)) {
      kept.users += 1;
      return kept;
    }
    let pending = this.attaching.get(target.hwnd);
    if (pending === undefined) {
      pending = this.attach(target, window, accessibility, desktop);
      this.attaching.set(target.hwnd, pending);
      const clear = () => {
        if (this.attaching.get(target.hwnd) === pending) this.attaching.delete(target.hwnd);
      };
      pending.then(clear, clear);
    }
    const shared = await pending;
    if (!sameInstance(shared.instance, target.instance)) throw uiError("target_changed");
    // Another waiter on the same attach may have counted on it and let go already: attach anew.
    if (shared.released) return this.providerFor(target, window, accessibility, desktop);
    shared.users += 1;
    return shared;
  }

  private async attach(
    target: TargetExpectation,
    window: WindowInfo,
    accessibility: AccessibilityPort,
    desktop: DesktopPort,
  ): Promise<SharedProvider> {
    let provider: A11ySession;
    try {
      provider = await accessibility.openSession(window);
    } catch (e) {
      throw toUiError(e);
    }
    try {
      // The identity is re-resolved after attaching: a window that changed hands is not ours.
      const { window: again } = await verifyTarget(desktop, target);
      if (again.instance === null || !sameInstance(again.instance, target.instance))
        throw uiError("target_changed");
    } catch (e) {
      await disposeQuietly(provider);
      throw isUiError(e) ? e : uiError("target_changed");
    }
    const shared: SharedProvider = { provider, instance: target.instance, users: 0, released: false };
    this.providers.set(target.hwnd, shared);
    return shared;
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
