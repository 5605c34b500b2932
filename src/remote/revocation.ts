import { readFileSync, statSync, unwatchFile, watchFile } from "node:fs";

/** A credential's revocation handles: the certificate key fingerprint and/or the token's jti. */
export interface CredentialIds {
  fingerprint?: string | undefined;
  jti?: string | undefined;
}

/**
 * Normalizes a line: SHA-256 fingerprints may be written upper-case, with colons or a
 * "sha256:" prefix (what openssl and browsers print); anything else is taken as a jti verbatim.
 */
function normalize(line: string): string {
  const t = line.trim();
  const hex = t.replace(/^sha256:/i, "").replace(/:/g, "");
  return /^[0-9a-fA-F]{64}$/.test(hex) ? hex.toLowerCase() : t;
}

/**
 * The `--revoked FILE` list. Every check first compares the file's stat with the last read
 * (so a revocation takes effect on the very next request, not at the next poll); a poll also
 * notices changes while no request arrives and reports newly revoked entries, so their
 * sessions and grants end at once. A file that cannot be read fails closed: every credential
 * counts as revoked until it can be read again.
 */
export class RevocationList {
  private entries = new Set<string>();
  private stamp = "";
  private unreadable = false;

  constructor(
    private readonly file: string,
    private readonly onRevoked: (added: ReadonlySet<string>) => void,
    pollMs = 500,
  ) {
    this.refresh();
    if (this.unreadable) throw new Error(`The revocation list ${file} cannot be read.`);
    watchFile(file, { interval: pollMs, persistent: false }, () => this.refresh());
  }

  /** Whether any of the ids is revoked (or the list is unreadable). */
  isRevoked(ids: CredentialIds): boolean {
    this.refresh();
    if (this.unreadable) return true;
    return (
      (ids.fingerprint !== undefined && this.entries.has(ids.fingerprint.toLowerCase())) ||
      (ids.jti !== undefined && this.entries.has(ids.jti))
    );
  }

  get size(): number {
    return this.entries.size;
  }

  close(): void {
    unwatchFile(this.file);
  }

  private refresh(): void {
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
    const next = new Set<string>();
    for (const line of text.split(/\r?\n/)) {
      if (line.trim() === "" || line.trim().startsWith("#")) continue;
      next.add(normalize(line));
    }
    const wasUnreadable = this.unreadable;
    const added = new Set([...next].filter((e) => !this.entries.has(e)));
    this.entries = next;
    this.stamp = stamp;
    this.unreadable = false;
    // After an unreadable spell everything was refused anyway; report what is revoked now.
    if (added.size > 0 || wasUnreadable) this.onRevoked(wasUnreadable ? next : added);
  }

  private fail(): void {
    this.unreadable = true;
    this.stamp = "";
  }
}
