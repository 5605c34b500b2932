import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ClientIdentity } from "../supervisor/access/clientIdentity.js";
import { newCorrelationId } from "../supervisor/audit.js";
import { endClient, type SessionView, supervisorFor } from "../supervisor/mcp/multiSession.js";
import type { Supervisor } from "../supervisor/supervisor.js";
import type { Authenticated } from "./authenticate.js";
import type { RemoteOptions } from "./options.js";
import type { Revocations } from "./revocation.js";

const MAX_REMEMBERED_CREDENTIALS = 4096;
const MAX_JTIS_PER_SESSION = 256;

export interface Session {
  id: string | undefined;
  identity: ClientIdentity;
  view: SessionView;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  lastActive: number;
  inflight: number;
  /** The certificate handles (SPKI and certificate SHA-256) its requests presented. */
  digests: Set<string>;
  jtis: Set<string>;
  closed: boolean;
}

export interface SessionDeps {
  shared: Supervisor;
  createServer: (view: Supervisor) => McpServer;
  clock: () => number;
  remoteHealth: NonNullable<Supervisor["remoteHealth"]>;
}

/**
 * The open MCP sessions: opening (bound to the identity that initialized), finding (another
 * identity's id is as unknown as a made-up one), idle expiry, and what a revocation ends.
 */
export class RemoteSessions {
  private readonly byId = new Map<string, Session>();
  /** Sessions whose initialize is being answered (they have no id yet). */
  private readonly pending = new Set<Session>();
  /** Which identity each credential handle was last seen proving, for revocation. */
  private readonly owners = new Map<string, ClientIdentity>();

  constructor(
    private readonly options: RemoteOptions,
    private readonly deps: SessionDeps,
  ) {}

  get size(): number {
    return this.byId.size;
  }

  /** The session `sid` if it exists and belongs to this identity. */
  find(sid: string, who: Authenticated): Session | null {
    const s = this.byId.get(sid);
    if (!s || s.closed || s.identity.hash !== who.identity.hash) return null;
    this.noteCredential(s, who);
    return s;
  }

  /** Why a new session for this identity cannot open now (with when to retry), or null. */
  refuseNew(who: Authenticated): { message: string; retryAfterMs: number } | null {
    if (this.byId.size + this.pending.size >= this.options.maxSessions)
      return {
        message: "This server has as many sessions as it serves.",
        retryAfterMs: this.retryAfter(this.byId.values()),
      };
    const own = [...this.byId.values(), ...this.pending].filter((x) => x.identity.hash === who.identity.hash);
    if (own.length >= this.options.maxSessionsPerIdentity)
      return {
        message: "This identity has as many sessions as one identity may have.",
        retryAfterMs: this.retryAfter(own),
      };
    return null;
  }

  /** Opens a session for `who` and answers its initialize request. */
  async open(req: IncomingMessage, res: ServerResponse, who: Authenticated, body: unknown): Promise<void> {
    const view = supervisorFor(this.deps.shared, who.identity, who.scope, {
      remoteHealth: this.deps.remoteHealth,
    });
    const server = this.deps.createServer(view);
    const s: Session = {
      id: undefined,
      identity: who.identity,
      view,
      server,
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomBytes(32).toString("base64url"),
        onsessioninitialized: (id) => {
          s.id = id;
          this.byId.set(id, s);
        },
      }),
      lastActive: this.deps.clock(),
      inflight: 1,
      digests: new Set(),
      jtis: new Set(),
      closed: false,
    };
    this.noteCredential(s, who);
    s.transport.onclose = () => this.close(s);
    this.pending.add(s);
    try {
      await server.connect(s.transport);
      await s.transport.handleRequest(req, res, body);
    } finally {
      this.pending.delete(s);
      s.inflight--;
      if (!s.id) this.close(s);
    }
  }

  /** A later request of an open session; only POSTs keep it alive. */
  async serve(s: Session, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    s.lastActive = this.deps.clock();
    // An open GET stream alone is idle: a client that went away without closing its TCP
    // connection must not hold a session slot for ever.
    if (req.method !== "POST") return s.transport.handleRequest(req, res, body);
    s.inflight++;
    try {
      await s.transport.handleRequest(req, res, body);
    } finally {
      s.inflight--;
      s.lastActive = this.deps.clock();
    }
  }

  close(s: Session): void {
    if (s.closed) return;
    s.closed = true;
    if (s.id) this.byId.delete(s.id);
    void s.server.close().catch(() => undefined);
  }

  closeAll(): void {
    for (const s of [...this.byId.values()]) this.close(s);
  }

  /** Closes the sessions idle (no POST in flight, none for the idle timeout) at `now`. */
  sweep(now: number): void {
    for (const s of [...this.byId.values()])
      if (s.inflight === 0 && now - s.lastActive >= this.options.idleTimeoutMs) this.close(s);
  }

  /**
   * Newly revoked entries: their sessions close, and every identity that used them loses what
   * it holds (grants, tokens, kept decisions, open dialogs); one audit event per identity.
   */
  revoke(added: Revocations): void {
    const ended = new Map<string, { identity: ClientIdentity; sessions: number }>();
    const note = (who: ClientIdentity, closed: number) => {
      const e = ended.get(who.hash) ?? { identity: who, sessions: 0 };
      e.sessions += closed;
      ended.set(who.hash, e);
    };
    for (const d of added.digests) {
      const owner = this.owners.get(`d:${d}`);
      if (owner) note(owner, 0);
      // A certificate identity is known from its key digest alone, seen or not.
      if (this.options.clientCaFile && !this.options.oauth)
        note(ClientIdentity.verified({ method: "mtls", fingerprint: d }, null), 0);
    }
    for (const j of added.jtis) {
      const owner = this.owners.get(`j:${j}`);
      if (owner) note(owner, 0);
    }
    for (const s of [...this.byId.values()]) {
      const hit =
        [...s.digests].some((d) => added.digests.has(d)) || [...s.jtis].some((j) => added.jtis.has(j));
      if (!hit) continue;
      this.close(s);
      note(s.identity, 1);
    }
    for (const { identity, sessions } of ended.values()) this.endIdentity(identity, sessions);
  }

  private endIdentity(identity: ClientIdentity, closed: number): void {
    const { shared } = this.deps;
    const r = endClient(shared, identity.hash);
    if (closed + r.grants + r.tokens + r.decisions === 0) return;
    shared.audit.record(
      {
        correlation_id: newCorrelationId(),
        client: identity.auditId,
        policy_id: shared.policyState.status === "ok" ? shared.policyState.policy.policy_id : null,
        action: "none",
        tool: "credential_revocation",
        outcome: "deny",
        reason: "credential_revoked",
        duration_ms: 0,
        pid: null,
        process_start: null,
        counters: { sessions: closed, grants: r.grants, tokens: r.tokens, decisions: r.decisions },
      },
      identity.hash,
    );
  }

  /** Remembers the credential handles a session's requests used; a later token can only narrow its scope. */
  private noteCredential(s: Session, who: Authenticated): void {
    const handles = [who.ids.fingerprint, who.ids.certFingerprint].filter(
      (d): d is string => d !== undefined,
    );
    for (const d of handles) {
      s.digests.add(d);
      this.remember(`d:${d}`, who.identity);
    }
    if (who.ids.jti) {
      s.jtis.add(who.ids.jti);
      if (s.jtis.size > MAX_JTIS_PER_SESSION) s.jtis.delete(s.jtis.values().next().value as string);
      this.remember(`j:${who.ids.jti}`, who.identity);
    }
    if (who.scope && s.id !== undefined) s.view.narrowScope(who.scope);
  }

  private remember(handle: string, who: ClientIdentity): void {
    this.owners.delete(handle);
    this.owners.set(handle, who);
    if (this.owners.size > MAX_REMEMBERED_CREDENTIALS)
      this.owners.delete(this.owners.keys().next().value as string);
  }

  /** When the first of these sessions would expire if it stays idle (at least 1 s). */
  private retryAfter(candidates: Iterable<Session>): number {
    const now = this.deps.clock();
    let soonest = this.options.idleTimeoutMs;
    for (const s of candidates)
      if (s.inflight === 0)
        soonest = Math.min(soonest, Math.max(1000, s.lastActive + this.options.idleTimeoutMs - now));
    return soonest;
  }
}
