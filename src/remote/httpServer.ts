import { createServer as createPlainServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import type { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { SERVER_EVENT_KEY } from "../supervisor/audit.js";
import type { Logger } from "../supervisor/log.js";
import type { Supervisor } from "../supervisor/supervisor.js";
import { Admission } from "./admission.js";
import { type Authenticated, METADATA_PATH, type Refused, RequestAuthenticator } from "./authenticate.js";
import { readJsonBody } from "./body.js";
import { tlsServerOptions } from "./mtls.js";
import { protectedResourceMetadata } from "./oauth.js";
import { checkRemoteOptions, isLoopbackHost, type RemoteOptions } from "./options.js";
import { type RevocationLineError, RevocationList, type Revocations } from "./revocation.js";
import { RemoteSessions } from "./sessions.js";

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

/** A JSON-RPC error envelope, so MCP clients can show what went wrong; data.code is a stable UiError code when one fits. */
function refuse(res: ServerResponse, r: Omit<Refused, "ok"> & { retryAfterMs?: number }): void {
  if (res.headersSent) return;
  const data: Record<string, unknown> = {};
  if (r.code) data.code = r.code;
  if (r.retryAfterMs !== undefined) data.retry_after_ms = Math.ceil(r.retryAfterMs);
  const headers: Record<string, string> = { "content-type": "application/json", ...(r.headers ?? {}) };
  if (r.retryAfterMs !== undefined)
    headers["retry-after"] = String(Math.max(1, Math.ceil(r.retryAfterMs / 1000)));
  // A refusal that closes the connection advertises no idle time.
  if (headers.connection === "close") res.removeHeader("keep-alive");
  res.writeHead(r.status, headers);
  res.end(
    JSON.stringify({
      jsonrpc: "2.0",
      error: { code: -32000, message: r.message, ...(Object.keys(data).length ? { data } : {}) },
      id: null,
    }),
  );
}

const rateLimited = (message: string, retryAfterMs = 1000) => ({
  status: 429,
  code: "rate_limited",
  message,
  retryAfterMs,
});

/** What a body that could not be read is answered with; the connection closes after it. */
const BODY_REFUSALS = {
  too_large: (max: number) => ({
    status: 413,
    code: "invalid_argument",
    message: `Request bodies are capped at ${max} bytes.`,
  }),
  timeout: () => ({ status: 408, message: "The request body did not arrive in time." }),
  not_json: () => ({ status: 400, code: "invalid_argument", message: "The request body is not JSON." }),
  aborted: () => ({ status: 400, message: "The request body was cut off." }),
} as const;

/** Host and Origin checks (the DNS-rebinding defence): the names this server answers to. */
function originChecks(options: RemoteOptions, scheme: string, port: () => number) {
  /** The sets for one port (known once listening), made once per port instead of per request. */
  let made: { port: number; hosts: Set<string>; origins: Set<string> } | null = null;
  const forPort = () => {
    const p = port();
    if (made?.port === p) return made;
    const hosts = new Set([`127.0.0.1:${p}`, `localhost:${p}`, `[::1]:${p}`]);
    hosts.add(options.host.includes(":") ? `[${options.host}]:${p}` : `${options.host}:${p}`);
    const origins = new Set(options.allowedOrigins);
    for (const h of isLoopbackHost(options.host) ? hosts : [`${options.host}:${p}`])
      origins.add(`${scheme}://${h}`);
    made = { port: p, hosts, origins };
    return made;
  };
  const loopbackHosts = () => forPort().hosts;
  const ownOrigins = () => forPort().origins;
  /** Why the request must be refused before anything else, or null. */
  return (req: IncomingMessage): string | null => {
    // On loopback the Host must be a loopback name, and a browser's Origin must be one of ours
    // (or allowed by the operator). Clients without Origin pass.
    if (isLoopbackHost(options.host) && !loopbackHosts().has(String(req.headers.host ?? "")))
      return "Host not allowed.";
    const origin = req.headers.origin;
    if (origin !== undefined && !ownOrigins().has(origin)) return "Origin not allowed.";
    return null;
  };
}

/** The revocation list with its consequences wired: sessions ended, TLS connections dropped, a bad reload reported. */
function revocationList(
  options: RemoteOptions,
  deps: RemoteDeps,
  onRevoked: (added: Revocations) => void,
): RevocationList | null {
  if (!options.revokedFile) return null;
  const onInvalid = (errors: RevocationLineError[]) => {
    // Line numbers and counts only: the list's text stays in the file.
    deps.log.warn({ bad_lines: errors.slice(0, 20).map((e) => e.line) }, "revocation_list_invalid_kept_last");
    deps.supervisor.audit.record(
      {
        correlation_id: "000000000000",
        client: "000000000000",
        policy_id: null,
        action: "none",
        tool: "revocation_list",
        outcome: "error",
        reason: "invalid_argument",
        duration_ms: 0,
        pid: null,
        process_start: null,
        counters: { bad_lines: errors.length, first_bad_line: errors[0]?.line ?? 0, kept_entries: list.size },
      },
      // The server's own event: the file has it, no client's get_audit_events does.
      SERVER_EVENT_KEY,
    );
  };
  const list: RevocationList = new RevocationList(options.revokedFile, { onRevoked, onInvalid });
  return list;
}

/**
 * Idle keep-alive connections: what clients are told (`Keep-Alive: timeout=5`, node's own
 * default) and how long the server really keeps one. A client reuses a connection until the
 * advertised time less its own margin (undici: 2 s), but when this loop is late (a busy
 * supervisor) a request that arrived within that time can still be unread when the idle timer
 * is overdue: closing at exactly the advertised time then reset a request in hand, and the
 * client's POST failed with "fetch failed" (docs/benchmarks.md). The grace covers a loop that
 * is late by up to 10 s; idle connections are bounded per identity by admission.ts.
 */
export const KEEP_ALIVE_ADVERTISED_S = 5;
export const KEEP_ALIVE_GRACE_MS = 10_000;

/** Tells a keep-alive response's client the advertised idle time (node would advertise the real one). */
function advertiseKeepAlive(res: ServerResponse): void {
  if (!res.shouldKeepAlive) return;
  // With its own Connection header set, node adds no Keep-Alive header of its own; a later
  // `connection: close` (refusals) replaces both.
  res.setHeader("connection", "keep-alive");
  res.setHeader("keep-alive", `timeout=${KEEP_ALIVE_ADVERTISED_S}`);
}

/** The node:http(s) server with its read deadlines: headers (and TLS handshake) and, per request, the body. */
function createHttpServer(
  options: RemoteOptions,
  deps: RemoteDeps,
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  tlsSockets: Set<TLSSocket>,
) {
  const timing = {
    headersTimeout: options.headerTimeoutMs,
    // The body has its own deadline (body.ts); SSE answers stay open as long as they are useful.
    requestTimeout: 0,
    // How often node checks the headers deadline: often enough that it means seconds.
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(options.headerTimeoutMs / 4))),
  };
  const server = options.tls
    ? createTlsServer(
        {
          ...tlsServerOptions({
            certFile: options.tls.certFile,
            keyFile: options.tls.keyFile,
            clientCaFile: options.clientCaFile,
          }),
          handshakeTimeout: options.headerTimeoutMs,
          ...timing,
        },
        listener,
      )
    : createPlainServer(timing, listener);
  server.headersTimeout = options.headerTimeoutMs;
  server.requestTimeout = 0;
  server.keepAliveTimeout = KEEP_ALIVE_ADVERTISED_S * 1000 + KEEP_ALIVE_GRACE_MS;
  if (options.tls) {
    server.on("secureConnection", (sock: TLSSocket) => {
      tlsSockets.add(sock);
      sock.once("close", () => tlsSockets.delete(sock));
    });
    // Handshake failures (no certificate, another CA) are the client's; keep them out of the log's error level.
    server.on("tlsClientError", () => deps.log.debug({}, "tls_client_refused"));
  }
  return server;
}

/** Listens on the configured address; resolves with the bound port. */
function listen(server: ReturnType<typeof createHttpServer>, options: RemoteOptions): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/**
 * `uiinspect-mcp serve --http`: MCP Streamable HTTP at /mcp, one MCP session per client
 * (session ids from the CSPRNG), every request authenticated (mTLS and/or OAuth Bearer),
 * checked against the revocation list, Host/Origin-validated, read within deadlines,
 * body-capped and admitted fairly (admission.ts). Sessions are bound to the identity that
 * opened them: another identity presenting the id gets "not found".
 */
export async function startRemoteServer(options: RemoteOptions, deps: RemoteDeps): Promise<RemoteServer> {
  const problem = checkRemoteOptions(options);
  if (problem) throw new Error(problem);
  const clock = deps.clock ?? Date.now;
  const scheme = options.tls ? "https" : "http";
  let port = options.port;
  const tlsSockets = new Set<TLSSocket>();
  const admission = new Admission(options);
  let auth: RequestAuthenticator | null = null;
  const revoked = revocationList(options, deps, (added) => {
    sessions.revoke(added);
    for (const sock of tlsSockets) {
      const c = auth?.certificateOf(sock);
      if (c && (added.digests.has(c.fingerprint) || added.digests.has(c.certFingerprint))) sock.destroy();
    }
  });
  const remoteHealth = () => {
    const list = revoked?.health() ?? null;
    return { degraded: list !== null && list.status !== "ok", revocation_list: list };
  };
  const sessions = new RemoteSessions(options, {
    shared: deps.supervisor,
    createServer: deps.createServer,
    clock,
    remoteHealth,
  });
  auth = new RequestAuthenticator(options, {
    clock,
    isRevoked: (ids) => revoked?.isRevoked(ids) ?? false,
    port: () => port,
  });
  const handle = mcpHandler(
    options,
    auth,
    admission,
    sessions,
    originChecks(options, scheme, () => port),
  );
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    advertiseKeepAlive(res);
    handle(req, res).catch(() => {
      // Never the exception's text: it can carry request content.
      deps.log.error({}, "http_request_failed");
      refuse(res, { status: 500, message: "Internal error." });
    });
  };
  const server = createHttpServer(options, deps, listener, tlsSockets);
  port = await listen(server, options);
  const sweep = setInterval(
    () => sessions.sweep(clock()),
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
        sessions.closeAll();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      })();
      return closing;
    },
  };
}

/** Routing: Host/Origin first, then the RFC 9728 metadata, then /mcp. */
function mcpHandler(
  options: RemoteOptions,
  auth: RequestAuthenticator,
  admission: Admission,
  sessions: RemoteSessions,
  hostProblem: (req: IncomingMessage) => string | null,
) {
  const mcp = (req: IncomingMessage, res: ServerResponse) =>
    handleMcp(req, res, options, auth, admission, sessions);
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const bad = hostProblem(req);
    if (bad) return refuse(res, { status: 403, message: bad });
    const path = (req.url ?? "/").split("?")[0];
    if (path === METADATA_PATH || path === `${METADATA_PATH}${MCP_PATH}`) {
      if (!options.oauth || req.method !== "GET") return refuse(res, { status: 404, message: "Not found." });
      res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=300" });
      res.end(JSON.stringify(protectedResourceMetadata(options.oauth)));
      return;
    }
    if (path !== MCP_PATH) return refuse(res, { status: 404, message: "Not found." });
    await mcp(req, res);
  };
}

/**
 * One /mcp request: who it is (before any of the body is read), whether its connection fits
 * the identity's share, its body within the deadline, then admission (only now does it count
 * as in flight, until answered), then its session.
 */
async function handleMcp(
  req: IncomingMessage,
  res: ServerResponse,
  options: RemoteOptions,
  auth: RequestAuthenticator,
  admission: Admission,
  sessions: RemoteSessions,
): Promise<void> {
  const who = await auth.authenticate(req);
  if (!who.ok) return refuse(res, who);
  const conn = admission.bindConnection(req.socket, who.identity.hash);
  if (!conn.ok) return refuse(res, { ...rateLimited(conn.message), headers: { connection: "close" } });
  if (req.method !== "POST") return dispatch(req, res, who, undefined, sessions);
  const read = await readJsonBody(req, options.maxBodyBytes, options.bodyTimeoutMs);
  if (!read.ok) {
    // The rest of the body is never read: the connection closes after the answer, so no
    // client reuses a socket whose request was cut off.
    const r = BODY_REFUSALS[read.reason](options.maxBodyBytes);
    return refuse(res, { ...r, headers: { connection: "close" } });
  }
  const slot = admission.admit(who.identity.hash);
  if (!slot.ok) return refuse(res, rateLimited(slot.message));
  res.once("close", slot.release);
  await dispatch(req, res, who, read.body, sessions);
}

/** To the request's session, or a new one for an initialize. */
async function dispatch(
  req: IncomingMessage,
  res: ServerResponse,
  who: Authenticated,
  body: unknown,
  sessions: RemoteSessions,
): Promise<void> {
  const sid = req.headers["mcp-session-id"];
  if (typeof sid === "string") {
    // Another identity's session id is as unknown as a made-up one.
    const s = sessions.find(sid, who);
    if (!s) return refuse(res, { status: 404, message: "Session not found." });
    return sessions.serve(s, req, res, body);
  }
  const initializing =
    req.method === "POST" &&
    (Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body));
  if (!initializing) return refuse(res, { status: 400, message: "No session: send initialize first." });
  const full = sessions.refuseNew(who);
  if (full) return refuse(res, rateLimited(full.message, full.retryAfterMs));
  await sessions.open(req, res, who, body);
}
