import { readFileSync, statSync, unwatchFile, watchFile } from "node:fs";

/**
 * A credential's revocation handles: the certificate's key digest (SPKI SHA-256, the identity),
 * the certificate's own SHA-256 (what `openssl x509 -fingerprint -sha256` prints) and/or the
 * token's jti.
 */
export interface CredentialIds {
  fingerprint?: string | undefined;
  certFingerprint?: string | undefined;
  jti?: string | undefined;
}

/** What a list revokes: SHA-256 digests (lower-case hex, key or certificate) and jti values. */
export interface Revocations {
  digests: ReadonlySet<string>;
  jtis: ReadonlySet<string>;
}

/** A line that does not parse: its number (1-based) and why, never its text. */
export interface RevocationLineError {
  line: number;
  problem: string;
}

export type ParsedRevocations =
  | { ok: true; list: Revocations }
  | { ok: false; errors: RevocationLineError[] };

const HEX_AND_COLONS = /^[0-9A-Fa-f:]+$/;
/** A jti as tokens carry it: printable, no blanks, bounded (longer ones are a paste gone wrong). */
const JTI = /^[\x21-\x7e]{1,512}$/;

/** 64 hex digits, bare or as colon-separated pairs (any case); null when it is not exactly that. */
function sha256Hex(s: string): string | null {
  if (/^[0-9A-Fa-f]{64}$/.test(s)) return s.toLowerCase();
  if (/^[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){31}$/.test(s)) return s.replaceAll(":", "").toLowerCase();
  return null;
}

type LineResult = { digest: string } | { jti: string } | { problem: string } | null;

/**
 * One line of the list. Blank lines and `#` comments (whole lines, or after a blank) are
 * skipped. An entry is one of:
 * - a SHA-256 of the certificate's key (SPKI) or of the certificate itself: 64 hex digits, any
 *   case, bare or in colon pairs, optionally after `sha256:` or after `SHA256 Fingerprint=`
 *   (openssl's `x509 -fingerprint -sha256` line as printed);
 * - `jti:VALUE`, or a bare jti that is not made of hex digits and colons only.
 * Anything else is an error: a value of hex digits and colons that is not a whole SHA-256 (a
 * digest cut short, another hash) must never silently become a jti that revokes nothing.
 */
export function parseRevocationLine(raw: string): LineResult {
  const line = raw.replace(/(^|\s)#.*$/, "").trim();
  if (line === "") return null;
  const jtiPrefix = /^jti:(.*)$/i.exec(line);
  if (jtiPrefix) {
    const jti = (jtiPrefix[1] ?? "").trim();
    return JTI.test(jti) ? { jti } : { problem: "jti: needs a value of printable characters without blanks" };
  }
  const labelled = /^(?:sha256:|sha256 fingerprint=)\s*(.*)$/i.exec(line);
  if (labelled) {
    const digest = sha256Hex((labelled[1] ?? "").trim());
    return digest ? { digest } : { problem: "not a SHA-256 (64 hex digits, bare or in colon pairs)" };
  }
  if (HEX_AND_COLONS.test(line)) {
    const digest = sha256Hex(line);
    return digest
      ? { digest }
      : {
          problem:
            "not a SHA-256 (64 hex digits, bare or in colon pairs); write jti:VALUE for a jti of hex digits",
        };
  }
  if (/\s/.test(line)) return { problem: "one entry per line (a comment starts with # after a blank)" };
  return JTI.test(line) ? { jti: line } : { problem: "not a SHA-256 or a jti of printable characters" };
}

/** The whole file: every entry, or every line that does not parse (so one run shows them all). */
export function parseRevocations(text: string): ParsedRevocations {
  const digests = new Set<string>();
  const jtis = new Set<string>();
  const errors: RevocationLineError[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const r = parseRevocationLine(raw);
    if (r === null) return;
    if ("problem" in r) errors.push({ line: i + 1, problem: r.problem });
    else if ("digest" in r) digests.add(r.digest);
    else jtis.add(r.jti);
  });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, list: { digests, jtis } };
}

/** `validate-revocations FILE`: the lines a person reads, and whether the file is good. */
export function validateRevocationFile(file: string): { ok: boolean; lines: string[] } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    const code = e instanceof Error && "code" in e ? String(e.code) : "unreadable";
    return { ok: false, lines: [`${file}: cannot be read (${code})`] };
  }
  const r = parseRevocations(text);
  if (!r.ok) return { ok: false, lines: r.errors.map((e) => `${file}:${e.line}: ${e.problem}`) };
  return {
    ok: true,
    lines: [`${file}: valid (${r.list.digests.size} certificate digests, ${r.list.jtis.size} jti values)`],
  };
}

/** The list's state for health_check: its entries, and why it is not the file as it is now. */
export interface RevocationHealth {
  status: "ok" | "stale" | "unreadable";
  entries: number;
  /** While stale: the line numbers of the file that did not parse (the last good list is kept). */
  bad_lines?: number[];
}

export interface RevocationEvents {
  /** Entries that appeared (after an unreadable spell: everything now listed). */
  onRevoked: (added: Revocations) => void;
  /** A changed file that does not parse: the last good list stays in force. */
  onInvalid?: (errors: RevocationLineError[]) => void;
}

/**
 * The `--revoked FILE` list. Every check first compares the file's stat with the last read
 * (so a revocation takes effect on the very next request, not at the next poll); a poll also
 * notices changes while no request arrives and reports newly revoked entries, so their
 * sessions and grants end at once. A file that does not parse refuses to start; changed into
 * one that does not parse later, the last good list stays in force and the list reports
 * itself stale (health_check: degraded) until the file is good again. A file that cannot be
 * read fails closed: every credential counts as revoked until it can be read again.
 */
export class RevocationList {
  private list: Revocations = { digests: new Set(), jtis: new Set() };
  private stamp = "";
  private unreadable = false;
  private invalid: RevocationLineError[] | null = null;
  private readonly events: RevocationEvents;

  constructor(
    private readonly file: string,
    events: RevocationEvents | ((added: Revocations) => void),
    pollMs = 500,
  ) {
    this.events = typeof events === "function" ? { onRevoked: events } : events;
    this.refresh(true);
    if (this.unreadable) throw new Error(`The revocation list ${file} cannot be read.`);
    if (this.invalid)
      throw new Error(
        `The revocation list ${file} does not parse: ${this.invalid
          .slice(0, 5)
          .map((e) => `line ${e.line}: ${e.problem}`)
          .join("; ")}${this.invalid.length > 5 ? "; …" : ""}`,
      );
    watchFile(file, { interval: pollMs, persistent: false }, () => this.refresh(false));
  }

  /** Whether any of the ids is revoked (or the list is unreadable). */
  isRevoked(ids: CredentialIds): boolean {
    this.refresh(false);
    if (this.unreadable) return true;
    const { digests, jtis } = this.list;
    return (
      (ids.fingerprint !== undefined && digests.has(ids.fingerprint.toLowerCase())) ||
      (ids.certFingerprint !== undefined && digests.has(ids.certFingerprint.toLowerCase())) ||
      (ids.jti !== undefined && jtis.has(ids.jti))
    );
  }

  get size(): number {
    return this.list.digests.size + this.list.jtis.size;
  }

  health(): RevocationHealth {
    this.refresh(false);
    if (this.unreadable) return { status: "unreadable", entries: this.size };
    if (this.invalid)
      return { status: "stale", entries: this.size, bad_lines: this.invalid.slice(0, 20).map((e) => e.line) };
    return { status: "ok", entries: this.size };
  }

  close(): void {
    unwatchFile(this.file);
  }

  private refresh(first: boolean): void {
    let stamp: string;
    try {
      const st = statSync(this.file);
      stamp = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    } catch {
      this.fail();
      return;
    }
    if (stamp === this.stamp && !this.unreadable) return;
    let text: string;
    try {
      text = readFileSync(this.file, "utf8");
    } catch {
      this.fail();
      return;
    }
    const wasUnreadable = this.unreadable;
    this.stamp = stamp;
    this.unreadable = false;
    const parsed = parseRevocations(text);
    if (!parsed.ok) {
      // Reported once per version of the file (the stamp), not on every request.
      this.invalid = parsed.errors;
      if (!first) this.events.onInvalid?.(parsed.errors);
      if (wasUnreadable) this.events.onRevoked(this.list);
      return;
    }
    this.invalid = null;
    const next = parsed.list;
    const added: Revocations = {
      digests: new Set([...next.digests].filter((d) => !this.list.digests.has(d))),
      jtis: new Set([...next.jtis].filter((j) => !this.list.jtis.has(j))),
    };
    this.list = next;
    // At start nothing is open yet that an entry could end.
    if (first) return;
    // After an unreadable spell everything was refused anyway; report what is revoked now.
    if (wasUnreadable) this.events.onRevoked(next);
    else if (added.digests.size + added.jtis.size > 0) this.events.onRevoked(added);
  }

  private fail(): void {
    this.unreadable = true;
    this.stamp = "";
  }
}
