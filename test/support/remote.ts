import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { expect } from "vitest";
import type { Desk } from "./consent.js";
import { CLI, callToolOn, LOOSE_BUDGETS, okOn, type ToolCall } from "./mcp.js";

/** Helpers for the remote-mode tests: openssl PKI, jose tokens, the built CLI on 127.0.0.1. */

const openssl = (args: string[], cwd: string) => execFileSync("openssl", args, { cwd, stdio: "pipe" });

export interface CertFiles {
  cert: string;
  key: string;
}

/** `openssl req` with a new P-256 key `name.key`, subject CN=name, writing `out`. */
function newKeyRequest(name: string, out: string, extra: string[]): string[] {
  const key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${name}.key`];
  return ["req", ...extra, ...key, "-out", out, "-subj", `/CN=${name}`];
}

/** A CA (P-256) in `dir` with its name as file prefix. */
export function makeCa(dir: string, name: string): CertFiles {
  openssl(newKeyRequest(name, `${name}.crt`, ["-x509", "-days", "3"]), dir);
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/** A leaf signed by `ca`, valid for `days`; `ext` adds x509v3 extensions (e.g. the server's SAN). */
export function makeLeaf(dir: string, ca: CertFiles, name: string, days: number, ext?: string): CertFiles {
  openssl(newKeyRequest(name, `${name}.csr`, []), dir);
  const extArgs: string[] = [];
  if (ext) {
    writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
    extArgs.push("-extfile", `${name}.ext`);
  }
  openssl(
    ["x509", "-req", "-in", `${name}.csr`, "-CA", ca.cert, "-CAkey", ca.key, "-CAcreateserial"].concat([
      "-out",
      `${name}.crt`,
      "-days",
      String(days),
      ...extArgs,
    ]),
    dir,
  );
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/** The SPKI SHA-256 of a certificate, computed by openssl (independently of the server's code). */
export function opensslSpkiFingerprint(certFile: string): string {
  const der = execFileSync("sh", [
    "-c",
    `openssl x509 -in '${certFile}' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -r`,
  ]).toString("utf8");
  return der.trim().split(/\s+/)[0] ?? "";
}

export interface TlsClient {
  cert?: string;
  key?: string;
  ca: string;
}

/** fetch over node:https with a client certificate (the global fetch cannot present one without undici). */
export function tlsFetch(tls: TlsClient): typeof fetch {
  const cert = tls.cert ? readFileSync(tls.cert) : undefined;
  const key = tls.key ? readFileSync(tls.key) : undefined;
  const ca = readFileSync(tls.ca);
  return ((input: string | URL | Request, init?: RequestInit) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const headers: Record<string, string> = {};
      new Headers(init?.headers).forEach((v, k) => {
        headers[k] = v;
      });
      const req = httpsRequest(
        url,
        { method: init?.method ?? "GET", headers, cert, key, ca, agent: false },
        (res) => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers))
            if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(", ") : v);
          const status = res.statusCode ?? 500;
          const body = status === 204 || status === 202 ? null : (Readable.toWeb(res) as ReadableStream);
          if (body === null) res.resume();
          resolve(new Response(body, { status, headers: h }));
        },
      );
      req.on("error", reject);
      init?.signal?.addEventListener("abort", () => req.destroy(new Error("aborted")));
      if (typeof init?.body === "string") req.end(init.body);
      else req.end();
    })) as typeof fetch;
}

export interface RemoteServerProc {
  url: string;
  proc: ChildProcess;
  stderr: string[];
  stop(): Promise<void>;
}

/**
 * The built CLI as `serve --http 127.0.0.1:0 …` on the desk (null: the session's own desktop,
 * with the policy in `env`); resolves once it says where it listens.
 */
export async function startRemote(
  desk: Desk | null,
  args: string[],
  env: Record<string, string> = {},
): Promise<RemoteServerProc> {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith("DESKTOP_AUTOMATION_") && !k.startsWith("UIINSPECT_")) base[k] = v;
  const simulated: Record<string, string> = desk
    ? {
        UIINSPECT_PLATFORM: "fake",
        UIINSPECT_FAKE_DESKTOP: desk.fake.path,
        DESKTOP_AUTOMATION_POLICY_FILE: desk.policy(),
      }
    : {};
  const proc = spawn(process.execPath, [CLI, "serve", "--http", "127.0.0.1:0", ...args], {
    env: {
      ...base,
      UIINSPECT_LOG_LEVEL: "warn",
      ...simulated,
      ...LOOSE_BUDGETS,
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const stderr: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    proc.stderr?.on("data", (d: Buffer) => {
      stderr.push(d.toString("utf8"));
      const m = /listening on (\S+)/.exec(stderr.join(""));
      if (m?.[1]) resolve(m[1]);
    });
    proc.once("exit", (code) => reject(new Error(`server exited (${code}): ${stderr.join("")}`)));
  });
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = new Promise<void>((r) => proc.once("exit", () => r()));
    proc.kill("SIGTERM");
    await gone;
  };
  return { url, proc, stderr, stop };
}

/** Runs the CLI to completion (for configurations that must refuse to start). */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, UIINSPECT_PLATFORM: "fake", ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    proc.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString("utf8");
    });
    proc.once("exit", (code) => resolve({ code, stderr }));
  });
}

/** An MCP client over Streamable HTTP, with a client certificate and/or a Bearer token. */
export class RemoteClient {
  private constructor(
    readonly client: Client,
    readonly transport: StreamableHTTPClientTransport,
  ) {}

  static async connect(url: string, auth: { tls?: TlsClient; token?: string }): Promise<RemoteClient> {
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      ...(auth.tls ? { fetch: tlsFetch(auth.tls) } : {}),
      ...(auth.token ? { requestInit: { headers: { authorization: `Bearer ${auth.token}` } } } : {}),
    });
    const client = new Client({ name: "remote-test", version: "1.0.0" });
    await client.connect(transport);
    return new RemoteClient(client, transport);
  }

  get sessionId(): string | undefined {
    return this.transport.sessionId;
  }

  call(name: string, args: Record<string, unknown> = {}): Promise<ToolCall> {
    return callToolOn(this.client, name, args);
  }

  ok(name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    return okOn(this.client, name, args);
  }

  async close(): Promise<void> {
    await this.client.close().catch(() => undefined);
  }
}

/** A signing key pair made at test time and its public JWKS file. */
export async function makeIssuer(
  dir: string,
): Promise<{ jwksFile: string; sign: (claims: TokenClaims) => Promise<string> }> {
  const { publicKey, privateKey } = await generateKeyPair("ES256");
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: "test-key", alg: "ES256", use: "sig" };
  const jwksFile = join(dir, "jwks.json");
  writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }));
  const sign = async (c: TokenClaims) => {
    const now = Math.floor(Date.now() / 1000);
    const iat = c.iat ?? now;
    const jwt = new SignJWT({ scope: c.scope ?? "uiinspect:observe uiinspect:inspect" })
      .setProtectedHeader({ alg: "ES256", kid: "test-key" })
      .setIssuer(c.iss ?? ISSUER)
      .setAudience(c.aud ?? AUDIENCE)
      .setSubject(c.sub ?? "agent-1");
    if (c.iat !== null) jwt.setIssuedAt(iat);
    if (c.exp !== null) jwt.setExpirationTime(c.exp ?? iat + 600);
    if (c.jti !== null) jwt.setJti(c.jti ?? `jti-${Math.random().toString(16).slice(2)}`);
    if (c.nbf !== undefined) jwt.setNotBefore(c.nbf);
    return jwt.sign(privateKey);
  };
  return { jwksFile, sign };
}

export interface TokenClaims {
  iss?: string;
  aud?: string;
  sub?: string;
  scope?: string;
  /** null: no iat claim. */
  iat?: number | null;
  /** null: no exp claim. */
  exp?: number | null;
  nbf?: number;
  /** null: no jti at all. */
  jti?: string | null;
}

export const ISSUER = "https://idp.test.invalid";
export const AUDIENCE = "https://uiinspect.test.invalid/mcp";

/** What an MCP client sends first; `params` extra fields merged in. */
export function initializeMessage(params: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "raw", version: "1" },
      ...params,
    },
  };
}

/** A raw JSON-RPC POST, to see the HTTP status and headers an MCP client would get. */
export function postJsonRpc(
  url: string,
  message: unknown,
  headers: Record<string, string> = {},
  fetchImpl: typeof fetch = fetch,
): Promise<Response> {
  return fetchImpl(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body: JSON.stringify(message),
  });
}

/** A later request of session `sid` (tools/list). */
export function sessionRequest(
  url: string,
  sid: string,
  headers: Record<string, string> = {},
  fetchImpl: typeof fetch = fetch,
): Promise<Response> {
  const message = { jsonrpc: "2.0", id: 9, method: "tools/list", params: {} };
  return postJsonRpc(
    url,
    message,
    { "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18", ...headers },
    fetchImpl,
  );
}

export function rawInitialize(
  url: string,
  headers: Record<string, string> = {},
  params: Record<string, unknown> = {},
): Promise<Response> {
  return postJsonRpc(url, initializeMessage(params), headers);
}

/** A 429 whose JSON-RPC error carries rate_limited and a positive retry_after_ms, with Retry-After. */
export async function expectRateLimited(r: Response): Promise<void> {
  expect(r.status).toBe(429);
  const body = (await r.json()) as { error: { data: { code: string; retry_after_ms: number } } };
  expect(body.error.data.code).toBe("rate_limited");
  expect(body.error.data.retry_after_ms).toBeGreaterThan(0);
  expect(r.headers.get("retry-after")).toMatch(/^\d+$/);
}
