import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Desk, until, win } from "../support/consent.js";
import {
  AUDIENCE,
  expectRateLimited,
  ISSUER,
  initializeMessage,
  makeIssuer,
  postJsonRpc,
  RemoteClient,
  type RemoteServerProc,
  rawInitialize,
  runCli,
  sessionRequest,
  startRemote,
} from "../support/remote.js";
import { scratchDir } from "../support/scratch.js";

// OAuth 2.1 resource-server mode on plain loopback HTTP: Bearer JWTs signed at test time with
// jose, verified against a JWKS file; scopes narrow the policy; refusals are 401 + challenge.

let dir: string;
let desk: Desk;
let remote: RemoteServerProc;
let sign: Awaited<ReturnType<typeof makeIssuer>>["sign"];
let jwksFile: string;
let revokedFile: string;
let auditFile: string;
/** Every token signed for the main server, to prove none of them is ever written anywhere. */
const issued: string[] = [];
const open: RemoteClient[] = [];
const FULL = "uiinspect:observe uiinspect:inspect uiinspect:click uiinspect:text";

async function connect(token: string): Promise<RemoteClient> {
  const c = await RemoteClient.connect(remote.url, { token });
  open.push(c);
  return c;
}
const now = () => Math.floor(Date.now() / 1000);
const oauthArgs = () => ["--oauth-issuer", ISSUER, "--oauth-audience", AUDIENCE, "--oauth-jwks", jwksFile];

beforeAll(async () => {
  dir = scratchDir("oauth");
  const issuer = await makeIssuer(dir);
  jwksFile = issuer.jwksFile;
  sign = async (claims) => {
    const t = await issuer.sign(claims);
    issued.push(t);
    return t;
  };
  revokedFile = join(dir, "revoked.txt");
  writeFileSync(revokedFile, "");
  desk = new Desk([win(1), win(2)]);
  auditFile = join(dir, "audit.jsonl");
  remote = await startRemote(desk, [...oauthArgs(), "--revoked", revokedFile], {
    UIINSPECT_LOG_LEVEL: "debug",
    UIINSPECT_AUDIT_FILE: auditFile,
  });
}, 60_000);

afterAll(async () => {
  await Promise.all(open.map((c) => c.close()));
  await remote?.stop();
  // Tokens are never logged or audited (debug logging on): not the token, not its signature.
  const written = `${remote?.stderr.join("") ?? ""}\n${existsSync(auditFile) ? readFileSync(auditFile, "utf8") : ""}`;
  expect(issued.length).toBeGreaterThan(10);
  for (const t of issued) {
    expect(written).not.toContain(t);
    expect(written).not.toContain(t.split(".")[2]);
  }
});

async function expect401(r: Response, error?: string): Promise<void> {
  expect(r.status).toBe(401);
  const challenge = r.headers.get("www-authenticate") ?? "";
  expect(challenge).toMatch(/^Bearer /);
  // The audience is the resource identifier (a URL here), so the metadata lives under its origin.
  expect(challenge).toContain(
    `resource_metadata="https://uiinspect.test.invalid/.well-known/oauth-protected-resource/mcp"`,
  );
  if (error) expect(challenge).toContain(`error="${error}"`);
  else expect(challenge).not.toContain("error=");
}

describe("OAuth resource-server mode", () => {
  it("a valid token lists the tools", async () => {
    const c = await connect(await sign({ scope: FULL }));
    const { tools } = await c.client.listTools();
    expect(tools.length).toBeGreaterThan(10);
    expect((await c.ok("list_windows")).windows).toHaveLength(2);
  });

  it("publishes RFC 9728 protected-resource metadata", async () => {
    const r = await fetch(remote.url.replace(/\/mcp$/, "/.well-known/oauth-protected-resource"));
    expect(r.status).toBe(200);
    const doc = (await r.json()) as Record<string, unknown>;
    expect(doc).toMatchObject({
      resource: AUDIENCE,
      authorization_servers: [ISSUER],
      bearer_methods_supported: ["header"],
    });
    expect(doc.scopes_supported).toContain("uiinspect:click");
    // RFC 9728 §3.1: the path-suffixed location of a resource with a path serves the same document.
    const suffixed = await fetch(remote.url.replace(/\/mcp$/, "/.well-known/oauth-protected-resource/mcp"));
    expect(await suffixed.json()).toEqual(doc);
  });

  it("no token, wrong audience, wrong issuer, expired, over-long, no jti, no scope, revoked jti → 401 with a challenge", async () => {
    await expect401(await rawInitialize(remote.url));
    const bearer = async (claims: Parameters<typeof sign>[0]) =>
      rawInitialize(remote.url, { authorization: `Bearer ${await sign(claims)}` });
    await expect401(await bearer({ aud: "https://someone-else.invalid" }), "invalid_token");
    await expect401(await bearer({ iss: "https://other-idp.invalid" }), "invalid_token");
    await expect401(await bearer({ iat: now() - 1200, exp: now() - 600 }), "invalid_token");
    await expect401(await bearer({ exp: now() + 7200 }), "invalid_token");
    await expect401(await bearer({ nbf: now() + 600, exp: now() + 900 }), "invalid_token");
    await expect401(await bearer({ jti: null }), "invalid_token");
    await expect401(await bearer({ scope: "openid profile" }), "insufficient_scope");
    await expect401(await rawInitialize(remote.url, { authorization: "Bearer not.a.jwt" }), "invalid_token");
    writeFileSync(revokedFile, "jti-revoked-1\n");
    await expect401(await bearer({ jti: "jti-revoked-1" }), "invalid_token");
  });

  it("a token passed as a tool argument or in the body is not a credential", async () => {
    const full = await sign({ scope: FULL });
    // In the initialize request itself, without the header: refused.
    await expect401(
      await rawInitialize(remote.url, {}, { authorization: `Bearer ${full}`, access_token: full }),
    );
    // Inside a session of a narrower token: strict schemas refuse the extra argument, and the
    // session keeps the narrower token's scope.
    const c = await connect(await sign({ scope: "uiinspect:observe" }));
    expect((await c.call("list_windows", { access_token: full })).code).toBe("invalid_argument");
    expect(
      (await c.call("request_access", { hwnd: 1001, capabilities: ["click"], authorization: full })).code,
    ).toBe("invalid_argument");
    expect((await c.call("request_access", { hwnd: 1001, capabilities: ["click"] })).code).toBe(
      "action_not_allowed",
    );
  });

  it("scopes only narrow the policy: an observe-only token cannot get click", async () => {
    const c = await connect(await sign({ sub: "observer", scope: "uiinspect:observe" }));
    const r = await c.ok("request_access", { hwnd: 1002 });
    expect(r).toMatchObject({ decision: "approved", capabilities: ["observe"] });
    expect((await c.call("click_window", { hwnd: 1002, x: 40, y: 80 })).code).toBe("action_not_allowed");
  });

  it("Origin and Host are validated (DNS rebinding)", async () => {
    const token = await sign({ scope: FULL });
    const port = new URL(remote.url).port;
    // fetch decides Host and Origin itself; node:http sends what a rebinding browser would.
    const post = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify(initializeMessage());
        const req = httpRequest(
          remote.url,
          {
            method: "POST",
            headers: {
              authorization: `Bearer ${token}`,
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              ...headers,
            },
          },
          (res) => {
            res.destroy();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    expect(await post({ origin: "http://evil.example" })).toBe(403);
    expect(await post({ host: `evil.example:${port}`, origin: `http://evil.example:${port}` })).toBe(403);
    expect(await post({ host: `evil.example:${port}` })).toBe(403);
    expect(await post({ origin: `http://127.0.0.1:${port}` })).toBe(200);
    expect(await post({ origin: `http://localhost:${port}` })).toBe(200);
  });

  it("request bodies are capped", async () => {
    const token = await sign({ scope: FULL });
    const big = initializeMessage({ pad: "x".repeat(2 * 1024 * 1024) });
    const r = await postJsonRpc(remote.url, big, { authorization: `Bearer ${token}` }).catch(
      (e: unknown) => e,
    );
    // Either the 413 arrives or the server cut the upload off: never a session.
    if (r instanceof Response) expect(r.status).toBe(413);
    else expect(r).toBeInstanceOf(Error);
  });

  it("revoking a jti closes the sessions that used it and ends the identity's grants", async () => {
    const jti = "jti-live-2";
    const c = await connect(await sign({ sub: "to-revoke", scope: FULL, jti }));
    await c.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    const other = await connect(await sign({ sub: "bystander", scope: FULL }));
    writeFileSync(revokedFile, `jti-revoked-1\n${jti}\n`);
    await expect(
      (async () => {
        // The session is closed server-side: the next call fails (404 → the SDK throws).
        for (let i = 0; i < 200; i++) {
          await c.call("list_windows");
          await new Promise((r) => setTimeout(r, 50));
        }
      })(),
    ).rejects.toThrow();
    // A fresh token for the same subject starts over: no grant survived, a new dialog is needed.
    const again = await connect(await sign({ sub: "to-revoke", scope: FULL }));
    expect((await again.ok("get_access_state")).grants).toEqual([]);
    // The same identity reads its own audit: the credential's revocation and its grant's end.
    const events = (await again.ok("get_audit_events", { limit: 100 })).events as Array<
      Record<string, unknown>
    >;
    expect(events.find((e) => e.tool === "credential_revocation")).toMatchObject({
      reason: "credential_revoked",
      counters: { sessions: 1, grants: 1 },
    });
    expect(events.find((e) => e.tool === "revocation")).toMatchObject({
      reason: "credential_revoked",
      pid: 4001,
    });
    // The bystander sees none of it.
    const theirs = (await other.ok("get_audit_events", { limit: 100 })).events as Array<
      Record<string, unknown>
    >;
    expect(theirs.some((e) => e.tool === "credential_revocation" || e.tool === "request_access")).toBe(false);
    expect((await other.ok("list_windows")).windows).toHaveLength(2);
  });

  it("caps sessions per identity and globally with rate_limited + retry_after_ms; idle sessions expire", async () => {
    const small = await startRemote(desk, [
      ...oauthArgs(),
      "--max-sessions",
      "3",
      "--max-sessions-per-identity",
      "2",
      "--idle-timeout",
      "2",
    ]);
    try {
      const token = await sign({ sub: "crowd", scope: FULL });
      const init = () => rawInitialize(small.url, { authorization: `Bearer ${token}` });
      const initAs = async (sub: string) =>
        rawInitialize(small.url, { authorization: `Bearer ${await sign({ sub, scope: FULL })}` });
      const first = await init();
      const second = await init();
      expect([first.status, second.status]).toEqual([200, 200]);
      await Promise.all([first.body?.cancel(), second.body?.cancel()]);
      // The crowd's third session is refused; another identity still gets in…
      await expectRateLimited(await init());
      const loner = await initAs("loner");
      expect(loner.status).toBe(200);
      await loner.body?.cancel();
      // …until the server as a whole is full.
      await expectRateLimited(await initAs("late"));
      // Idle sessions expire and free their slots.
      const sid = String(first.headers.get("mcp-session-id"));
      let later = 429;
      for (let i = 0; i < 200 && later === 429; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const r = await init();
        later = r.status;
        await r.body?.cancel();
      }
      expect(later).toBe(200);
      const stale = await sessionRequest(small.url, sid, { authorization: `Bearer ${token}` });
      expect(stale.status).toBe(404);
    } finally {
      await small.stop();
    }
  });
});

describe("per-identity limits", () => {
  it("the per-client rate budget holds per identity across its sessions, and not across identities", async () => {
    const srv = await startRemote(desk, oauthArgs(), { UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "3" });
    const clients: RemoteClient[] = [];
    try {
      const as = async (sub: string) => {
        const c = await RemoteClient.connect(srv.url, { token: await sign({ sub, scope: FULL }) });
        clients.push(c);
        return c;
      };
      const x1 = await as("x");
      const x2 = await as("x");
      const y = await as("y");
      await x1.ok("list_windows");
      await x2.ok("list_windows");
      await x1.ok("list_windows");
      const limited = await x2.call("list_windows");
      expect(limited.code).toBe("rate_limited");
      expect(
        Number((limited.structured.error as { retry_after_ms?: number }).retry_after_ms),
      ).toBeGreaterThan(0);
      // Another identity has its own budget.
      expect((await y.call("list_windows")).isError).toBe(false);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await srv.stop();
    }
  });
});

describe("in-flight cap", () => {
  it("a request over the global in-flight cap is answered rate_limited with retry_after_ms", async () => {
    // The consent dialog waits 4 s, holding the first request in flight.
    const slow = new Desk([win(1)], { answer: "approve", delay_ms: 4000 });
    const srv = await startRemote(slow, [...oauthArgs(), "--max-inflight", "1"]);
    try {
      const c = await RemoteClient.connect(srv.url, { token: await sign({ sub: "busy", scope: FULL }) });
      const pending = c.call("request_access", { hwnd: 1001, capabilities: ["observe"] });
      await until(() => slow.prompts().length === 1, "the dialog to open");
      await expectRateLimited(
        await rawInitialize(srv.url, { authorization: `Bearer ${await sign({ sub: "late", scope: FULL })}` }),
      );
      expect((await pending).structured).toMatchObject({ decision: "approved" });
      await c.close();
    } finally {
      await srv.stop();
    }
  });
});

describe("refusing to start", () => {
  it("a non-loopback host without TLS refuses to start with a clear message (nothing is bound)", async () => {
    const r = await runCli(["serve", "--http", "0.0.0.0:0", ...oauthArgs()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/not loopback, without TLS/);
  });

  it("HTTP mode without any authenticator refuses to start", async () => {
    const r = await runCli(["serve", "--http", "127.0.0.1:0"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/only authenticated clients/);
  });

  it("a JWKS with private key material refuses to start", async () => {
    const { generateKeyPair, exportJWK } = await import("jose");
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const bad = join(dir, "private-jwks.json");
    writeFileSync(bad, JSON.stringify({ keys: [await exportJWK(privateKey)] }));
    const r = await runCli(
      [
        "serve",
        "--http",
        "127.0.0.1:0",
        "--oauth-issuer",
        ISSUER,
        "--oauth-audience",
        AUDIENCE,
        "--oauth-jwks",
        bad,
      ],
      {
        UIINSPECT_FAKE_DESKTOP: desk.fake.path,
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/private key material/);
  });
});
