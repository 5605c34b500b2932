import { renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BearerVerifier, readPublicJwks, wwwAuthenticate } from "../../src/remote/oauth.js";
import { isLoopbackHost, parseHostPort, parseRemoteFlags } from "../../src/remote/options.js";
import { RevocationList } from "../../src/remote/revocation.js";
import { ClientIdentity } from "../../src/supervisor/access/clientIdentity.js";
import { narrowPolicy, supervisorFor } from "../../src/supervisor/mcp/multiSession.js";
import type { PolicyState } from "../../src/supervisor/policy/load.js";
import type { Supervisor } from "../../src/supervisor/supervisor.js";
import { AUDIENCE, ISSUER, makeIssuer } from "../support/remote.js";
import { scratchDir } from "../support/scratch.js";

const tmp = () => scratchDir("remote-unit");
const OAUTH = ["--oauth-issuer", ISSUER, "--oauth-audience", AUDIENCE, "--oauth-jwks", "/x/jwks.json"];

describe("remote flags", () => {
  it("no --http is stdio; stray remote flags without it are refused", () => {
    expect(parseRemoteFlags([])).toEqual({ ok: true, options: null });
    expect(parseRemoteFlags(["--client-ca", "ca.pem"])).toMatchObject({ ok: false });
    expect(parseRemoteFlags(["--bogus"])).toMatchObject({ ok: false });
  });

  it("parses HOST:PORT with 127.0.0.1 as the default host", () => {
    expect(parseHostPort("8765")).toEqual({ host: "127.0.0.1", port: 8765 });
    expect(parseHostPort(":8765")).toEqual({ host: "127.0.0.1", port: 8765 });
    expect(parseHostPort("0.0.0.0:1")).toEqual({ host: "0.0.0.0", port: 1 });
    expect(parseHostPort("[::1]:9")).toEqual({ host: "::1", port: 9 });
    for (const bad of ["", "host:", "host:70000", "[nothex]:1", "a:b:c"])
      expect(parseHostPort(bad)).toBeNull();
  });

  it("loopback is decided by address, never by a name other than localhost", () => {
    for (const h of ["127.0.0.1", "127.1.2.3", "::1", "localhost"]) expect(isLoopbackHost(h)).toBe(true);
    for (const h of ["0.0.0.0", "::", "10.0.0.1", "localhost.evil.example", "127.0.0.1.nip.io"])
      expect(isLoopbackHost(h)).toBe(false);
  });

  it("refuses non-loopback without TLS, HTTP without an authenticator, half-given groups", () => {
    const msg = (argv: string[]) => {
      const r = parseRemoteFlags(argv);
      return r.ok ? "ok" : r.message;
    };
    expect(msg(["--http", "0.0.0.0:8765", ...OAUTH])).toMatch(/not loopback, without TLS/);
    expect(msg(["--http", "127.0.0.1:8765"])).toMatch(/only authenticated clients/);
    expect(msg(["--http", "127.0.0.1:8765", "--client-ca", "ca.pem"])).toMatch(/needs --tls-cert/);
    expect(msg(["--http", "127.0.0.1:8765", "--tls-cert", "c.pem", ...OAUTH])).toMatch(/go together/);
    expect(msg(["--http", "127.0.0.1:8765", "--oauth-issuer", ISSUER])).toMatch(/go together/);
    expect(msg(["--http", "127.0.0.1:8765", ...OAUTH, "--max-cert-days", "0"])).toMatch(/from 1 to 3650/);
    expect(
      msg(["--http", "127.0.0.1:8765", "--oauth-issuer", "http://idp.example", ...OAUTH.slice(2)]),
    ).toMatch(/https URL/);
    expect(msg(["--http", "127.0.0.1:8765", ...OAUTH, "--allow-origin", "javascript:1"])).toMatch(/origin/);
    const ok = parseRemoteFlags([
      "--http",
      "0.0.0.0:8765",
      "--tls-cert",
      "c",
      "--tls-key",
      "k",
      "--client-ca",
      "ca",
    ]);
    expect(ok).toMatchObject({ ok: true, options: { host: "0.0.0.0", port: 8765, maxCertValidityDays: 30 } });
  });
});

describe("revocation list", () => {
  it("normalizes fingerprints, reports additions once and applies a change on the next check", () => {
    const dir = tmp();
    const file = join(dir, "revoked.txt");
    writeFileSync(file, "# none yet\n");
    const seen: string[][] = [];
    const list = new RevocationList(file, (added) => seen.push([...added.digests, ...added.jtis]), 60_000);
    const fp = "ab".repeat(32);
    expect(list.isRevoked({ fingerprint: fp, jti: "j1" })).toBe(false);
    // Atomic replace (rename), as the docs advise.
    writeFileSync(join(dir, "next"), `sha256:${fp.toUpperCase().match(/../g)?.join(":")}\nj1\n`);
    renameSync(join(dir, "next"), file);
    expect(list.isRevoked({ fingerprint: fp })).toBe(true);
    expect(list.isRevoked({ jti: "j1" })).toBe(true);
    expect(list.isRevoked({ jti: "j2" })).toBe(false);
    expect(seen).toEqual([[fp, "j1"]]);
    // Unreadable: fails closed; readable again: back to the list.
    rmSync(file);
    expect(list.isRevoked({ jti: "j2" })).toBe(true);
    writeFileSync(file, "j1\n");
    expect(list.isRevoked({ jti: "j2" })).toBe(false);
    list.close();
  });

  it("a list that cannot be read at start refuses to start", () => {
    expect(() => new RevocationList(join(tmp(), "missing"), () => undefined)).toThrow(/cannot be read/);
  });
});

describe("bearer verification", () => {
  it("keeps what the token proves, not the token; narrows to uiinspect scopes", async () => {
    const dir = tmp();
    const { jwksFile, sign } = await makeIssuer(dir);
    const v = new BearerVerifier({
      issuer: ISSUER,
      audience: AUDIENCE,
      jwks: jwksFile,
      maxLifetimeSeconds: 3600,
      clockSkewSeconds: 60,
    });
    const token = await sign({
      sub: "a",
      scope: "openid uiinspect:observe uiinspect:nonsense uiinspect:click",
      jti: "t1",
    });
    const r = await v.verify(`Bearer ${token}`);
    expect(r).toMatchObject({ ok: true, subject: "a", jti: "t1" });
    if (!r.ok) throw new Error("unreachable");
    expect([...r.scopes].sort()).toEqual(["click", "observe"]);
    expect(JSON.stringify(r)).not.toContain(token);
    expect(await v.verify("Basic abc")).toMatchObject({ ok: false, error: "invalid_request" });
    expect(await v.verify(undefined)).toMatchObject({ ok: false, error: "missing" });
    // The same subject from another issuer is another identity.
    const other = new BearerVerifier({
      issuer: "https://x.invalid",
      audience: AUDIENCE,
      jwks: jwksFile,
      maxLifetimeSeconds: 3600,
      clockSkewSeconds: 60,
    });
    const o = await other.verify(`Bearer ${await sign({ sub: "a", iss: "https://x.invalid" })}`);
    expect(o.ok && r.ok && o.fingerprint !== r.fingerprint).toBe(true);
  });

  it("a JWKS with a symmetric key is refused", () => {
    const f = join(tmp(), "jwks.json");
    writeFileSync(f, JSON.stringify({ keys: [{ kty: "oct", k: "c2VjcmV0" }] }));
    expect(() => readPublicJwks(f)).toThrow(/RSA, EC or OKP/);
  });

  it("the challenge names the metadata and never quotes client input", () => {
    const h = wwwAuthenticate("https://h/.well-known/oauth-protected-resource", {
      error: "invalid_token",
      description: 'bad "quote"',
    });
    expect(h).toMatch(
      /^Bearer resource_metadata="https:\/\/h\/\.well-known\/oauth-protected-resource", scope="/,
    );
    expect(h).toContain(`error_description="bad 'quote'"`);
    expect(wwwAuthenticate("m", { error: "missing", description: "x" })).not.toContain("error=");
  });
});

describe("identities and scope narrowing", () => {
  it("verified identities are stable across sessions, distinct per method, 128-bit keys with 12-hex audit ids", () => {
    const fp = "cd".repeat(32);
    const a = ClientIdentity.verified({ method: "mtls", fingerprint: fp }, "agent\u202eevil");
    const b = ClientIdentity.verified({ method: "mtls", fingerprint: fp }, "other name");
    const c = ClientIdentity.verified({ method: "oauth", fingerprint: fp }, "agent");
    expect(a.hash).toBe(b.hash);
    expect(a.hash).not.toBe(c.hash);
    expect(a.hash).toMatch(/^[0-9a-f]{32}$/);
    expect(a.auditId).toMatch(/^[0-9a-f]{12}$/);
    expect(a.label).not.toContain("\u202e");
    expect(ClientIdentity.fromClientInfo({ name: "x" }).verified).toBeNull();
  });

  it("a session's view reads the shared policy live; a later scope narrows, never widens", () => {
    const state = (actions: string[]) =>
      ({
        status: "ok",
        policy: { allowed_actions: new Set(actions), policy_id: "p" },
      }) as unknown as PolicyState;
    const shared = { policyState: state(["observe", "inspect", "click"]) } as unknown as Supervisor;
    const who = ClientIdentity.verified({ method: "mtls", fingerprint: "ef".repeat(32) }, "a");
    const mtls = supervisorFor(shared, who, null);
    const oauth = supervisorFor(shared, who, new Set(["observe", "click"]));
    const allowed = (v: Supervisor) =>
      v.policyState.status === "ok" ? [...v.policyState.policy.allowed_actions].sort() : v.policyState.status;
    expect(allowed(mtls)).toEqual(["click", "inspect", "observe"]);
    expect(allowed(oauth)).toEqual(["click", "observe"]);
    shared.policyState = state(["observe"]);
    expect(allowed(mtls)).toEqual(["observe"]);
    expect(allowed(oauth)).toEqual(["observe"]);
    shared.policyState = { status: "none" } as PolicyState;
    expect(allowed(mtls)).toBe("none");
    shared.policyState = state(["observe", "inspect", "click"]);
    oauth.narrowScope(new Set(["click", "inspect"]));
    expect(allowed(oauth)).toEqual(["click"]);
    oauth.narrowScope(new Set(["observe", "inspect", "click"]));
    expect(allowed(oauth)).toEqual(["click"]);
  });

  it("scopes only narrow the allowed actions", () => {
    const state = {
      status: "ok",
      policy: { allowed_actions: new Set(["observe", "inspect"]), policy_id: "p" },
    } as unknown as PolicyState;
    const narrowed = narrowPolicy(state, new Set(["observe", "click"]));
    expect(narrowed.status === "ok" && [...narrowed.policy.allowed_actions]).toEqual(["observe"]);
    expect(narrowPolicy(state, null)).toBe(state);
    const none = { status: "none" } as PolicyState;
    expect(narrowPolicy(none, new Set(["observe"]))).toBe(none);
  });
});
