import { createHash, randomBytes } from "node:crypto";

/** A fresh per-connection salt: the same clientInfo on two connections yields two identities. */
export function newConnectionSalt(): Buffer {
  return randomBytes(16);
}

const MAX_DEPTH = 16;

/**
 * Deterministic JSON of arbitrary input: object keys sorted, non-JSON values (undefined,
 * functions, symbols) dropped, non-finite numbers and cycles as null. It never throws, so
 * any clientInfo (even a malformed one) gets an identity.
 */
export function canonicalJson(v: unknown): string {
  const seen = new Set<object>();
  const walk = (x: unknown, depth: number): string | undefined => {
    if (x === null) return "null";
    switch (typeof x) {
      case "string":
        return JSON.stringify(x);
      case "boolean":
        return x ? "true" : "false";
      case "number":
        return Number.isFinite(x) ? JSON.stringify(x) : "null";
      case "bigint":
        return JSON.stringify(x.toString());
      case "object": {
        if (depth >= MAX_DEPTH || seen.has(x)) return "null";
        seen.add(x);
        let out: string;
        if (Array.isArray(x)) {
          out = `[${x.map((e) => walk(e, depth + 1) ?? "null").join(",")}]`;
        } else {
          const rec = x as Record<string, unknown>;
          const parts: string[] = [];
          for (const k of Object.keys(rec).sort()) {
            const s = walk(rec[k], depth + 1);
            if (s !== undefined) parts.push(`${JSON.stringify(k)}:${s}`);
          }
          out = `{${parts.join(",")}}`;
        }
        seen.delete(x);
        return out;
      }
      default:
        return undefined;
    }
  };
  try {
    return walk(v, 0) ?? "null";
  } catch {
    // Exotic input (throwing getters, proxies): still an identity, just a less specific one.
    return "null";
  }
}

export const MAX_LABEL_CHARS = 64;

/**
 * A label safe to put in a dialog: control, format (bidi overrides, zero-width) and separator
 * characters removed, whitespace collapsed, at most 64 code points. It is still self-reported
 * and is shown as such; it is never used for any decision.
 */
export function sanitizeLabel(raw: unknown, fallback = "unnamed client"): string {
  if (typeof raw !== "string") return fallback;
  const cleaned = raw
    .replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Zl}\p{Zp}]/gu, " ")
    .replace(/\s+/gu, " ")
    .trim();
  const cut = Array.from(cleaned).slice(0, MAX_LABEL_CHARS).join("").trim();
  return cut === "" ? fallback : cut;
}

/** How a remote identity was proven; absent for stdio, whose clientInfo is only claimed. */
export interface VerifiedBy {
  method: "mtls" | "oauth";
  /**
   * mtls: SHA-256 (hex) of the client certificate's SubjectPublicKeyInfo. oauth: SHA-256 (hex)
   * of issuer and subject. Shown abbreviated in the consent dialog; never a secret.
   */
  fingerprint: string;
}

/**
 * Who is asking, as far as the server can tell. Over stdio: a hash of the self-asserted MCP
 * clientInfo and a per-connection salt, so names prove nothing and the label is for the
 * consent dialog only. Over authenticated HTTP: a hash of what the credential proves (the
 * certificate's key, or the token's issuer and subject), the same for every session of that
 * identity, so its grants, decisions and budgets follow it and nobody else.
 */
export class ClientIdentity {
  private constructor(
    /**
     * The key grants, decisions, tokens, sessions and budgets use: 12 hex (stdio) or 32 hex
     * (verified: 128 bits, so no other key pair or subject can be ground to collide with it).
     */
    readonly hash: string,
    /** The self-reported name (stdio) or the certificate CN / token subject (verified), sanitized. */
    readonly label: string,
    readonly verified: VerifiedBy | null = null,
  ) {}

  /** The 12 hex audit events carry (docs/spec.md §8): the key's prefix. */
  get auditId(): string {
    return this.hash.slice(0, 12);
  }

  static fromClientInfo(info: unknown, salt: Buffer = newConnectionSalt()): ClientIdentity {
    const hash = createHash("sha256")
      .update(salt)
      .update(canonicalJson(info), "utf8")
      .digest("hex")
      .slice(0, 12);
    const name = info !== null && typeof info === "object" && "name" in info ? info.name : undefined;
    return new ClientIdentity(hash, sanitizeLabel(name));
  }

  /** An identity a credential proved; `label` is still sanitized before it reaches a dialog. */
  static verified(by: VerifiedBy, label: unknown): ClientIdentity {
    const hash = createHash("sha256")
      .update(`uiinspect-identity\u0000${by.method}\u0000${by.fingerprint}`, "utf8")
      .digest("hex")
      .slice(0, 32);
    return new ClientIdentity(hash, sanitizeLabel(label, "unnamed identity"), Object.freeze({ ...by }));
  }
}

/** The audit id of a key (a ClientIdentity.hash), for events recorded without the identity at hand. */
export function auditIdOf(clientKey: string): string {
  return clientKey.slice(0, 12);
}
