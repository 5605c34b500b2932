import { randomBytes } from "node:crypto";
import { isUiError, UiError, uiError } from "../shared/errors.js";
import type { ProcessInstance } from "../shared/identity.js";
import type { Env, LeaseScope } from "./endpoint.js";
import { createLinkOpener, type LeaseLink, type LinkHandlers, type LinkOpener } from "./link.js";
import {
  encodeFrame,
  FrameDecoder,
  LEASE_PROTOCOL_VERSION,
  type LeaseCapability,
  LeaseResponseSchema,
  type LeaseStatus,
  LeaseStatusSchema,
  RevokeResultSchema,
  ValidateResultSchema,
} from "./protocol.js";

/**
 * The lease broker's client, for the MCP server (UIINSPECT_LEASE=broker) and the manager CLI.
 * No native code on the calling thread (link.ts). One persistent connection, requests multiplexed by id, every
 * request with a deadline. It fails closed: an unreachable, slow or confused broker is
 * `broker_unavailable`; no lease, a revoked or an expired one is `lease_revoked`.
 */

export interface LeaseClientOptions {
  env?: Env;
  /** Defaults to resolveScope(env) on first use. */
  scope?: LeaseScope;
  /** Deadline of validate/status/revoke round trips (ms). */
  timeoutMs?: number;
}

/** What health_check shows: no secrets, no identities. */
export interface LeaseHealth {
  reachable: boolean;
  active: boolean;
  expires_at: string | null;
  capabilities: LeaseCapability[];
}

type Pending = {
  resolve: (v: unknown) => void;
  reject: (e: UiError) => void;
  timer: NodeJS.Timeout;
};

export type LeaseClientRequest =
  | { op: "validate"; capability: LeaseCapability; instance: ProcessInstance }
  | { op: "status" }
  | { op: "revoke" }
  | { op: "activate"; hours: number; capabilities: LeaseCapability[] }
  | { op: "extend"; hours: number };

export const DEFAULT_LEASE_TIMEOUT_MS = 2000;

export class LeaseClient {
  private readonly env: Env;
  private scope: LeaseScope | null;
  private readonly timeoutMs: number;
  private link: LeaseLink | null = null;
  private connecting: Promise<LeaseLink> | null = null;
  private opener: Promise<LinkOpener> | null = null;
  private readonly pending = new Map<string, Pending>();
  private readonly prefix = randomBytes(4).toString("hex");
  private seq = 0;
  private closed = false;

  constructor(opts: LeaseClientOptions = {}) {
    this.env = opts.env ?? process.env;
    this.scope = opts.scope ?? null;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_LEASE_TIMEOUT_MS;
  }

  /** Resolves "ok" when the lease covers `capability` for exactly this live process instance. */
  async validate(capability: LeaseCapability, instance: ProcessInstance): Promise<"ok"> {
    const result = await this.request({ op: "validate", capability, instance });
    const parsed = ValidateResultSchema.safeParse(result);
    if (!parsed.success) throw uiError("broker_unavailable", "The broker answered something unexpected.");
    return "ok";
  }

  /** Lease facts for health_check; never throws. */
  async status(): Promise<LeaseHealth> {
    try {
      const s = await this.statusDetail();
      return { reachable: true, active: s.active, expires_at: s.expires_at, capabilities: s.capabilities };
    } catch {
      return { reachable: false, active: false, expires_at: null, capabilities: [] };
    }
  }

  async statusDetail(timeoutMs?: number): Promise<LeaseStatus> {
    const parsed = LeaseStatusSchema.safeParse(await this.request({ op: "status" }, timeoutMs));
    if (!parsed.success) throw uiError("broker_unavailable", "The broker answered something unexpected.");
    return parsed.data;
  }

  async revoke(): Promise<boolean> {
    const parsed = RevokeResultSchema.safeParse(await this.request({ op: "revoke" }));
    if (!parsed.success) throw uiError("broker_unavailable", "The broker answered something unexpected.");
    return parsed.data.revoked;
  }

  /** Sends one request; rejects with the broker's error code, or broker_unavailable. */
  async request(req: LeaseClientRequest, timeoutMs: number = this.timeoutMs): Promise<unknown> {
    if (this.closed) throw uiError("broker_unavailable", "The lease client is closed.");
    const id = `${this.prefix}-${++this.seq}`;
    let link: LeaseLink;
    try {
      link = await this.connect(timeoutMs);
    } catch (e) {
      throw isUiError(e) && e.code === "broker_unavailable" ? e : uiError("broker_unavailable");
    }
    let frame: Buffer;
    try {
      frame = encodeFrame({ v: LEASE_PROTOCOL_VERSION, id, timeout_ms: timeoutMs, ...req });
    } catch {
      throw uiError("invalid_argument", "The lease request is too large.");
    }
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(uiError("broker_unavailable", "The lease broker did not answer in time."));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      link.write(frame);
    });
  }

  /** Gets the first connection's groundwork going (Windows: starts the link worker). */
  prepare(): void {
    this.getOpener().then(
      (o) => o.prepare(),
      () => {},
    );
  }

  /** Closes the connection; resolves once it is closed (Windows: the link worker has let go of the pipe). */
  async close(): Promise<void> {
    this.closed = true;
    this.drop();
    const opener = await this.opener?.catch(() => null);
    await opener?.dispose();
  }

  private getOpener(): Promise<LinkOpener> {
    this.opener ??= createLinkOpener(this.scope);
    return this.opener;
  }

  private connect(timeoutMs: number): Promise<LeaseLink> {
    if (this.link) return Promise.resolve(this.link);
    if (this.connecting) return this.connecting;
    const decoder = new FrameDecoder();
    let mine: LeaseLink | null = null;
    const handlers: LinkHandlers = {
      data: (chunk) => {
        let messages: unknown[];
        try {
          messages = decoder.push(chunk);
        } catch {
          this.drop();
          return;
        }
        for (const m of messages) this.onMessage(m);
      },
      closed: () => {
        if (mine && this.link === mine) this.drop();
      },
    };
    const connecting = this.getOpener()
      .then((opener) => opener.open({ scope: this.scope, env: this.env, timeoutMs }, handlers))
      .then(({ link, scope }) => {
        mine = link;
        this.scope = scope;
        if (this.closed) {
          link.destroy();
          throw uiError("broker_unavailable", "The lease client is closed.");
        }
        this.link = link;
        return link;
      })
      .finally(() => {
        if (this.connecting === connecting) this.connecting = null;
      });
    this.connecting = connecting;
    return connecting;
  }

  private onMessage(raw: unknown): void {
    const parsed = LeaseResponseSchema.safeParse(raw);
    if (!parsed.success) {
      this.drop();
      return;
    }
    const msg = parsed.data;
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    if (msg.ok) p.resolve(msg.result);
    else p.reject(new UiError(msg.error.code, msg.error.message));
  }

  /** Closes the connection; every pending request fails closed. */
  private drop(): void {
    const l = this.link;
    this.link = null;
    l?.destroy();
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(uiError("broker_unavailable"));
    }
  }
}
