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

/**
 * Who is asking, as far as the server can tell: a hash of the self-asserted MCP clientInfo
 * and a per-connection salt. Names prove nothing, so the label is for the consent dialog
 * only and the hash is what grants, decisions and audit key on.
 */
export class ClientIdentity {
  private constructor(
    /** 12 hex of SHA-256(salt || canonical JSON of clientInfo). */
    readonly hash: string,
    /** The self-reported name, sanitized, for the dialog only. */
    readonly label: string,
  ) {}

  static fromClientInfo(info: unknown, salt: Buffer = newConnectionSalt()): ClientIdentity {
    const hash = createHash("sha256")
      .update(salt)
      .update(canonicalJson(info), "utf8")
      .digest("hex")
      .slice(0, 12);
    const name = info !== null && typeof info === "object" && "name" in info ? info.name : undefined;
    return new ClientIdentity(hash, sanitizeLabel(name));
  }
}
