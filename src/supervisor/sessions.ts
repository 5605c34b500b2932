import { randomBytes } from "node:crypto";
import { uiError } from "../shared/errors.js";
import type { ProcessInstance } from "../shared/identity.js";
import type { A11yNodeOut } from "../shared/protocol.js";
import type { Logger } from "./log.js";
import type { ResolvedTarget } from "./targets.js";
import type { WorkerHost } from "./workerHost.js";

interface SessionRecord {
  tag: string;
  /** Opaque key the uia worker knows the session by. */
  key: string;
  client: string;
  instanceKey: string;
  instance: ProcessInstance;
  hwnd: string;
}

/**
 * Automation sessions as the supervisor sees them: one per (client, process
 * instance) grant. Element refs handed to clients are `<session tag>.<worker ref>`
 * (e.g. `s3.e12`), so a ref names its session; when a session ends its tag is
 * forgotten and every ref under it is stale, even if the worker hands out the
 * same inner ref again later.
 */
export class A11ySessions {
  private readonly byTag = new Map<string, SessionRecord>();
  private readonly byGrant = new Map<string, SessionRecord>();
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
    const existing = this.byGrant.get(gk);
    if (existing) return existing;
    const tag = `s${this.nextTag++}`;
    const rec: SessionRecord = {
      tag,
      key: `${tag}-${randomBytes(6).toString("hex")}`,
      client,
      instanceKey: target.instanceKey,
      instance: target.instance,
      hwnd: target.window.hwnd,
    };
    this.byTag.set(tag, rec);
    this.byGrant.set(gk, rec);
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
    for (const rec of [...this.byTag.values()]) {
      if (rec.instanceKey !== instanceKey || (client && rec.client !== client)) continue;
      this.forget(rec);
      this.uia
        .call("a11y.dispose", { session_key: rec.key }, { deadlineMs: 5000 })
        .catch(() => this.log.debug({ event: "a11y_dispose_failed" }, "a11y_dispose_failed"));
    }
  }

  get size(): number {
    return this.byTag.size;
  }

  private forget(rec: SessionRecord): void {
    this.byTag.delete(rec.tag);
    this.byGrant.delete(`${rec.client}:${rec.instanceKey}`);
  }

  private forgetAll(): void {
    this.byTag.clear();
    this.byGrant.clear();
  }
}
