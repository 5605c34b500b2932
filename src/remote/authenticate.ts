import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { ClientIdentity } from "../supervisor/access/clientIdentity.js";
import type { Capability } from "../supervisor/policy/schema.js";
import { checkPeer, type PeerCheck } from "./mtls.js";
import { BearerVerifier, wwwAuthenticate } from "./oauth.js";
import type { RemoteOptions } from "./options.js";
import type { CredentialIds } from "./revocation.js";

export const METADATA_PATH = "/.well-known/oauth-protected-resource";

/** Who a request proved to be, and with what (the handles revocation works on). */
export interface Authenticated {
  ok: true;
  identity: ClientIdentity;
  /** OAuth scopes as capabilities; null when the credential carries none (mTLS). */
  scope: Set<Capability> | null;
  ids: CredentialIds;
}

/** An HTTP refusal: status, our own message, extra headers (the Bearer challenge), a UiError code when one fits. */
export interface Refused {
  ok: false;
  status: number;
  message: string;
  headers?: Record<string, string>;
  code?: string;
}

const PEER_MESSAGES: Record<Exclude<PeerCheck, { ok: true }>["reason"], string> = {
  no_certificate: "A client certificate is required.",
  not_authorized: "The client certificate does not chain to the configured CA.",
  too_long_lived:
    "The client certificate is valid for longer than this server accepts; use a short-lived one.",
  unparseable: "The client certificate cannot be read.",
};

export interface AuthenticatorDeps {
  clock: () => number;
  isRevoked: (ids: CredentialIds) => boolean;
  /** The bound port (known only once listening), for the metadata URL fallback. */
  port: () => number;
}

/**
 * Turns one HTTP request into a proven identity or a refusal. The certificate (checked once
 * per TLS connection, its expiry on every request) and/or the Bearer token (verified on every
 * request) decide; with both configured the token's subject is the identity and the
 * certificate a second gate. Revocation is asked on every request.
 */
export class RequestAuthenticator {
  private readonly bearer: BearerVerifier | null;
  private readonly peerChecks = new WeakMap<Socket, PeerCheck>();
  private readonly maxValidityMs: number;

  constructor(
    private readonly options: RemoteOptions,
    private readonly deps: AuthenticatorDeps,
  ) {
    this.bearer = options.oauth ? new BearerVerifier(options.oauth, deps.clock) : null;
    this.maxValidityMs = options.maxCertValidityDays * 86_400_000;
  }

  /** The certificate handles a TLS connection proved, if it was checked and passed. */
  certificateOf(sock: Socket): { fingerprint: string; certFingerprint: string } | undefined {
    const c = this.peerChecks.get(sock);
    return c?.ok ? { fingerprint: c.fingerprint, certFingerprint: c.certFingerprint } : undefined;
  }

  async authenticate(req: IncomingMessage): Promise<Authenticated | Refused> {
    let fingerprint: string | undefined;
    let certFingerprint: string | undefined;
    let certName: string | null = null;
    if (this.options.clientCaFile) {
      const sock = req.socket as TLSSocket;
      let check = this.peerChecks.get(sock);
      if (!check) {
        check = checkPeer(sock, this.maxValidityMs);
        this.peerChecks.set(sock, check);
      }
      if (!check.ok)
        return {
          ok: false,
          status: check.reason === "too_long_lived" ? 403 : 401,
          message: PEER_MESSAGES[check.reason],
        };
      if (check.notAfter <= this.deps.clock())
        return { ok: false, status: 401, message: "The client certificate has expired." };
      fingerprint = check.fingerprint;
      certFingerprint = check.certFingerprint;
      certName = check.commonName;
      // A revoked certificate is refused as such (403) whatever else is configured: with OAuth
      // too, the token is not even looked at.
      if (this.deps.isRevoked({ fingerprint, certFingerprint }))
        return {
          ok: false,
          status: 403,
          code: "credential_revoked",
          message: "This client certificate was revoked.",
        };
    }
    if (this.bearer) {
      const r = await this.bearer.verify(req.headers.authorization);
      const challenge = (error: Parameters<typeof wwwAuthenticate>[1]) => ({
        "www-authenticate": wwwAuthenticate(this.metadataUrl(req), error),
      });
      if (!r.ok) return { ok: false, status: 401, message: r.description, headers: challenge(r) };
      if (this.deps.isRevoked({ jti: r.jti }))
        return {
          ok: false,
          status: 401,
          code: "credential_revoked",
          message: "This credential was revoked.",
          headers: challenge({ error: "invalid_token", description: "This credential was revoked." }),
        };
      const identity = ClientIdentity.verified({ method: "oauth", fingerprint: r.fingerprint }, r.subject);
      return {
        ok: true,
        identity,
        scope: new Set(r.scopes),
        ids: { fingerprint, certFingerprint, jti: r.jti },
      };
    }
    if (fingerprint === undefined) return { ok: false, status: 401, message: PEER_MESSAGES.no_certificate };
    return {
      ok: true,
      identity: ClientIdentity.verified({ method: "mtls", fingerprint }, certName),
      scope: null,
      ids: { fingerprint, certFingerprint },
    };
  }

  /**
   * Where the RFC 9728 metadata of this resource is: derived from the audience when it is a URL
   * (the resource identifier clients were told), else from a well-formed Host header, else the
   * bound address. Never a Host header as given: it would be client text in our challenge.
   */
  metadataUrl(req: IncomingMessage): string {
    const audience = this.options.oauth?.audience ?? "";
    if (/^https?:\/\//i.test(audience)) {
      const u = new URL(audience);
      return `${u.origin}${METADATA_PATH}${u.pathname === "/" ? "" : u.pathname}`;
    }
    const host = req.headers.host ?? "";
    const wellFormed = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/.test(host);
    const scheme = this.options.tls ? "https" : "http";
    const bound = this.options.host.includes(":") ? `[${this.options.host}]` : this.options.host;
    return `${scheme}://${wellFormed ? host : `${bound}:${this.deps.port()}`}${METADATA_PATH}`;
  }
}
