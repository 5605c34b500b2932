import { randomBytes } from "node:crypto";
import { createServer as createPlainServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import type { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { ClientIdentity } from "../supervisor/access/clientIdentity.js";
import { newCorrelationId } from "../supervisor/audit.js";
import type { Logger } from "../supervisor/log.js";
import { endClient, narrowPolicy, supervisorFor } from "../supervisor/mcp/multiSession.js";
import type { Capability } from "../supervisor/policy/schema.js";
import type { Supervisor } from "../supervisor/supervisor.js";
import { type Authenticated, METADATA_PATH, type Refused, RequestAuthenticator } from "./authenticate.js";
import { tlsServerOptions } from "./mtls.js";
import { protectedResourceMetadata } from "./oauth.js";
import { checkRemoteOptions, isLoopbackHost, type RemoteOptions } from "./options.js";
import { RevocationList } from "./revocation.js";

/** A running `serve --http`; close() is the one way to stop it (signals are the caller's business). */
export interface RemoteServer {
  /** The MCP endpoint, e.g. https://127.0.0.1:8765/mcp. */
  readonly url: string;
  sessionCount(): number;
  /** Closes every session, stops listening, drops every connection. Does not close the supervisor. */
  close(): Promise<void>;
}

export interface RemoteDeps {
  /** The one shared supervisor; every session gets a view of it. */
  supervisor: Supervisor;
  /** Builds an MCP server for one session's view (createMcpServer in production). */
  createServer: (view: Supervisor) => McpServer;
  log: Logger;
  clock?: () => number;
}

const MCP_PATH = "/mcp";
const MAX_REMEMBERED_CREDENTIALS = 4096;
const MAX_JTIS_PER_SESSION = 256;

interface Session {
  id: string | undefined;
  identity: ClientIdentity;
  scope: Set<Capability> | null;
  view: Supervisor;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  lastActive: number;
  inflight: number;
  fingerprint: string | undefined;
  jtis: Set<string>;
  closed: boolean;
}

/** A JSON-RPC error envelope, so MCP clients can show what went wrong; data.code is a stable UiError code when one fits. */
function refuse(res: ServerResponse, r: Omit<Refused, "ok"> & { retryAfterMs?: number }): void {
  if (res.headersSent) return;
  const data: Record<string, unknown> = {};
  if (r.code) data.code = r.code;
  if (r.retryAfterMs !== undefined) data.retry_after_ms = Math.ceil(r.retryAfterMs);
  const headers: Record<string, string> = { "content-type": "application/json", ...(r.headers ?? {}) };
  if (r.retryAfterMs !== undefined)
    headers["retry-after"] = String(Math.max(1, Math.ceil(r.retryAfterMs / 1000)));
  res.writeHead(r.status, headers);
  res.end(
    JSON.stringify({
      jsonrpc: "2.0",
      error: { code: -32000, message: r.message, ...(Object.keys(data).length ? { data } : {}) },
      id: null,
    }),
  );
}

/**
 * `uiinspect-mcp serve --http`: MCP Streamable HTTP at /mcp, one MCP session per client
 * (session ids from the CSPRNG), every request authenticated (mTLS and/or OAuth Bearer),
 * checked against the revocation list, Host/Origin-validated, body-capped and counted
 * against global caps on sessions and in-flight requests. Sessions are bound to the identity
 * that opened them: another identity presenting the id gets "not found".
 */
export async function startRemoteServer(options: RemoteOptions, deps: RemoteDeps): Promise<RemoteServer> {
  const problem = checkRemoteOptions(options);
  if (problem) throw new Error(problem);
  const clock = deps.clock ?? Date.now;
  const shared = deps.supervisor;
  const scheme = options.tls ? "https" : "http";
  const sessions = new Map<string, Session>();
  /** Sessions whose initialize is being answered (they have no id yet). */
  const pending = new Set<Session>();
  let inFlight = 0;
  let port = options.port;
  const tlsSockets = new Set<TLSSocket>();
  /** Which identity each credential (fingerprint / jti) was last seen proving, for revocation. */
  const owners = new Map<string, ClientIdentity>();

  const remember = (id: string | undefined, who: ClientIdentity) => {
    if (id === undefined) return;
    owners.delete(id);
    owners.set(id, who);
    if (owners.size > MAX_REMEMBERED_CREDENTIALS) owners.delete(owners.keys().next().value as string);
  };

  const closeSession = (s: Session) => {
    if (s.closed) return;
    s.closed = true;
    if (s.id) sessions.delete(s.id);
    void s.server.close().catch(() => undefined);
  };

  const onRevoked = (added: ReadonlySet<string>) => {
    const ended = new Map<string, { identity: ClientIdentity; sessions: number }>();
    const note = (who: ClientIdentity, closed: number) => {
      const e = ended.get(who.hash) ?? { identity: who, sessions: 0 };
      e.sessions += closed;
      ended.set(who.hash, e);
    };
    for (const id of added) {
      const owner = owners.get(id);
      if (owner) note(owner, 0);
      // A certificate identity is known from its fingerprint alone, seen or not.
      if (/^[0-9a-f]{64}$/.test(id) && options.clientCaFile && !options.oauth)
        note(ClientIdentity.verified({ method: "mtls", fingerprint: id }, null), 0);
    }
    for (const s of [...sessions.values()]) {
      const hit =
        (s.fingerprint !== undefined && added.has(s.fingerprint)) || [...s.jtis].some((j) => added.has(j));
      if (!hit) continue;
      closeSession(s);
      note(s.identity, 1);
    }
    for (const sock of tlsSockets) {
      const fp = auth.fingerprintOf(sock);
      if (fp !== undefined && added.has(fp)) sock.destroy();
    }
    const policyId = shared.policyState.status === "ok" ? shared.policyState.policy.policy_id : null;
    for (const { identity, sessions: closed } of ended.values()) {
      const r = endClient(shared, identity.hash);
      if (closed + r.grants + r.tokens + r.decisions === 0) continue;
      shared.audit.record({
        correlation_id: newCorrelationId(),
        client: identity.auditId,
        policy_id: policyId,
        action: "none",
        tool: "credential_revocation",
        outcome: "deny",
        reason: "credential_revoked",
        duration_ms: 0,
        pid: null,
        process_start: null,
        counters: { sessions: closed, grants: r.grants, tokens: r.tokens, decisions: r.decisions },
      });
    }
  };
  const revoked = options.revokedFile ? new RevocationList(options.revokedFile, onRevoked) : null;
  const auth = new RequestAuthenticator(options, {
    clock,
    isRevoked: (ids) => revoked?.isRevoked(ids) ?? false,
    port: () => port,
  });

  const loopbackHosts = () => {
    const set = new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
    set.add(options.host.includes(":") ? `[${options.host}]:${port}` : `${options.host}:${port}`);
    return set;
  };
  const ownOrigins = () => {
    const out = new Set(options.allowedOrigins);
    const hosts = isLoopbackHost(options.host) ? loopbackHosts() : new Set([`${options.host}:${port}`]);
    for (const h of hosts) out.add(`${scheme}://${h}`);
    return out;
  };

  async function readBody(req: IncomingMessage, res: ServerResponse): Promise<unknown | typeof TOO_LARGE> {
    const declared = Number(req.headers["content-length"] ?? "0");
    if (Number.isFinite(declared) && declared > options.maxBodyBytes) return TOO_LARGE;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > options.maxBodyBytes) return TOO_LARGE;
      chunks.push(chunk);
    }
    if (res.destroyed) return TOO_LARGE;
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  }

  /** When the first of these sessions would expire if it stays idle (at least 1 s). */
  function retryAfterForSessions(candidates: Iterable<Session>): number {
    const now = clock();
    let soonest = options.idleTimeoutMs;
    for (const s of candidates)
      if (s.inflight === 0)
        soonest = Math.min(soonest, Math.max(1000, s.lastActive + options.idleTimeoutMs - now));
    return soonest;
  }

  async function openSession(req: IncomingMessage, res: ServerResponse, auth: Authenticated, body: unknown) {
    const view = supervisorFor(shared, auth.identity, auth.scope);
    const server = deps.createServer(view);
    const s: Session = {
      id: undefined,
      identity: auth.identity,
      scope: auth.scope,
      view,
      server,
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomBytes(32).toString("base64url"),
        onsessioninitialized: (id) => {
          s.id = id;
          sessions.set(id, s);
        },
      }),
      lastActive: clock(),
      inflight: 1,
      fingerprint: auth.ids.fingerprint,
      jtis: new Set(auth.ids.jti ? [auth.ids.jti] : []),
      closed: false,
    };
    s.transport.onclose = () => closeSession(s);
    pending.add(s);
    try {
      await server.connect(s.transport);
      await s.transport.handleRequest(req, res, body);
    } finally {
      pending.delete(s);
      s.inflight--;
      if (!s.id) closeSession(s);
    }
  }

  async function handleMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const who = await auth.authenticate(req);
    if (!who.ok) return refuse(res, who);
    remember(who.ids.fingerprint, who.identity);
    remember(who.ids.jti, who.identity);
    const isPost = req.method === "POST";
    if (isPost) {
      if (inFlight >= options.maxInFlight)
        return refuse(res, {
          status: 429,
          code: "rate_limited",
          message: "Too many requests in flight.",
          retryAfterMs: 1000,
        });
      inFlight++;
      res.once("close", () => inFlight--);
    }
    let body: unknown;
    if (isPost) {
      try {
        body = await readBody(req, res);
      } catch {
        return refuse(res, {
          status: 400,
          code: "invalid_argument",
          message: "The request body is not JSON.",
        });
      }
      if (body === TOO_LARGE) {
        // The rest of the body is never read: the connection closes after the answer, so no
        // client reuses a socket whose request was cut off.
        return refuse(res, {
          status: 413,
          code: "invalid_argument",
          message: `Request bodies are capped at ${options.maxBodyBytes} bytes.`,
          headers: { connection: "close" },
        });
      }
    }
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string") {
      const s = sessions.get(sid);
      // Another identity's session id is as unknown as a made-up one.
      if (!s || s.closed || s.identity.hash !== who.identity.hash)
        return refuse(res, { status: 404, message: "Session not found." });
      s.lastActive = clock();
      if (who.ids.jti) {
        s.jtis.add(who.ids.jti);
        if (s.jtis.size > MAX_JTIS_PER_SESSION) s.jtis.delete(s.jtis.values().next().value as string);
      }
      if (who.scope) {
        // A later token can only narrow what the session may do, never widen it.
        const scope: Set<Capability> = new Set([...(s.scope ?? who.scope)].filter((c) => who.scope?.has(c)));
        s.scope = scope;
        s.view.policyState = narrowPolicy(shared.policyState, scope);
      }
      // Only POSTs keep a session alive: an open GET stream alone is idle (a client that went
      // away without closing its TCP connection must not hold a session slot for ever).
      if (!isPost) return s.transport.handleRequest(req, res, body);
      s.inflight++;
      try {
        await s.transport.handleRequest(req, res, body);
      } finally {
        s.inflight--;
        s.lastActive = clock();
      }
      return;
    }
    const initializing =
      isPost && (Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body));
    if (!initializing) return refuse(res, { status: 400, message: "No session: send initialize first." });
    if (sessions.size + pending.size >= options.maxSessions)
      return refuse(res, {
        status: 429,
        code: "rate_limited",
        message: "This server has as many sessions as it serves.",
        retryAfterMs: retryAfterForSessions(sessions.values()),
      });
    // One identity cannot take every slot from the others.
    const own = [...sessions.values(), ...pending].filter((x) => x.identity.hash === who.identity.hash);
    if (own.length >= options.maxSessionsPerIdentity)
      return refuse(res, {
        status: 429,
        code: "rate_limited",
        message: "This identity has as many sessions as one identity may have.",
        retryAfterMs: retryAfterForSessions(own),
      });
    await openSession(req, res, who, body);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // DNS-rebinding defence: on loopback the Host must be a loopback name, and a browser's
    // Origin must be one of ours (or allowed by the operator). Clients without Origin pass.
    if (isLoopbackHost(options.host) && !loopbackHosts().has(String(req.headers.host ?? "")))
      return refuse(res, { status: 403, message: "Host not allowed." });
    const origin = req.headers.origin;
    if (origin !== undefined && !ownOrigins().has(origin))
      return refuse(res, { status: 403, message: "Origin not allowed." });
    const path = (req.url ?? "/").split("?")[0];
    if (path === METADATA_PATH || path === `${METADATA_PATH}${MCP_PATH}`) {
      if (!options.oauth || req.method !== "GET") return refuse(res, { status: 404, message: "Not found." });
      res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=300" });
      res.end(JSON.stringify(protectedResourceMetadata(options.oauth)));
      return;
    }
    if (path !== MCP_PATH) return refuse(res, { status: 404, message: "Not found." });
    await handleMcp(req, res);
  }

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch(() => {
      // Never the exception's text: it can carry request content.
      deps.log.error({}, "http_request_failed");
      refuse(res, { status: 500, message: "Internal error." });
    });
  };
  const server = options.tls
    ? createTlsServer(
        tlsServerOptions({
          certFile: options.tls.certFile,
          keyFile: options.tls.keyFile,
          clientCaFile: options.clientCaFile,
        }),
        listener,
      )
    : createPlainServer(listener);
  server.headersTimeout = 30_000;
  server.requestTimeout = 0; // SSE streams stay open; idle sessions are ended by the sweeper
  if (options.tls) {
    server.on("secureConnection", (sock: TLSSocket) => {
      tlsSockets.add(sock);
      sock.once("close", () => tlsSockets.delete(sock));
    });
    // Handshake failures (no certificate, another CA) are the client's; keep them out of the log's error level.
    server.on("tlsClientError", () => deps.log.debug({}, "tls_client_refused"));
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;

  const sweep = setInterval(
    () => {
      const now = clock();
      for (const s of [...sessions.values()])
        if (s.inflight === 0 && now - s.lastActive >= options.idleTimeoutMs) closeSession(s);
    },
    Math.max(250, Math.min(options.idleTimeoutMs / 2, 30_000)),
  );
  sweep.unref();

  let closing: Promise<void> | null = null;
  return {
    url: `${scheme}://${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}${MCP_PATH}`,
    sessionCount: () => sessions.size,
    close: () => {
      closing ??= (async () => {
        clearInterval(sweep);
        revoked?.close();
        for (const s of [...sessions.values()]) closeSession(s);
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      })();
      return closing;
    },
  };
}

const TOO_LARGE: unique symbol = Symbol("too large");
