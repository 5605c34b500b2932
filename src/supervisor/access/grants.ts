import type { DenyReason } from "../../shared/errors.js";
import { uiError } from "../../shared/errors.js";
import { instanceKey as keyOfInstance, type ProcessInstance } from "../../shared/identity.js";
import { SETTINGS } from "../../shared/settings.js";
import { readSetting } from "../../shared/settingsReader.js";
import type { Clock } from "../budgets.js";

export const DEFAULT_GRANT_TTL_MS = SETTINGS.grantTtlMs.default;

export interface Grant {
  readonly client: string;
  readonly instanceKey: string;
  readonly instance: ProcessInstance;
  readonly hwnd: string;
  readonly capabilities: ReadonlySet<string>;
  readonly grantedAt: number;
  readonly expiresAt: number;
  /**
   * The instance's top-levels shown when the grant began (besides the granted window): windows
   * of their own, never its popups. Kept when a live grant is replaced or renewed.
   */
  readonly shownBefore: readonly string[];
}

/**
 * Why a grant ended; the supervisor disposes automation sessions and element refs on every one.
 * `portal_closed`: the compositor ended the portal session the grant was given under (Wayland).
 */
export type RevokeReason = DenyReason | "released" | "expired" | "shutdown" | "portal_closed";

export interface RevokeEvent {
  grant: Grant;
  reason: RevokeReason;
  /** Content-free facts of the revocation for its audit event (flags only). */
  detail?: Record<string, boolean>;
}

export type RevokeListener = (e: RevokeEvent) => void;

export interface GrantInput {
  client: string;
  instance: ProcessInstance;
  hwnd: string;
  capabilities: Iterable<string>;
  /** The instance's top-levels shown now (shownNow), used when no live grant is replaced. */
  shownBefore?: readonly string[];
}

/**
 * Grants in memory only, keyed by (client hash, process instance key). They die with the
 * server. An expired grant is removed the moment it is looked at (or by sweepExpired) and
 * reported to onRevoke listeners as "expired", so sessions are torn down on expiry as well;
 * silent renewal is a fresh put() after the identity was re-resolved and the kept decision
 * still stands.
 */
export class GrantStore {
  private readonly grants = new Map<string, Grant>();
  private readonly listeners = new Set<RevokeListener>();
  /**
   * (client, instance) pairs whose grant the client gave back with release_access. Their kept
   * decision no longer renews a grant silently: actions are consent_required until the client
   * asks again with request_access (answered from the kept decision, without a new dialog).
   */
  private readonly released = new Set<string>();
  /** When each granted instance without a window was last asked whether it still runs. */
  private readonly aliveAskedAt = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    readonly ttlMs = DEFAULT_GRANT_TTL_MS,
  ) {
    if (!Number.isInteger(ttlMs) || ttlMs < 1)
      throw uiError("invalid_argument", "Grant TTL must be >= 1 ms.");
  }

  /**
   * Creates or replaces the grant for (client, instance), expiring ttlMs from now. A live grant
   * replaced keeps the windows shown when it began: a popup opened under it stays one.
   */
  put(input: GrantInput): Grant {
    const now = this.clock();
    const ik = keyOfInstance(input.instance);
    const k = mapKey(input.client, ik);
    const live = this.grants.get(k);
    const shownBefore =
      live !== undefined && live.expiresAt > now && live.hwnd === input.hwnd
        ? live.shownBefore
        : Object.freeze([...(input.shownBefore ?? [])]);
    const grant: Grant = Object.freeze({
      client: input.client,
      instanceKey: ik,
      instance: Object.freeze({ ...input.instance }),
      hwnd: input.hwnd,
      capabilities: new FrozenSet(input.capabilities),
      grantedAt: now,
      expiresAt: now + this.ttlMs,
      shownBefore,
    });
    // Replacing is silent (renewal path); the supervisor revokes first when the binding itself changes.
    this.grants.set(k, grant);
    return grant;
  }

  /** The live grant, or undefined (an expired one is removed and reported). */
  get(client: string, instanceKey: string): Grant | undefined {
    const k = mapKey(client, instanceKey);
    const g = this.grants.get(k);
    if (!g) return undefined;
    if (g.expiresAt <= this.clock()) {
      this.grants.delete(k);
      this.emit(g, "expired");
      return undefined;
    }
    return g;
  }

  /** Extends a live grant by ttlMs from now; an expired or missing one is not revived. */
  renew(client: string, instanceKey: string): Grant | undefined {
    const g = this.get(client, instanceKey);
    if (!g) return undefined;
    const renewed: Grant = Object.freeze({ ...g, expiresAt: this.clock() + this.ttlMs });
    this.grants.set(mapKey(client, instanceKey), renewed);
    return renewed;
  }

  /** release_access: drops this client's grant. */
  release(client: string, instanceKey: string): boolean {
    const k = mapKey(client, instanceKey);
    const g = this.grants.get(k);
    if (!g) return false;
    this.grants.delete(k);
    this.emit(g, "released");
    return true;
  }

  /** Ends one client's grant on an instance for `reason` (reported like every revocation). */
  revoke(
    client: string,
    instanceKey: string,
    reason: RevokeReason,
    detail?: Record<string, boolean>,
  ): boolean {
    const k = mapKey(client, instanceKey);
    const g = this.grants.get(k);
    if (!g) return false;
    this.grants.delete(k);
    this.emit(g, reason, detail);
    return true;
  }

  /** Ends every client's grant on an instance (target_changed, target_gone, lease loss). */
  revokeInstance(instanceKey: string, reason: RevokeReason): number {
    return this.revokeWhere((g) => g.instanceKey === instanceKey, reason);
  }

  /** Ends every grant one client holds (its credential was revoked). */
  revokeClient(client: string, reason: RevokeReason): number {
    return this.revokeWhere((g) => g.client === client, reason);
  }

  /** Ends everything (server shutdown, broker loss). */
  revokeAll(reason: RevokeReason): number {
    const all = [...this.grants.values()];
    this.grants.clear();
    for (const g of all) this.emit(g, reason);
    return all.length;
  }

  /** Every live grant's process instance (each once, with the hwnds granted), whatever the client. */
  instances(): Map<string, { instance: Grant["instance"]; hwnds: Set<string> }> {
    this.sweepExpired();
    const out = new Map<string, { instance: Grant["instance"]; hwnds: Set<string> }>();
    for (const g of this.grants.values()) {
      const e = out.get(g.instanceKey) ?? { instance: g.instance, hwnds: new Set<string>() };
      e.hwnds.add(g.hwnd);
      out.set(g.instanceKey, e);
    }
    // An instance no longer granted needs no more asking about.
    for (const key of this.aliveAskedAt.keys()) if (!out.has(key)) this.aliveAskedAt.delete(key);
    return out;
  }

  /** Whether a client other than `client` holds a live grant on this instance. */
  sharedWithOthers(client: string, instanceKey: string): boolean {
    for (const g of this.grants.values())
      if (g.instanceKey === instanceKey && g.client !== client && g.expiresAt > this.clock()) return true;
    return false;
  }

  /** This client's live grants (expired ones are removed and reported on the way). */
  listForClient(client: string): Grant[] {
    this.sweepExpired();
    return [...this.grants.values()].filter((g) => g.client === client);
  }

  /** Removes and reports every expired grant; the supervisor may call it on a timer. */
  sweepExpired(): number {
    const now = this.clock();
    let n = 0;
    for (const [k, g] of this.grants)
      if (g.expiresAt <= now) {
        this.grants.delete(k);
        this.emit(g, "expired");
        n++;
      }
    return n;
  }

  /** release_access: the kept decision no longer renews this client's grant silently. */
  markReleased(client: string, instanceKey: string): void {
    this.released.add(mapKey(client, instanceKey));
  }

  /** A new approval (request_access) lets the kept decision renew the grant again. */
  clearReleased(client: string, instanceKey: string): void {
    this.released.delete(mapKey(client, instanceKey));
  }

  wasReleased(client: string, instanceKey: string): boolean {
    return this.released.has(mapKey(client, instanceKey));
  }

  /** Whether a granted instance that shows no window is due to be asked whether it still runs. */
  aliveCheckDue(instanceKey: string, now: number, intervalMs: number): boolean {
    return now - (this.aliveAskedAt.get(instanceKey) ?? -Infinity) >= intervalMs;
  }

  noteAliveCheck(instanceKey: string, now: number): void {
    this.aliveAskedAt.set(instanceKey, now);
  }

  /** The instance was found exited: nothing is left to ask about. */
  forgetAliveCheck(instanceKey: string): void {
    this.aliveAskedAt.delete(instanceKey);
  }

  get size(): number {
    return this.grants.size;
  }

  /** Registers a revocation hook; returns its unsubscribe function. */
  onRevoke(listener: RevokeListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  private revokeWhere(match: (g: Grant) => boolean, reason: RevokeReason): number {
    let n = 0;
    for (const [k, g] of this.grants)
      if (match(g)) {
        this.grants.delete(k);
        this.emit(g, reason);
        n++;
      }
    return n;
  }

  private emit(grant: Grant, reason: RevokeReason, detail?: Record<string, boolean>): void {
    for (const l of [...this.listeners]) {
      try {
        l(detail ? { grant, reason, detail } : { grant, reason });
      } catch {
        // One failing listener must not stop the others from disposing their sessions.
      }
    }
  }
}

/** A Set whose mutators throw: a grant's capability set cannot be widened after the decision. */
class FrozenSet<T> extends Set<T> {
  private sealed = false;
  constructor(items: Iterable<T>) {
    super(items);
    this.sealed = true;
  }
  override add(v: T): this {
    if (this.sealed) throw new TypeError("grant capabilities are read-only");
    return super.add(v);
  }
  override delete(_v: T): boolean {
    throw new TypeError("grant capabilities are read-only");
  }
  override clear(): void {
    throw new TypeError("grant capabilities are read-only");
  }
}

function mapKey(client: string, instanceKey: string): string {
  return `${client}\u0000${instanceKey}`;
}

/** UIINSPECT_GRANT_TTL_MS as loadConfig reads it: default 300000, 1000..86400000; throws ConfigError. */
export function grantTtlFromEnv(env: Record<string, string | undefined>): number {
  return readSetting(env, SETTINGS.grantTtlMs);
}
