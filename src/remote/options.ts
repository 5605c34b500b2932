import { isIP } from "node:net";
import { parseArgs } from "node:util";

/** What `serve --http` needs; built by parseRemoteFlags or directly by a caller (tests, another CLI parser). */
export interface RemoteOptions {
  host: string;
  /** 0 picks a free port (tests); the bound port is in RemoteServer.url. */
  port: number;
  /** Server certificate and key (PEM files). Required for any host that is not loopback. */
  tls: { certFile: string; keyFile: string } | null;
  /** mTLS: only clients whose certificate chains to this CA connect; identity = SPKI SHA-256. */
  clientCaFile: string | null;
  /** Client certificates valid (notAfter − notBefore) for longer than this are refused. */
  maxCertValidityDays: number;
  /** OAuth 2.1 resource server: Bearer JWTs from this issuer for this audience. */
  oauth: { issuer: string; audience: string; jwks: string; maxLifetimeSeconds: number } | null;
  /** One SPKI fingerprint (hex) or JWT jti per line; re-read on change. */
  revokedFile: string | null;
  /** Origins besides the server's own that may send requests (browser-based clients). */
  allowedOrigins: string[];
  maxBodyBytes: number;
  idleTimeoutMs: number;
  maxSessions: number;
  /** Sessions one identity may hold at once, so it cannot take every slot. */
  maxSessionsPerIdentity: number;
  maxInFlight: number;
}

export const REMOTE_DEFAULTS = {
  host: "127.0.0.1",
  maxCertValidityDays: 30,
  maxLifetimeSeconds: 3600,
  maxBodyBytes: 1024 * 1024,
  idleTimeoutMs: 15 * 60_000,
  maxSessions: 64,
  maxSessionsPerIdentity: 16,
  maxInFlight: 256,
} as const;

/** serve's remote-mode flags with their help lines: the one list both parsers (ours and the CLI's) use. */
export const REMOTE_FLAGS = {
  http: "serve MCP Streamable HTTP at HOST:PORT/mcp instead of stdio (docs/remote.md)",
  "tls-cert": "server certificate (PEM); required off loopback",
  "tls-key": "server private key (PEM)",
  "client-ca": "mTLS: only clients whose certificate chains to this CA connect",
  "max-cert-days": `refuse client certificates valid longer than this (default ${REMOTE_DEFAULTS.maxCertValidityDays})`,
  "oauth-issuer": "OAuth: the issuer (iss) Bearer tokens must name",
  "oauth-audience": "OAuth: the audience (aud) of this resource",
  "oauth-jwks": "OAuth: a JWKS file with the issuer's public keys",
  "oauth-max-lifetime": `OAuth: longest token lifetime accepted, seconds (default ${REMOTE_DEFAULTS.maxLifetimeSeconds})`,
  revoked: "a file of revoked SPKI fingerprints or jti values, one per line (re-read on change)",
  "allow-origin": "another Origin allowed to send requests (repeatable)",
  "max-sessions": `cap on MCP sessions (default ${REMOTE_DEFAULTS.maxSessions})`,
  "max-sessions-per-identity": `cap on one identity's sessions (default ${REMOTE_DEFAULTS.maxSessionsPerIdentity})`,
  "max-inflight": `cap on requests in flight (default ${REMOTE_DEFAULTS.maxInFlight})`,
  "idle-timeout": "idle session expiry, ms",
} as const;

export const REMOTE_FLAG_OPTIONS: Record<keyof typeof REMOTE_FLAGS, { type: "string"; multiple?: boolean }> =
  {
    ...(Object.fromEntries(Object.keys(REMOTE_FLAGS).map((k) => [k, { type: "string" }])) as Record<
      keyof typeof REMOTE_FLAGS,
      { type: "string" }
    >),
    "allow-origin": { type: "string", multiple: true },
  };

export type ParsedRemoteFlags = { ok: true; options: RemoteOptions | null } | { ok: false; message: string };

/** Loopback by address, never by resolving a name: "localhost" is the one name taken on trust. */
export function isLoopbackHost(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  if (isIP(host) === 6) return host === "::1";
  return false;
}

/** "HOST:PORT", "[v6]:PORT", ":PORT" or "PORT" (host defaults to 127.0.0.1). */
export function parseHostPort(raw: string): { host: string; port: number } | null {
  const s = raw.trim();
  let host: string;
  let portText: string;
  if (/^\d+$/.test(s)) {
    host = REMOTE_DEFAULTS.host;
    portText = s;
  } else if (s.startsWith("[")) {
    const m = /^\[([^\]]+)\]:(\d+)$/.exec(s);
    if (!m?.[1] || !m[2] || isIP(m[1]) !== 6) return null;
    host = m[1];
    portText = m[2];
  } else {
    const at = s.lastIndexOf(":");
    if (at < 0) return null;
    host = s.slice(0, at) === "" ? REMOTE_DEFAULTS.host : s.slice(0, at);
    portText = s.slice(at + 1);
    // A bare IPv6 address is ambiguous without brackets.
    if (host.includes(":") || !/^[A-Za-z0-9.-]+$/.test(host)) return null;
  }
  if (!/^\d{1,5}$/.test(portText)) return null;
  const port = Number(portText);
  return port <= 65535 ? { host, port } : null;
}

function positive(raw: string | undefined, name: string, fallback: number, max: number): number | string {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < 1 || n > max)
    return `--${name} must be an integer between 1 and ${max}.`;
  return n;
}

/**
 * The `serve` flags of remote mode, parsed in one place so another CLI parser can take them
 * over as they are. No --http: options null (stdio). Refuses combinations that would serve
 * without TLS off loopback or without any way to prove who the client is.
 */
export function parseRemoteFlags(argv: string[]): ParsedRemoteFlags {
  let values: Record<string, string | string[] | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: REMOTE_FLAG_OPTIONS,
    }));
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : "invalid arguments" };
  }
  const str = (k: string) => (typeof values[k] === "string" ? (values[k] as string) : undefined);
  const http = str("http");
  if (http === undefined) {
    const stray = Object.keys(values).filter((k) => values[k] !== undefined);
    return stray.length === 0
      ? { ok: true, options: null }
      : { ok: false, message: `--${stray[0]} needs --http HOST:PORT.` };
  }
  const hp = parseHostPort(http);
  if (!hp) return { ok: false, message: "--http wants HOST:PORT (for example 127.0.0.1:8765)." };
  const nums = {
    maxCertValidityDays: positive(
      str("max-cert-days"),
      "max-cert-days",
      REMOTE_DEFAULTS.maxCertValidityDays,
      3650,
    ),
    maxLifetimeSeconds: positive(
      str("oauth-max-lifetime"),
      "oauth-max-lifetime",
      REMOTE_DEFAULTS.maxLifetimeSeconds,
      86_400,
    ),
    maxSessions: positive(str("max-sessions"), "max-sessions", REMOTE_DEFAULTS.maxSessions, 10_000),
    maxSessionsPerIdentity: positive(
      str("max-sessions-per-identity"),
      "max-sessions-per-identity",
      REMOTE_DEFAULTS.maxSessionsPerIdentity,
      10_000,
    ),
    maxInFlight: positive(str("max-inflight"), "max-inflight", REMOTE_DEFAULTS.maxInFlight, 100_000),
    idleTimeoutSeconds: positive(
      str("idle-timeout"),
      "idle-timeout",
      REMOTE_DEFAULTS.idleTimeoutMs / 1000,
      86_400,
    ),
  };
  for (const v of Object.values(nums)) if (typeof v === "string") return { ok: false, message: v };
  const n = nums as Record<keyof typeof nums, number>;
  const cert = str("tls-cert");
  const key = str("tls-key");
  if ((cert === undefined) !== (key === undefined))
    return { ok: false, message: "--tls-cert and --tls-key go together." };
  const issuer = str("oauth-issuer");
  const audience = str("oauth-audience");
  const jwks = str("oauth-jwks");
  const oauthParts = [issuer, audience, jwks].filter((x) => x !== undefined).length;
  if (oauthParts !== 0 && oauthParts !== 3)
    return { ok: false, message: "--oauth-issuer, --oauth-audience and --oauth-jwks go together." };
  const options: RemoteOptions = {
    host: hp.host,
    port: hp.port,
    tls: cert !== undefined && key !== undefined ? { certFile: cert, keyFile: key } : null,
    clientCaFile: str("client-ca") ?? null,
    maxCertValidityDays: n.maxCertValidityDays,
    oauth:
      issuer !== undefined && audience !== undefined && jwks !== undefined
        ? { issuer, audience, jwks, maxLifetimeSeconds: n.maxLifetimeSeconds }
        : null,
    revokedFile: str("revoked") ?? null,
    allowedOrigins: (values["allow-origin"] as string[] | undefined) ?? [],
    maxBodyBytes: REMOTE_DEFAULTS.maxBodyBytes,
    idleTimeoutMs: n.idleTimeoutSeconds * 1000,
    maxSessions: n.maxSessions,
    maxSessionsPerIdentity: n.maxSessionsPerIdentity,
    maxInFlight: n.maxInFlight,
  };
  const problem = checkRemoteOptions(options);
  return problem ? { ok: false, message: problem } : { ok: true, options };
}

/** Why these options must not start a server, or null. Also used by callers that build options directly. */
export function checkRemoteOptions(o: RemoteOptions): string | null {
  if (!isLoopbackHost(o.host) && !o.tls)
    return `Refusing to serve HTTP on ${o.host}, which is not loopback, without TLS: give --tls-cert and --tls-key (and --client-ca or --oauth-* to authenticate clients).`;
  if (o.clientCaFile && !o.tls) return "--client-ca needs --tls-cert and --tls-key (mTLS is TLS).";
  if (!o.clientCaFile && !o.oauth)
    return "HTTP mode serves only authenticated clients: give --client-ca (mTLS) or --oauth-issuer/--oauth-audience/--oauth-jwks.";
  if (o.oauth) {
    try {
      if (new URL(o.oauth.issuer).protocol !== "https:" && !isLoopbackUrl(o.oauth.issuer))
        return "--oauth-issuer must be an https URL.";
    } catch {
      return "--oauth-issuer must be a URL.";
    }
    if (o.oauth.audience.trim() === "") return "--oauth-audience must not be empty.";
  }
  for (const origin of o.allowedOrigins)
    if (!/^https?:\/\/[^/\s]+$/.test(origin))
      return "--allow-origin wants an origin such as https://example.com.";
  return null;
}

function isLoopbackUrl(u: string): boolean {
  const url = new URL(u);
  return url.protocol === "http:" && isLoopbackHost(url.hostname.replace(/^\[|\]$/g, ""));
}
