import { type Stats, statSync } from "node:fs";
import { SETTINGS } from "../../shared/settings.js";
import { readText } from "../../shared/settingsReader.js";
import { loadPolicy, type PolicyState, policyStatusAt } from "./load.js";

/**
 * Notices when the operator's policy changes while the server runs: the policy file's stat
 * (mtime, size, inode) is compared every `intervalMs`, and a changed file is loaded again (a file
 * that no longer validates becomes an error state: fail closed). Expiry is noticed the same way.
 * Listeners learn that the policy state changed; the tool listing follows from it.
 */
export class PolicyWatcher {
  private timer: NodeJS.Timeout | null = null;
  private fileKey: string | null;
  private lastStatus: string;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly env: Record<string, string | undefined>,
    private readonly now: () => Date,
    private readonly get: () => PolicyState,
    private readonly set: (s: PolicyState) => void,
  ) {
    this.fileKey = this.statKey();
    this.lastStatus = this.statusKey();
  }

  private statKey(): string | null {
    const path = readText(this.env, SETTINGS.policyFile);
    if (path === null) return null;
    let st: Stats;
    try {
      st = statSync(path);
    } catch {
      return "missing";
    }
    return `${st.mtimeMs}:${st.size}:${st.ino}`;
  }

  private statusKey(): string {
    const s = policyStatusAt(this.get(), this.now);
    return s.status === "ok"
      ? `ok:${s.policy.policy_id ?? ""}`
      : s.status === "error"
        ? `error:${s.code}`
        : "none";
  }

  /** One look: reloads a changed file and tells the listeners when the state changed. */
  check(): void {
    const key = this.statKey();
    let changed = false;
    if (key !== this.fileKey) {
      this.fileKey = key;
      this.set(loadPolicy(this.env, this.now));
      changed = true;
    }
    const status = this.statusKey();
    if (status !== this.lastStatus) {
      this.lastStatus = status;
      changed = true;
    }
    if (changed) for (const l of this.listeners) l();
  }

  start(intervalMs: number): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => this.check(), intervalMs);
    this.timer.unref();
  }

  /** Calls `listener` after every change; returns the way to stop. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.listeners.clear();
  }
}
