import { randomBytes } from "node:crypto";
import { uiError } from "../../shared/errors.js";
import type { ProcessInstance } from "../../shared/identity.js";
import type { A11yNodeOut, OpArgs, OpName, OpResult } from "../../shared/protocol.js";
import { IdleRetirement, type IdleTime, REAL_TIME } from "../hosting/idleRetirement.js";
import type { CallOptions, Isolation, WorkerHost, WorkerStats } from "../hosting/workerHost.js";
import type { Logger } from "../log.js";
import type { ResolvedTarget } from "./targets.js";

export interface SessionRecord {
  tag: string;
  /** Opaque key the grant's uia worker knows the session by (shared by the instance's windows). */
  key: string;
  client: string;
  instanceKey: string;
  instance: ProcessInstance;
  hwnd: string;
}

/** One uia worker per (client, process instance) grant: its automation session lives there. */
interface GrantWorker {
  client: string;
  instanceKey: string;
  key: string;
  host: GrantHost;
  /** Stops the worker once the grant has made no accessibility call for a while. */
  idle: IdleRetirement;
}

/** What the sessions need of a worker host (a narrow face, so tests can stand one in). */
export type GrantHost = Pick<WorkerHost, "call" | "close" | "warm" | "onTeardown" | "stats">;

export interface A11ySessionsOptions {
  /** A grant's uia worker idle this long is retired (0 = never). */
  idleRetireMs: number;
  time?: IdleTime;
}

type A11yOp = Extract<OpName, `a11y.${string}`>;

/**
 * Automation sessions as the supervisor sees them. Each (client, process instance) grant
 * gets its own uia worker (its own COM apartment / AT-SPI connection), so a hung or
 * crashing provider takes down only its own grant's session, and revocation, release,
 * expiry or an identity change tears that worker down (docs/spec.md §2).
 *
 * The worker holds a provider session per window of the instance, so each (grant, window)
 * gets its own tag here: element refs handed to clients are `<tag>.<worker ref>` (e.g.
 * `s3.e12`), and a ref names the window its node belongs to. When a session ends, its tags
 * are forgotten and every ref under them is stale, even if a new worker hands out the same
 * inner ref again later.
 *
 * A grant whose worker has answered no accessibility call for `idleRetireMs` has it retired:
 * the worker (its isolate, its provider connection) is stopped like at revocation, its refs
 * become `element_stale`, and the grant's next call starts a fresh worker. A grant's worker
 * costs tens of MiB, and an agent that has not looked for minutes walks the tree again anyway.
 */
export class A11ySessions {
  private readonly byTag = new Map<string, SessionRecord>();
  /** `${client}:${instanceKey}:${hwnd}` → record. */
  private readonly byWindow = new Map<string, SessionRecord>();
  /** `${client}:${instanceKey}` → that grant's worker. */
  private readonly grants = new Map<string, GrantWorker>();
  private nextTag = 1;
  private retired: WorkerStats;
  /** Grant workers retired for idleness (health_check). */
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
    const gk = `${client}:${target.instanceKey}`;
    const wk = `${gk}:${target.window.hwnd}`;
    const existing = this.byWindow.get(wk);
    const tag = existing ? existing.tag : `s${this.nextTag++}`;
    const g = this.grants.get(gk) ?? this.startGrantWorker(gk, client, target.instanceKey, tag);
    // Asking for a session counts as use: its call follows, so the worker is not retired between.
    g.idle.touch();
    if (existing) return existing;
    const rec: SessionRecord = {
      tag,
      key: g.key,
      client,
      instanceKey: target.instanceKey,
      instance: target.instance,
      hwnd: target.window.hwnd,
    };
    this.byTag.set(tag, rec);
    this.byWindow.set(wk, rec);
    return rec;
  }

  /** Calls the uia worker that holds this session. */
  call<K extends A11yOp>(
    rec: SessionRecord,
    op: K,
    args: OpArgs<K>,
    opts: CallOptions,
  ): Promise<OpResult<K>> {
    const grant = this.grants.get(`${rec.client}:${rec.instanceKey}`);
    if (!grant || !this.byTag.has(rec.tag)) throw uiError("element_stale");
    return grant.idle.around(() => grant.host.call(op, args, opts));
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

  /** Ends every session of an instance (revocation, release, expiry, identity change) and its worker. */
  disposeByInstance(instanceKey: string, client?: string): void {
    for (const [gk, g] of [...this.grants]) {
      if (g.instanceKey !== instanceKey || (client && g.client !== client)) continue;
      this.endGrant(gk, g);
    }
  }

  /** Ends every automation session (and so every ref) of one client, whatever the instance. */
  disposeByClient(client: string): void {
    const instances = new Set(
      [...this.grants.values()].filter((g) => g.client === client).map((g) => g.instanceKey),
    );
    for (const ik of instances) this.disposeByInstance(ik, client);
  }

  /** All grant workers together, for health_check. */
  stats(): WorkerStats & { sessions: number; idle_retirements: number } {
    const live = [...this.grants.values()].map((g) => g.host.stats());
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
      sessions: this.grants.size,
      idle_retirements: this.idleRetirements,
    };
  }

  async closeAll(): Promise<void> {
    const hosts = [...this.grants.values()].map((g) => g.host);
    for (const gk of [...this.grants.keys()]) this.forgetGrant(gk);
    await Promise.all(hosts.map((h) => h.close()));
  }

  /** Forgets the grant's sessions (every ref stale), lets its worker release politely, ends it. */
  private endGrant(gk: string, g: GrantWorker): void {
    this.forgetGrant(gk);
    // Let the worker release provider objects (COM pointers, D-Bus) politely, then end it.
    g.host
      .call("a11y.dispose", { session_key: g.key }, { deadlineMs: 2000 })
      .catch(() => this.log.debug({}, "a11y_dispose_failed"))
      .finally(() => void g.host.close());
  }

  private startGrantWorker(gk: string, client: string, instanceKey: string, tag: string): GrantWorker {
    const host = this.makeHost();
    const grant: GrantWorker = {
      client,
      instanceKey,
      key: `${tag}-${randomBytes(6).toString("hex")}`,
      host,
      idle: new IdleRetirement(
        this.idleRetireMs,
        () => {
          if (this.grants.get(gk) !== grant) return;
          this.idleRetirements += 1;
          this.log.info({ kind: "uia" }, "uia_worker_retired_idle");
          this.endGrant(gk, grant);
        },
        this.time,
      ),
    };
    // A crashed or hung worker has lost its sessions: every ref it handed out is stale.
    host.onTeardown(() => {
      if (this.grants.get(gk) === grant) this.forgetGrant(gk);
    });
    this.grants.set(gk, grant);
    host.warm();
    return grant;
  }

  private forgetGrant(gk: string): void {
    const g = this.grants.get(gk);
    if (!g) return;
    const s = g.host.stats();
    this.retired = {
      ...this.retired,
      restarts: this.retired.restarts + s.restarts,
      crashes: this.retired.crashes + s.crashes,
      timeouts: this.retired.timeouts + s.timeouts,
      isolation: s.isolation,
    };
    g.idle.stop();
    this.grants.delete(gk);
    for (const rec of [...this.byTag.values()]) {
      if (`${rec.client}:${rec.instanceKey}` !== gk) continue;
      this.byTag.delete(rec.tag);
      this.byWindow.delete(`${gk}:${rec.hwnd}`);
    }
  }
}
