import { randomBytes } from "node:crypto";
import { uiError } from "../../shared/errors.js";
import { FairShare } from "../../shared/fairShare.js";
import type { ProcessInstance } from "../../shared/identity.js";
import type { A11yNodeOut, OpArgs, OpName, OpResult } from "../../shared/protocol.js";
import { IdleRetirement, type IdleTime, REAL_TIME } from "../hosting/idleRetirement.js";
import type { CallOptions, Isolation, WorkerHost, WorkerStats } from "../hosting/workerHost.js";
import type { Logger } from "../log.js";
import type { ResolvedTarget } from "./targets.js";

export interface SessionRecord {
  tag: string;
  /**
   * Opaque key the instance's uia worker files this identity's sessions and refs under (one per
   * identity and instance, shared by the instance's windows).
   */
  key: string;
  client: string;
  instanceKey: string;
  instance: ProcessInstance;
  hwnd: string;
}

/** One identity on an instance's worker: its key there, and when it last asked for anything. */
interface Member {
  client: string;
  key: string;
  /** Ends this identity's state in the worker once it has made no accessibility call for a while. */
  idle: IdleRetirement;
}

/** The one uia worker of a process instance, shared by every identity granted on it. */
interface InstanceWorker {
  instanceKey: string;
  host: GrantHost;
  members: Map<string, Member>;
  /** Admits its identities' calls in turn, so none waits behind another's backlog. */
  share: FairShare;
}

/**
 * Calls in flight on one instance's worker before the rest wait their identity's turn. The app
 * answers its accessibility calls one at a time on its main loop, so more calls in flight only
 * queue inside it; a few keep its pipe full (a walk sends hundreds of calls without waiting).
 */
const SHARED_WORKER_WINDOW = 4;

/** What the sessions need of a worker host (a narrow face, so tests can stand one in). */
export type GrantHost = Pick<WorkerHost, "call" | "close" | "warm" | "onTeardown" | "stats">;

export interface A11ySessionsOptions {
  /** An identity idle this long on an instance loses its sessions there; a worker with none left stops (0 = never). */
  idleRetireMs: number;
  time?: IdleTime;
}

type A11yOp = Extract<OpName, `a11y.${string}`>;

/**
 * Automation sessions as the supervisor sees them. Each granted process instance has one uia
 * worker (its own COM apartment / AT-SPI connection), shared by every identity granted on it:
 * a hung or crashing provider takes down only that instance's worker (every call in flight on
 * it fails with worker_crashed or worker_timeout, and it restarts), and a further identity on
 * an instance costs a few map entries instead of a worker.
 *
 * Refs are namespaced per identity twice over. Here, each (identity, instance, window) gets its
 * own tag, and refs handed to clients are `<tag>.<worker ref>` (e.g. `s3.e12`): a tag resolves
 * only for the identity it was made for. In the worker, each (identity, instance) has its own
 * session key, and a worker ref exists only under the key whose walk minted it. Revoking,
 * releasing or retiring one identity ends its key (`a11y.dispose`) and forgets its tags; the
 * others' refs live on. The worker ends when no identity is left on the instance, and with the
 * instance: a changed identity is another instance key, and the old one's grants are revoked.
 * When a session ends, its tags are forgotten and every ref under them is stale, even if a new
 * worker hands out the same inner ref again later.
 *
 * An identity that has made no accessibility call on an instance for `idleRetireMs` has its
 * state there dropped like at revocation (its refs become `element_stale`, its next call starts
 * afresh); a worker left with no identity is stopped (its isolate, its provider connection).
 */
export class A11ySessions {
  private readonly byTag = new Map<string, SessionRecord>();
  /** `${client}:${instanceKey}:${hwnd}` → record. */
  private readonly byWindow = new Map<string, SessionRecord>();
  /** instanceKey → that instance's worker. */
  private readonly instances = new Map<string, InstanceWorker>();
  private nextTag = 1;
  private retired: WorkerStats;
  /** Identities whose state was dropped for idleness (health_check). */
  private idleRetirements = 0;
  private readonly idleRetireMs: number;
  private readonly time: IdleTime;

  constructor(
    private readonly makeHost: () => GrantHost,
    private readonly log: Logger,
    isolation: Isolation,
    opts: A11ySessionsOptions,
  ) {
    this.idleRetireMs = opts.idleRetireMs;
    this.time = opts.time ?? REAL_TIME;
    this.retired = {
      kind: "uia",
      state: "stopped",
      restarts: 0,
      crashes: 0,
      timeouts: 0,
      inflight: 0,
      isolation,
    };
  }

  sessionFor(client: string, target: ResolvedTarget): SessionRecord {
    const ik = target.instanceKey;
    const wk = `${client}:${ik}:${target.window.hwnd}`;
    const existing = this.byWindow.get(wk);
    const tag = existing ? existing.tag : `s${this.nextTag++}`;
    const w = this.instances.get(ik) ?? this.startWorker(ik);
    const m = w.members.get(client) ?? this.join(w, client, tag);
    // Asking for a session counts as use: its call follows, so it is not retired between.
    m.idle.touch();
    if (existing) return existing;
    const rec: SessionRecord = {
      tag,
      key: m.key,
      client,
      instanceKey: ik,
      instance: target.instance,
      hwnd: target.window.hwnd,
    };
    this.byTag.set(tag, rec);
    this.byWindow.set(wk, rec);
    return rec;
  }

  /**
   * The session this identity already has on the instance's window, or null; nothing is made or
   * touched (an observation sent ahead of its authorization uses only what exists).
   */
  existing(client: string, instanceKey: string, hwnd: string): SessionRecord | null {
    const rec = this.byWindow.get(`${client}:${instanceKey}:${hwnd}`);
    return rec && this.holderOf(rec) ? rec : null;
  }

  /** The worker and identity a record is still under, or null (its identity left, its tag forgotten). */
  private holderOf(rec: SessionRecord): { w: InstanceWorker; m: Member } | null {
    const w = this.instances.get(rec.instanceKey);
    const m = w?.members.get(rec.client);
    return w && m && m.key === rec.key && this.byTag.has(rec.tag) ? { w, m } : null;
  }

  /** Calls the uia worker that holds this session. */
  call<K extends A11yOp>(
    rec: SessionRecord,
    op: K,
    args: OpArgs<K>,
    opts: CallOptions,
  ): Promise<OpResult<K>> {
    const held = this.holderOf(rec);
    if (!held) throw uiError("element_stale");
    return held.m.idle.around(() =>
      held.w.share.run(rec.client, opts.signal, () => {
        // Asked again at its turn: a call that waited may have outlived its session (the
        // identity released or retired, the worker crashed and its refs went stale); it must
        // not reach the worker, least of all a restarted one.
        if (this.holderOf(rec)?.w !== held.w) throw uiError("element_stale");
        return held.w.host.call(op, args, opts);
      }),
    );
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

  /**
   * Ends sessions on an instance (revocation, release, expiry, identity change): one identity's
   * when `client` is given (the worker stays while another identity is on it), else everyone's
   * and the worker with them.
   */
  disposeByInstance(instanceKey: string, client?: string): void {
    const w = this.instances.get(instanceKey);
    if (!w) return;
    if (client === undefined) {
      this.endWorker(w);
      return;
    }
    const m = w.members.get(client);
    if (m) this.leave(w, m);
  }

  /** Ends every automation session (and so every ref) of one client, whatever the instance. */
  disposeByClient(client: string): void {
    for (const w of [...this.instances.values()]) {
      const m = w.members.get(client);
      if (m) this.leave(w, m);
    }
  }

  /** All instance workers together, for health_check (`sessions`: identities on instances). */
  stats(): WorkerStats & { sessions: number; workers: number; idle_retirements: number; queued: number } {
    const all = [...this.instances.values()];
    const live = all.map((w) => w.host.stats());
    const sum = (k: "restarts" | "crashes" | "timeouts" | "inflight") =>
      this.retired[k] + live.reduce((n, s) => n + s[k], 0);
    return {
      kind: "uia",
      state: live.some((s) => s.state === "ready") ? "ready" : "stopped",
      restarts: sum("restarts"),
      crashes: sum("crashes"),
      timeouts: sum("timeouts"),
      inflight: sum("inflight"),
      isolation: live[0]?.isolation ?? this.retired.isolation,
      sessions: all.reduce((n, w) => n + w.members.size, 0),
      workers: all.length,
      idle_retirements: this.idleRetirements,
      queued: all.reduce((n, w) => n + w.share.load().waiting, 0),
    };
  }

  async closeAll(): Promise<void> {
    const hosts = [...this.instances.values()].map((w) => w.host);
    for (const w of [...this.instances.values()]) this.forgetWorker(w);
    await Promise.all(hosts.map((h) => h.close()));
  }

  private join(w: InstanceWorker, client: string, tag: string): Member {
    const m: Member = {
      client,
      key: `${tag}-${randomBytes(6).toString("hex")}`,
      idle: new IdleRetirement(
        this.idleRetireMs,
        () => {
          if (this.instances.get(w.instanceKey) !== w || w.members.get(client) !== m) return;
          this.idleRetirements += 1;
          this.log.info({ kind: "uia" }, "uia_session_retired_idle");
          this.leave(w, m);
        },
        this.time,
      ),
    };
    w.members.set(client, m);
    return m;
  }

  /**
   * One identity leaves an instance: its tags are forgotten (its refs stale here), the worker
   * drops its key's sessions, and a worker left with no identity is stopped.
   */
  private leave(w: InstanceWorker, m: Member): void {
    this.forgetMember(w, m);
    if (w.members.size === 0) {
      this.endWorker(w, m.key);
      return;
    }
    w.host
      .call("a11y.dispose", { session_key: m.key }, { deadlineMs: 2000 })
      .catch(() => this.log.debug({}, "a11y_dispose_failed"));
  }

  /** Forgets the instance's sessions (every ref stale), lets its worker release politely, ends it. */
  private endWorker(w: InstanceWorker, lastKey?: string): void {
    const keys = [...w.members.values()].map((m) => m.key);
    if (lastKey !== undefined) keys.push(lastKey);
    this.forgetWorker(w);
    // Let the worker release provider objects (COM pointers, D-Bus) politely, then end it.
    Promise.all(
      keys.map((k) =>
        w.host
          .call("a11y.dispose", { session_key: k }, { deadlineMs: 2000 })
          .catch(() => this.log.debug({}, "a11y_dispose_failed")),
      ),
    ).finally(() => void w.host.close());
  }

  private startWorker(instanceKey: string): InstanceWorker {
    const host = this.makeHost();
    const w: InstanceWorker = {
      instanceKey,
      host,
      members: new Map(),
      share: new FairShare(SHARED_WORKER_WINDOW),
    };
    // A crashed or hung worker has lost its sessions: every ref it handed out is stale. The
    // identities stay on the instance and the host stays, so the next call restarts the worker
    // with the host's backoff (a worker that keeps crashing is not restarted in a tight loop).
    host.onTeardown(() => {
      if (this.instances.get(instanceKey) !== w) return;
      for (const m of w.members.values()) this.forgetTags(w.instanceKey, m.client);
    });
    this.instances.set(instanceKey, w);
    host.warm();
    return w;
  }

  private forgetMember(w: InstanceWorker, m: Member): void {
    m.idle.stop();
    if (w.members.get(m.client) === m) w.members.delete(m.client);
    this.forgetTags(w.instanceKey, m.client);
  }

  /** Every tag of one identity on one instance is forgotten: its refs are stale from now on. */
  private forgetTags(instanceKey: string, client: string): void {
    for (const rec of [...this.byTag.values()]) {
      if (rec.instanceKey !== instanceKey || rec.client !== client) continue;
      this.byTag.delete(rec.tag);
      this.byWindow.delete(`${rec.client}:${rec.instanceKey}:${rec.hwnd}`);
    }
  }

  private forgetWorker(w: InstanceWorker): void {
    if (this.instances.get(w.instanceKey) !== w) return;
    const s = w.host.stats();
    this.retired = {
      ...this.retired,
      restarts: this.retired.restarts + s.restarts,
      crashes: this.retired.crashes + s.crashes,
      timeouts: this.retired.timeouts + s.timeouts,
      isolation: s.isolation,
    };
    for (const m of [...w.members.values()]) this.forgetMember(w, m);
    this.instances.delete(w.instanceKey);
  }
}
