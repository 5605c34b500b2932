import { isIP } from "node:net";
import { parseArgs } from "node:util";
import {
  type IntSetting,
  parseSettingValue,
  remoteSettings,
  SETTINGS,
  type Setting,
} from "../shared/settings.js";
import type { OAuthConfig } from "./oauth.js";

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
  oauth: OAuthConfig | null;
  /** Certificate digests and JWT jti values, one per line; re-read on change (revocation.ts). */
  revokedFile: string | null;
  /** Origins besides the server's own that may send requests (browser-based clients). */
  allowedOrigins: string[];
  maxBodyBytes: number;
  idleTimeoutMs: number;
  maxSessions: number;
  /** Sessions one identity may hold at once, so it cannot take every slot. */
  maxSessionsPerIdentity: number;
  /** Requests in flight (body received, not yet answered) across all identities. */
  maxInFlight: number;
  /** One identity's share of maxInFlight, so it cannot take every slot either. */
  maxInFlightPerIdentity: number;
  /** Open connections one identity may hold (keep-alive included). */
  maxConnectionsPerIdentity: number;
  /** Time a connection has for a request's headers (and its TLS handshake). */
  headerTimeoutMs: number;
  /** Time a request has for its body once its headers arrived. */
  bodyTimeoutMs: number;
}

const intDefault = (s: IntSetting) => s.default;

export const REMOTE_DEFAULTS = {
  host: "127.0.0.1",
  maxCertValidityDays: intDefault(SETTINGS.maxCertDays),
  maxLifetimeSeconds: intDefault(SETTINGS.oauthMaxLifetime),
  clockSkewSeconds: intDefault(SETTINGS.oauthClockSkew),
  maxBodyBytes: 1024 * 1024,
  idleTimeoutMs: intDefault(SETTINGS.idleTimeout) * 1000,
  maxSessions: intDefault(SETTINGS.maxSessions),
  maxSessionsPerIdentity: intDefault(SETTINGS.maxSessionsPerIdentity),
  maxInFlight: intDefault(SETTINGS.maxInflight),
  maxInFlightPerIdentity: intDefault(SETTINGS.maxInflightPerIdentity),
  maxConnectionsPerIdentity: intDefault(SETTINGS.maxConnectionsPerIdentity),
  headerTimeoutMs: intDefault(SETTINGS.headerTimeout) * 1000,
  bodyTimeoutMs: intDefault(SETTINGS.bodyTimeout) * 1000,
} as const;

/** serve's remote-mode flags as node:util.parseArgs options, from the settings table. */
export const REMOTE_FLAG_OPTIONS: Record<string, { type: "string"; multiple?: boolean }> = Object.fromEntries(
  remoteSettings().map((s) => [
    s.flag,
    s.kind === "text" && s.multiple ? { type: "string", multiple: true } : { type: "string" },
  ]),
);

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

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Each remote setting's raw value: the flag when given, else its environment variable (an
 * empty variable counts as unset). A repeated flag's values join with commas, as the variable
 * takes them. `flagged` says which came from a flag, for the "needs --http" check.
 */
function rawValues(
  values: Record<string, string | string[] | boolean | undefined>,
  env: Env,
): { raw: Map<Setting, { text: string; from: string }>; flagged: string[] } {
  const raw = new Map<Setting, { text: string; from: string }>();
  const flagged: string[] = [];
  for (const s of remoteSettings()) {
    const v = values[s.flag];
    if (typeof v === "string" || Array.isArray(v)) {
      raw.set(s, { text: Array.isArray(v) ? v.join(",") : v, from: `--${s.flag}` });
      flagged.push(s.flag);
    } else if (env[s.env] !== undefined && env[s.env] !== "") {
      raw.set(s, { text: env[s.env] as string, from: s.env });
    }
  }
  return { raw, flagged };
}

type Read =
  | { ok: true; get: <S extends Setting>(s: S) => S extends IntSetting ? number : string | undefined }
  | { ok: false; message: string };

/** Every value checked by the settings table's one parser; the first bad one is the message. */
function readAll(raw: Map<Setting, { text: string; from: string }>): Read {
  const got = new Map<Setting, number | string>();
  for (const [s, { text, from }] of raw) {
    const r = parseSettingValue(s, text);
    if (!r.ok)
      return {
        ok: false,
        message:
          s.kind === "int"
            ? `${from} must be a whole number from ${s.min} to ${s.max}.`
            : `${from} must not be empty.`,
      };
    got.set(s, typeof r.value === "string" ? r.value.trim() : r.value);
  }
  const get = (s: Setting) => got.get(s) ?? (s.kind === "int" ? s.default : undefined);
  return { ok: true, get: get as Extract<Read, { ok: true }>["get"] };
}

/**
 * The `serve` flags of remote mode (and their environment variables, the fallback), parsed in
 * one place so another CLI parser can take them over as they are. No --http (nor
 * UIINSPECT_HTTP): options null (stdio). Refuses combinations that would serve without TLS off
 * loopback or without any way to prove who the client is.
 */
export function parseRemoteFlags(argv: string[], env: Env = {}): ParsedRemoteFlags {
  let values: Record<string, string | string[] | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: REMOTE_FLAG_OPTIONS,
    }));
  } catch (e) {
    return {
      ok: false,
      message: e instanceof Error ? (e.message.split(". ")[0] ?? "invalid arguments") : "invalid arguments",
    };
  }
  const { raw, flagged } = rawValues(values, env);
  if (!raw.has(SETTINGS.http))
    return flagged.length === 0
      ? { ok: true, options: null }
      : { ok: false, message: `--${flagged[0]} needs --http HOST:PORT.` };
  const read = readAll(raw);
  if (!read.ok) return read;
  const { get } = read;
  const hp = parseHostPort(get(SETTINGS.http) ?? "");
  if (!hp) return { ok: false, message: "--http wants HOST:PORT (for example 127.0.0.1:8765)." };
  const cert = get(SETTINGS.tlsCert);
  const key = get(SETTINGS.tlsKey);
  if ((cert === undefined) !== (key === undefined))
    return { ok: false, message: "--tls-cert and --tls-key go together." };
  const issuer = get(SETTINGS.oauthIssuer);
  const audience = get(SETTINGS.oauthAudience);
  const jwks = get(SETTINGS.oauthJwks);
  const oauthParts = [issuer, audience, jwks].filter((x) => x !== undefined).length;
  if (oauthParts !== 0 && oauthParts !== 3)
    return { ok: false, message: "--oauth-issuer, --oauth-audience and --oauth-jwks go together." };
  const origins = get(SETTINGS.allowOrigins);
  const options: RemoteOptions = {
    host: hp.host,
    port: hp.port,
    tls: cert !== undefined && key !== undefined ? { certFile: cert, keyFile: key } : null,
    clientCaFile: get(SETTINGS.clientCa) ?? null,
    maxCertValidityDays: get(SETTINGS.maxCertDays),
    oauth:
      issuer !== undefined && audience !== undefined && jwks !== undefined
        ? {
            issuer,
            audience,
            jwks,
            maxLifetimeSeconds: get(SETTINGS.oauthMaxLifetime),
            clockSkewSeconds: get(SETTINGS.oauthClockSkew),
          }
        : null,
    revokedFile: get(SETTINGS.revokedFile) ?? null,
    allowedOrigins:
      origins === undefined
        ? []
        : origins
            .split(",")
            .map((o) => o.trim())
            .filter((o) => o !== ""),
    maxBodyBytes: REMOTE_DEFAULTS.maxBodyBytes,
    idleTimeoutMs: get(SETTINGS.idleTimeout) * 1000,
    maxSessions: get(SETTINGS.maxSessions),
    maxSessionsPerIdentity: get(SETTINGS.maxSessionsPerIdentity),
    maxInFlight: get(SETTINGS.maxInflight),
    // A share above the global cap means no share at all: the global cap is what holds then.
    maxInFlightPerIdentity: Math.min(get(SETTINGS.maxInflightPerIdentity), get(SETTINGS.maxInflight)),
    maxConnectionsPerIdentity: get(SETTINGS.maxConnectionsPerIdentity),
    headerTimeoutMs: get(SETTINGS.headerTimeout) * 1000,
    bodyTimeoutMs: get(SETTINGS.bodyTimeout) * 1000,
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
    if (!/^https?:\/\/[^/\s,]+$/.test(origin))
      return "--allow-origin wants an origin such as https://example.com.";
  return null;
}

function isLoopbackUrl(u: string): boolean {
  const url = new URL(u);
  return url.protocol === "http:" && isLoopbackHost(url.hostname.replace(/^\[|\]$/g, ""));
}
