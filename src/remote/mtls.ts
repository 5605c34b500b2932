import { createHash, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import type { TLSSocket } from "node:tls";

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  clientCaFile: string | null;
}

/** https.createServer options: with a client CA, a client without a certificate chaining to it never gets past the handshake. */
export function tlsServerOptions(f: TlsFiles): {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
  requestCert: boolean;
  rejectUnauthorized: boolean;
  minVersion: "TLSv1.2";
} {
  const base = {
    cert: readFileSync(f.certFile),
    key: readFileSync(f.keyFile),
    minVersion: "TLSv1.2" as const,
  };
  if (!f.clientCaFile) return { ...base, requestCert: false, rejectUnauthorized: false };
  return { ...base, ca: readFileSync(f.clientCaFile), requestCert: true, rejectUnauthorized: true };
}

export type PeerCheck =
  | {
      ok: true;
      /** SPKI SHA-256 (hex): the identity. */
      fingerprint: string;
      /** The certificate's own SHA-256 (hex), as `openssl x509 -fingerprint -sha256` prints it. */
      certFingerprint: string;
      commonName: string | null;
      notAfter: number;
    }
  | { ok: false; reason: "no_certificate" | "not_authorized" | "too_long_lived" | "unparseable" };

/** SHA-256 (hex) of a certificate's DER SubjectPublicKeyInfo: the key, not the certificate, is the identity. */
export function spkiFingerprint(cert: X509Certificate): string {
  const spki = cert.publicKey.export({ type: "spki", format: "der" });
  return createHash("sha256").update(spki).digest("hex");
}

function commonName(subject: string): string | null {
  for (const line of subject.split("\n")) if (line.startsWith("CN=")) return line.slice(3);
  return null;
}

/**
 * What the TLS layer proved about the peer. The chain was verified by OpenSSL during the
 * handshake (rejectUnauthorized); here: the leaf is present and authorized, and its validity
 * period is no longer than `maxValidityMs` (short-lived credentials are the revocation story
 * that does not depend on anyone remembering to revoke).
 */
export function checkPeer(socket: TLSSocket, maxValidityMs: number): PeerCheck {
  if (!socket.authorized) return { ok: false, reason: "not_authorized" };
  const raw = socket.getPeerCertificate();
  if (!raw?.raw) return { ok: false, reason: "no_certificate" };
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(raw.raw);
  } catch {
    return { ok: false, reason: "unparseable" };
  }
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  if (!Number.isFinite(from) || !Number.isFinite(to)) return { ok: false, reason: "unparseable" };
  if (to - from > maxValidityMs) return { ok: false, reason: "too_long_lived" };
  return {
    ok: true,
    fingerprint: spkiFingerprint(cert),
    certFingerprint: cert.fingerprint256.replaceAll(":", "").toLowerCase(),
    commonName: commonName(cert.subject),
    notAfter: to,
  };
}
