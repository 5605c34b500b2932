import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createLocalJWKSet, createRemoteJWKSet, type JSONWebKeySet, type JWTPayload, jwtVerify } from "jose";
import { CAPABILITIES, type Capability } from "../supervisor/policy/schema.js";

/** Scope names: one per capability ("uiinspect:observe", …, "uiinspect:drag"). */
export const SCOPE_PREFIX = "uiinspect:";
export const SCOPES_SUPPORTED: readonly string[] = CAPABILITIES.map((c) => `${SCOPE_PREFIX}${c}`);

/** How long, and for how many tokens, a verified signature is remembered. */
const VERIFIED_TTL_MS = 60_000;
const MAX_VERIFIED = 4096;

/** Asymmetric algorithms only: a resource server that holds only public keys cannot verify HMACs anyway. */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

export interface OAuthConfig {
  issuer: string;
  audience: string;
  /** A JWKS file path, or an https URL for deployments that have one. */
  jwks: string;
  maxLifetimeSeconds: number;
  /** How far the issuer's clock may be ahead of or behind ours (iat, nbf, exp), seconds. */
  clockSkewSeconds: number;
}

export type BearerCheck =
  | { ok: true; subject: string; fingerprint: string; jti: string; scopes: ReadonlySet<Capability> }
  | { ok: false; error: BearerError; description: string };

/** "missing": no credentials at all, which RFC 6750 §3.1 answers without an error code. */
export type BearerError = "missing" | "invalid_request" | "invalid_token" | "insufficient_scope";

type KeyLookup = ReturnType<typeof createLocalJWKSet>;

/**
 * Reads a JWKS file and refuses anything but public asymmetric keys: this server keeps
 * verifiers only, so a file with private or symmetric key material is a configuration error.
 */
export function readPublicJwks(file: string): JSONWebKeySet {
  const parsed: unknown = JSON.parse(readFileSync(file, "utf8"));
  if (!parsed || typeof parsed !== "object" || !Array.isArray((parsed as { keys?: unknown }).keys))
    throw new Error("The JWKS file has no keys array.");
  const keys = (parsed as { keys: Array<Record<string, unknown>> }).keys;
  if (keys.length === 0) throw new Error("The JWKS file has no keys.");
  for (const k of keys) {
    if (!k || typeof k !== "object" || (k.kty !== "RSA" && k.kty !== "EC" && k.kty !== "OKP"))
      throw new Error("The JWKS file may hold only RSA, EC or OKP public keys.");
    for (const secret of ["d", "p", "q", "dp", "dq", "qi", "k"])
      if (secret in k) throw new Error("The JWKS file holds private key material; give public keys only.");
  }
  return { keys: keys as JSONWebKeySet["keys"] };
}

function scopesOf(payload: JWTPayload): Set<Capability> {
  const raw = payload.scope ?? payload.scp;
  const names = typeof raw === "string" ? raw.split(" ") : Array.isArray(raw) ? raw : [];
  const out = new Set<Capability>();
  for (const n of names)
    if (typeof n === "string" && n.startsWith(SCOPE_PREFIX)) {
      const c = n.slice(SCOPE_PREFIX.length);
      if ((CAPABILITIES as readonly string[]).includes(c)) out.add(c as Capability);
    }
  return out;
}

/**
 * Why a token's time claims are not acceptable at `nowS` (seconds), or null. Judged by our
 * clock, not by the token: a token may not claim to be issued in the future (beyond the skew),
 * and both its age (now − iat) and what is left of it (exp − now) must be within the maximum
 * lifetime, so no choice of iat stretches a token past the cap. exp and nbf take the skew too.
 */
export function timeClaimsProblem(
  payload: JWTPayload,
  nowS: number,
  maxLifetimeS: number,
  skewS: number,
): string | null {
  const { exp, iat, nbf } = payload;
  if (typeof exp !== "number" || typeof iat !== "number" || !Number.isFinite(exp) || !Number.isFinite(iat))
    return "The token needs numeric exp and iat.";
  if (nbf !== undefined && (typeof nbf !== "number" || !Number.isFinite(nbf)))
    return "The token's nbf is not a number.";
  if (iat > nowS + skewS) return "The token is issued in the future.";
  if (nbf !== undefined && nbf > nowS + skewS) return "The token is not valid yet.";
  if (exp <= nowS - skewS) return "The token has expired.";
  if (exp - iat > maxLifetimeS || nowS - iat > maxLifetimeS || exp - nowS > maxLifetimeS)
    return `Token lifetime exceeds ${maxLifetimeS} s.`;
  return null;
}

/**
 * Verifies `Authorization: Bearer` JWTs as an OAuth 2.1 resource server: signature against the
 * JWKS, iss, aud (this resource), the time claims by our clock (timeClaimsProblem), and a jti
 * (the revocation handle). The token is never stored, logged or echoed; only what it proves
 * leaves this module.
 */
export class BearerVerifier {
  private readonly keys: KeyLookup | ReturnType<typeof createRemoteJWKSet>;
  private readonly verified = new Map<
    string,
    { check: Extract<BearerCheck, { ok: true }>; times: JWTPayload; until: number }
  >();

  constructor(
    private readonly cfg: OAuthConfig,
    private readonly clock: () => number = Date.now,
  ) {
    this.keys = /^https:\/\//i.test(cfg.jwks)
      ? createRemoteJWKSet(new URL(cfg.jwks))
      : createLocalJWKSet(readPublicJwks(cfg.jwks));
  }

  async verify(authorization: string | undefined): Promise<BearerCheck> {
    if (authorization === undefined || authorization === "")
      return { ok: false, error: "missing", description: "A Bearer token is required." };
    const m = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/.exec(authorization);
    if (!m?.[1])
      return { ok: false, error: "invalid_request", description: "Malformed Authorization header." };
    const key = createHash("sha256").update(m[1]).digest("hex");
    const seen = this.verified.get(key);
    const nowMs = this.clock();
    if (seen && seen.until > nowMs) {
      // A token verified a moment ago: its signature is still good; its time claims are
      // judged again by the clock (it may have expired since).
      const again = timeClaimsProblem(
        seen.times,
        Math.floor(nowMs / 1000),
        this.cfg.maxLifetimeSeconds,
        this.cfg.clockSkewSeconds,
      );
      if (!again) return seen.check;
      this.verified.delete(key);
    }
    const check = await this.verifyToken(m[1]);
    if (!check.ok) return check;
    const { times, ...result } = check;
    this.remember(key, result, times, nowMs);
    return result;
  }

  /**
   * Keeps a verified token's result briefly, so its every request (and an attacker replaying
   * one token on hundreds of connections) costs a hash, not a signature check. Bounded in
   * number and in time (a key dropped from a remote JWKS stops counting within the minute).
   */
  private remember(
    key: string,
    check: Extract<BearerCheck, { ok: true }>,
    times: JWTPayload,
    nowMs: number,
  ): void {
    this.verified.set(key, { check, times, until: nowMs + VERIFIED_TTL_MS });
    if (this.verified.size > MAX_VERIFIED) this.verified.delete(this.verified.keys().next().value as string);
  }

  private async verifyToken(
    jwt: string,
  ): Promise<
    Exclude<BearerCheck, { ok: true }> | (Extract<BearerCheck, { ok: true }> & { times: JWTPayload })
  > {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(jwt, this.keys, {
        issuer: this.cfg.issuer,
        audience: this.cfg.audience,
        algorithms: ALGORITHMS,
        currentDate: new Date(this.clock()),
        clockTolerance: this.cfg.clockSkewSeconds,
        requiredClaims: ["exp", "iat", "jti", "sub"],
      }));
    } catch {
      // jose's message can quote claims; the client gets a fixed description instead.
      return {
        ok: false,
        error: "invalid_token",
        description: "The token is invalid, expired or not for this resource.",
      };
    }
    const { jti, sub } = payload;
    const timeProblem = timeClaimsProblem(
      payload,
      Math.floor(this.clock() / 1000),
      this.cfg.maxLifetimeSeconds,
      this.cfg.clockSkewSeconds,
    );
    if (timeProblem) return { ok: false, error: "invalid_token", description: timeProblem };
    if (typeof jti !== "string" || jti === "" || typeof sub !== "string" || sub === "")
      return { ok: false, error: "invalid_token", description: "The token needs jti and sub." };
    const scopes = scopesOf(payload);
    if (scopes.size === 0)
      return { ok: false, error: "insufficient_scope", description: "The token carries no uiinspect scope." };
    const fingerprint = createHash("sha256").update(`${this.cfg.issuer}\u0000${sub}`, "utf8").digest("hex");
    const times: JWTPayload = {
      exp: payload.exp,
      iat: payload.iat,
      ...(payload.nbf !== undefined ? { nbf: payload.nbf } : {}),
    };
    return { ok: true, subject: sub, fingerprint, jti, scopes, times };
  }
}

/** RFC 9728 protected-resource metadata for this server. */
export function protectedResourceMetadata(cfg: OAuthConfig): Record<string, unknown> {
  return {
    resource: cfg.audience,
    authorization_servers: [cfg.issuer],
    scopes_supported: SCOPES_SUPPORTED,
    bearer_methods_supported: ["header"],
    resource_name: "uiinspect-mcp",
  };
}

/** RFC 6750 §3 / RFC 9728 §5.1: the challenge a 401 carries. Quoted values are ours, never the client's. */
export function wwwAuthenticate(
  metadataUrl: string,
  failure: { error: BearerError; description: string },
): string {
  const parts = [`resource_metadata="${metadataUrl}"`, `scope="${SCOPES_SUPPORTED.join(" ")}"`];
  if (failure.error !== "missing")
    parts.push(
      `error="${failure.error}"`,
      `error_description="${failure.description.replace(/["\\]/g, "'")}"`,
    );
  return `Bearer ${parts.join(", ")}`;
}
