import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { uiError } from "../../shared/errors.js";
import type { Clock } from "../budgets.js";

export const MAX_TOKEN_TTL_SECONDS = 300;
/**
 * Outstanding tokens per client are few in practice; the cap bounds memory if a client loops on
 * issue. Per client, so one (remote) identity cannot use up another's.
 */
export const MAX_OUTSTANDING_TOKENS = 1024;

const TOKEN_RE = /^[0-9a-f]{32}$/;

interface TokenRecord {
  /** SHA-256 of the token: the token itself is never stored, so memory dumps do not hold it. */
  readonly digest: Buffer;
  /** The client it was issued to: another client presenting it gets "invalid". */
  readonly client: string;
  readonly instanceKey: string;
  readonly actionClass: string;
  readonly expiresAt: number;
}

export type TokenCheck = "ok" | "invalid";

/**
 * Confirmation tokens for protected actions: 128-bit random, single use, in memory only,
 * bound to the client it was issued to, one process instance and one action class, TTL 1..300 s.
 *
 * Records are looked up by the SHA-256 of the presented token and then compared with
 * timingSafeEqual, so neither the lookup nor the comparison leaks the token through timing.
 * A token presented for the wrong target or class is "invalid" and stays unused (it cannot
 * succeed anywhere else). Expired records are purged on every issue and never match.
 */
export class ConfirmationTokenStore {
  private readonly records = new Map<string, TokenRecord>();

  constructor(
    private readonly clock: Clock,
    readonly maxTtlSeconds = MAX_TOKEN_TTL_SECONDS,
  ) {
    if (!Number.isInteger(maxTtlSeconds) || maxTtlSeconds < 1 || maxTtlSeconds > MAX_TOKEN_TTL_SECONDS)
      throw uiError("invalid_argument", `Token TTL ceiling must be 1..${MAX_TOKEN_TTL_SECONDS} s.`);
  }

  /** Call only after the same verification the action itself would do. */
  issue(
    client: string,
    instanceKey: string,
    actionClass: string,
    ttlSeconds: number,
  ): { token_id: string; expires_at: string } {
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > this.maxTtlSeconds)
      throw uiError(
        "invalid_argument",
        `ttl_seconds must be an integer between 1 and ${this.maxTtlSeconds}.`,
      );
    if (client === "" || instanceKey === "" || actionClass === "") throw uiError("invalid_argument");
    const now = this.clock();
    this.purge(now);
    const own = [...this.records.values()].filter((r) => r.client === client);
    if (own.length >= MAX_OUTSTANDING_TOKENS) {
      // Map order is issue order and all TTLs are bounded, so the first record expires soonest-ish.
      const first = own[0];
      const wait = first ? Math.max(1, first.expiresAt - now) : this.maxTtlSeconds * 1000;
      throw uiError("rate_limited", "Too many outstanding confirmation tokens.", wait);
    }
    const token = randomBytes(16).toString("hex");
    const digest = sha256(token);
    const expiresAt = now + ttlSeconds * 1000;
    this.records.set(digest.toString("hex"), { digest, client, instanceKey, actionClass, expiresAt });
    return { token_id: token, expires_at: new Date(expiresAt).toISOString() };
  }

  /** Whether `token` would be accepted now; does not use it up. */
  check(token: unknown, client: string, instanceKey: string, actionClass: string): TokenCheck {
    return this.find(token, client, instanceKey, actionClass) ? "ok" : "invalid";
  }

  /** Accepts and uses up `token` in one step (single thread: no gap between check and delete). */
  consume(token: unknown, client: string, instanceKey: string, actionClass: string): TokenCheck {
    const key = this.find(token, client, instanceKey, actionClass);
    if (!key) return "invalid";
    this.records.delete(key);
    return "ok";
  }

  /** For preview_action: is any unexpired token of this client waiting for this instance and class? */
  hasValid(client: string, instanceKey: string, actionClass: string): boolean {
    const now = this.clock();
    for (const r of this.records.values())
      if (
        r.expiresAt > now &&
        r.client === client &&
        r.instanceKey === instanceKey &&
        r.actionClass === actionClass
      )
        return true;
    return false;
  }

  /** Drops every token for an instance (its grant was revoked or it changed identity). */
  revokeInstance(instanceKey: string): number {
    return this.dropWhere((r) => r.instanceKey === instanceKey);
  }

  /** Drops every token issued to a client (its credential was revoked). */
  revokeClient(client: string): number {
    return this.dropWhere((r) => r.client === client);
  }

  private dropWhere(match: (r: TokenRecord) => boolean): number {
    let n = 0;
    for (const [k, r] of this.records)
      if (match(r)) {
        this.records.delete(k);
        n++;
      }
    return n;
  }

  /** Outstanding (not yet purged) records, for tests. */
  get size(): number {
    return this.records.size;
  }

  private find(token: unknown, client: string, instanceKey: string, actionClass: string): string | undefined {
    if (typeof token !== "string" || !TOKEN_RE.test(token)) return undefined;
    const digest = sha256(token);
    const key = digest.toString("hex");
    const r = this.records.get(key);
    if (!r || !timingSafeEqual(r.digest, digest)) return undefined;
    if (r.expiresAt <= this.clock()) {
      this.records.delete(key);
      return undefined;
    }
    if (r.client !== client || r.instanceKey !== instanceKey || r.actionClass !== actionClass)
      return undefined;
    return key;
  }

  private purge(now: number): void {
    for (const [k, r] of this.records) if (r.expiresAt <= now) this.records.delete(k);
  }
}

function sha256(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}
