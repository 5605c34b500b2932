import { randomBytes } from "node:crypto";
import { uiError } from "../shared/errors.js";
import type { ProcessInstance } from "../shared/identity.js";
import type { A11yNodeOut } from "../shared/protocol.js";
import type { Logger } from "./log.js";
import type { ResolvedTarget } from "./targets.js";
import type { WorkerHost } from "./workerHost.js";

interface SessionRecord {
  tag: string;
  /** Opaque key the uia worker knows the session by (shared by the instance's windows). */
  key: string;
  client: string;
  instanceKey: string;
  instance: ProcessInstance;
  hwnd: string;
}

/**
 * Automation sessions as the supervisor sees them: one per (client, process instance) grant,
 * known to the uia worker by one session key. The worker holds a provider session per window
 * of that instance under the key, so each (grant, window) gets its own tag here: element refs
 * handed to clients are `<tag>.<worker ref>` (e.g. `s3.e12`), and a ref names the window its
 * node belongs to. When a session ends its tags are forgotten and every ref under them is
 * stale, even if the worker hands out the same inner ref again later.
 */
export class A11ySessions {
  private readonly byTag = new Map<string, SessionRecord>();
  /** `${client}:${instanceKey}:${hwnd}` → record. */
  private readonly byWindow = new Map<string, SessionRecord>();
  /** `${client}:${instanceKey}` → the worker's session key for that grant. */
  private readonly keys = new Map<string, { client: string; instanceKey: string; key: string }>();
  private nextTag = 1;

  constructor(
    private readonly uia: WorkerHost,
    private readonly log: Logger,
  ) {
    // A restarted uia worker has no sessions: every ref it handed out is stale.
    uia.onTeardown(() => this.forgetAll());
  }

  sessionFor(client: string, target: ResolvedTarget): SessionRecord {
    const gk = `${client}:${target.instanceKey}`;
    const wk = `${gk}:${target.window.hwnd}`;
    const existing = this.byWindow.get(wk);
    if (existing) return existing;
    const tag = `s${this.nextTag++}`;
    let key = this.keys.get(gk)?.key;
    if (key === undefined) {
      key = `${tag}-${randomBytes(6).toString("hex")}`;
      this.keys.set(gk, { client, instanceKey: target.instanceKey, key });
    }
    const rec: SessionRecord = {
      tag,
      key,
      client,
      instanceKey: target.instanceKey,
      instance: target.instance,
      hwnd: target.window.hwnd,
    };
    this.byTag.set(tag, rec);
    this.byWindow.set(wk, rec);
    return rec;
  }

  /** Finds the session of an external ref; refs of another client are as stale as dead ones. */
  lookupRef(ref: string, client: string): SessionRecord & { inner: string } {
    const m = /^(s\d+)\.(.+)$/.exec(ref);
    if (!m) throw uiError("element_stale");
    const rec = this.byTag.get(m[1]);
    if (!rec || rec.client !== client) throw uiError("element_stale");
    return { ...rec, inner: m[2] };
  }

  externalize<T extends A11yNodeOut>(rec: SessionRecord, node: T): T {
    const walk = (n: A11yNodeOut): A11yNodeOut => ({
      ...n,
      ref: `${rec.tag}.${n.ref}`,
      children: n.children.map(walk),
    });
    return walk(node) as T;
  }

  /** Ends every session of an instance (revocation, release, expiry, identity change). */
  disposeByInstance(instanceKey: string, client?: string): void {
    const keys = new Set<string>();
    for (const rec of [...this.byTag.values()]) {
      if (rec.instanceKey !== instanceKey || (client && rec.client !== client)) continue;
      this.forget(rec);
      keys.add(rec.key);
    }
    for (const [gk, k] of [...this.keys]) {
      if (k.instanceKey !== instanceKey || (client && k.client !== client)) continue;
      this.keys.delete(gk);
      keys.add(k.key);
    }
    for (const key of keys) {
      this.uia
        .call("a11y.dispose", { session_key: key }, { deadlineMs: 5000 })
        .catch(() => this.log.debug({ event: "a11y_dispose_failed" }, "a11y_dispose_failed"));
    }
  }

  get size(): number {
    return this.byTag.size;
  }

  private forget(rec: SessionRecord): void {
    this.byTag.delete(rec.tag);
    this.byWindow.delete(`${rec.client}:${rec.instanceKey}:${rec.hwnd}`);
  }

  private forgetAll(): void {
    this.byTag.clear();
    this.byWindow.clear();
    this.keys.clear();
  }
}
