import { uiError } from "../shared/errors.js";
import { LEASE_CAPABILITIES, type LeaseCapability } from "./protocol.js";

export const HOUR_MS = 3_600_000;
/** An extension never pushes the expiry further than this from now. */
export const MAX_LEASE_MS = 24 * HOUR_MS;

export interface ActiveLease {
  expiresAtMs: number;
  capabilities: LeaseCapability[];
}

/**
 * The lease, in memory only. Nothing here is ever written anywhere: when the broker process
 * ends, the lease is gone. Time comes from an injected clock (epoch ms); expiry is checked on
 * every read, so a lease is never honoured at or after its expiry even if no timer fired.
 */
export class LeaseState {
  private lease: ActiveLease | null = null;

  constructor(
    private readonly clock: () => number,
    private readonly onExpire: (expired: ActiveLease) => void = () => {},
  ) {}

  now(): number {
    return this.clock();
  }

  /** The live lease, or null (an expired one is dropped here and reported once). */
  current(): ActiveLease | null {
    const l = this.lease;
    if (l && this.clock() >= l.expiresAtMs) {
      this.lease = null;
      this.onExpire(l);
      return null;
    }
    return l;
  }

  /** Starts (or replaces) the lease so that it ends exactly at `expiresAtMs` (the shown expiry). */
  activate(expiresAtMs: number, capabilities: readonly LeaseCapability[]): ActiveLease {
    const now = this.clock();
    if (!(expiresAtMs > now) || expiresAtMs - now > MAX_LEASE_MS) {
      throw uiError("invalid_argument", "The lease expiry is out of range.");
    }
    const caps = LEASE_CAPABILITIES.filter((c) => capabilities.includes(c));
    this.current();
    this.lease = { expiresAtMs, capabilities: caps };
    return this.lease;
  }

  /** The expiry an extension by `hours` would give now: current + hours, at most 24 h from now. */
  extendedExpiry(hours: number): number {
    const l = this.current();
    if (!l) throw uiError("lease_revoked", "No unattended lease is active; activate one instead.");
    return Math.min(l.expiresAtMs + hours * HOUR_MS, this.clock() + MAX_LEASE_MS);
  }

  /** Moves the expiry to `expiresAtMs` (the shown one); fails if the lease ended meanwhile. */
  extendTo(expiresAtMs: number): ActiveLease {
    const l = this.current();
    if (!l) throw uiError("lease_revoked", "The unattended lease ended before the extension was approved.");
    if (expiresAtMs - this.clock() > MAX_LEASE_MS)
      throw uiError("invalid_argument", "The lease expiry is out of range.");
    if (expiresAtMs > l.expiresAtMs) l.expiresAtMs = expiresAtMs;
    return l;
  }

  /** Ends the lease; true when there was one. */
  revoke(): boolean {
    const had = this.current() !== null;
    this.lease = null;
    return had;
  }

  /** Throws lease_revoked (none/expired) or action_not_allowed (not covered); returns the lease. */
  check(capability: LeaseCapability): ActiveLease {
    const l = this.current();
    if (!l) throw uiError("lease_revoked");
    if (!l.capabilities.includes(capability)) {
      throw uiError("action_not_allowed", "The unattended lease does not cover this capability.");
    }
    return l;
  }
}
