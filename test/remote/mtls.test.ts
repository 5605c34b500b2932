import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Desk, IN_STAGE, until, win } from "../support/consent.js";
import {
  type CertFiles,
  makeCa,
  makeLeaf,
  opensslSpkiFingerprint,
  RemoteClient,
  type RemoteServerProc,
  sessionRequest,
  startRemote,
  tlsFetch,
} from "../support/remote.js";
import { scratchDir } from "../support/scratch.js";

// mTLS remote mode on 127.0.0.1 with an openssl-made PKI: who connects is the key of a
// certificate chaining to the configured CA, short-lived, not revoked.

let dir: string;
let ca: CertFiles;
let server: CertFiles;
let alice: CertFiles;
let bob: CertFiles;
let carol: CertFiles;
let longLived: CertFiles;
let stranger: CertFiles;
let desk: Desk;
let remote: RemoteServerProc;
let revokedFile: string;
let auditFile: string;
const open: RemoteClient[] = [];

const tls = (c?: CertFiles) => ({ ca: ca.cert, ...(c ? { cert: c.cert, key: c.key } : {}) });
async function connect(c?: CertFiles): Promise<RemoteClient> {
  const r = await RemoteClient.connect(remote.url, { tls: tls(c) });
  open.push(r);
  return r;
}
const auditLines = () =>
  readFileSync(auditFile, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);

beforeAll(async () => {
  dir = scratchDir("mtls");
  ca = makeCa(dir, "test-ca");
  const other = makeCa(dir, "other-ca");
  server = makeLeaf(dir, ca, "server", 2, "subjectAltName=IP:127.0.0.1");
  alice = makeLeaf(dir, ca, "alice", 7);
  bob = makeLeaf(dir, ca, "bob", 7);
  carol = makeLeaf(dir, ca, "carol", 7);
  longLived = makeLeaf(dir, ca, "longlived", 90);
  stranger = makeLeaf(dir, other, "stranger", 7);
  revokedFile = join(dir, "revoked.txt");
  writeFileSync(revokedFile, "# one SPKI SHA-256 or jti per line\n");
  auditFile = join(dir, "audit.jsonl");
  desk = new Desk([win(3), win(1), win(2)]); // 1003 is in the foreground
  remote = await startRemote(
    desk,
    ["--tls-cert", server.cert, "--tls-key", server.key, "--client-ca", ca.cert, "--revoked", revokedFile],
    { UIINSPECT_AUDIT_FILE: auditFile },
  );
}, 60_000);

afterAll(async () => {
  await Promise.all(open.map((c) => c.close()));
  await remote?.stop();
});

describe("mTLS remote mode", () => {
  it("serves on 127.0.0.1 over https at /mcp", () => {
    expect(remote.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
  });

  it("a certificate from the CA lists the tools and works", async () => {
    const c = await connect(alice);
    const { tools } = await c.client.listTools();
    expect(tools.map((t) => t.name)).toContain("inspect_tree");
    const w = await c.ok("list_windows");
    expect((w.windows as unknown[]).length).toBe(3);
  });

  it("no certificate, another CA's or an over-long-lived one is refused", async () => {
    await expect(connect()).rejects.toThrow();
    await expect(connect(stranger)).rejects.toThrow();
    await expect(connect(longLived)).rejects.toThrow(/403|longer than this server accepts/);
  });

  it("the consent dialog shows the certificate CN as verified, with the key's fingerprint", async () => {
    const c = await connect(alice);
    const before = desk.prompts().length;
    expect(await c.ok("request_access", { hwnd: 1001, capabilities: ["observe", "click"] })).toMatchObject({
      decision: "approved",
    });
    const p = desk.prompts()[before];
    expect(p).toMatchObject({ client_label: "alice", client_label_self_reported: false });
    const fp = opensslSpkiFingerprint(alice.cert);
    expect(p?.client_verified).toEqual({ method: "mtls", fingerprint: fp });
    expect(String(p?.text)).toContain(
      `Client: alice (verified: client certificate key SHA-256 ${fp.slice(0, 16)}`,
    );
    expect(String(p?.text)).not.toContain("self-reported");
  });

  it("two identities on one server each see only their own grants, tokens, refs and audit", async () => {
    const a = await connect(alice);
    const b = await connect(bob);
    // Alice's grant is hers only.
    expect(
      (await a.ok("request_access", { hwnd: 1003, capabilities: ["observe", "click", "inspect", "text"] }))
        .decision,
    ).toBe("approved");
    expect(((await a.ok("get_access_state")).grants as unknown[]).length).toBeGreaterThan(0);
    expect((await b.ok("get_access_state")).grants).toEqual([]);
    // Bob cannot act on the window Alice was granted.
    expect((await b.call("click_window", { hwnd: 1003, ...IN_STAGE })).code).toBe("consent_required");
    // Alice's element ref and confirmation token mean nothing to Bob, even once he has his own grant.
    const tree = await a.ok("inspect_tree", { detail: "full", hwnd: 1003 });
    const ref = JSON.stringify(tree).match(/"ref":"([^"]+)"/)?.[1];
    expect(ref).toBeTruthy();
    const token = String(
      (await a.ok("request_confirmation", { hwnd: 1003, action_class: "text", ttl_seconds: 60 })).token_id,
    );
    await b.ok("request_access", { hwnd: 1003, capabilities: ["observe", "inspect", "text"] });
    expect((await b.call("click_element", { ref })).code).toBe("element_stale");
    expect((await b.call("send_text", { hwnd: 1003, text: "x", confirmation_token: token })).code).toBe(
      "confirmation_invalid",
    );
    // Audit: each sees only events with its own client id, and the two ids differ.
    const ea = (await a.ok("get_audit_events", { limit: 100 })).events as Array<{ client: string }>;
    const eb = (await b.ok("get_audit_events", { limit: 100 })).events as Array<{ client: string }>;
    const ida = new Set(ea.map((e) => e.client));
    const idb = new Set(eb.map((e) => e.client));
    expect(ida.size).toBe(1);
    expect(idb.size).toBe(1);
    expect([...ida][0]).not.toBe([...idb][0]);
    // The shared sink has both: the supervisor is one.
    const inFile = new Set(auditLines().map((e) => e.client));
    expect(inFile.has([...ida][0] as string) && inFile.has([...idb][0] as string)).toBe(true);
  });

  it("another identity presenting a session id gets 'not found'", async () => {
    const a = await connect(alice);
    const sid = a.sessionId;
    expect(sid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const r = await sessionRequest(remote.url, String(sid), {}, tlsFetch(tls(bob)));
    expect(r.status).toBe(404);
  });

  it("revoking a certificate closes its sessions, ends its grants and is audited; it cannot reconnect", async () => {
    const c = await connect(carol);
    await c.ok("request_access", { hwnd: 1002, capabilities: ["observe"] });
    expect(((await c.ok("get_access_state")).grants as unknown[]).length).toBe(1);
    const fp = opensslSpkiFingerprint(carol.cert);
    writeFileSync(revokedFile, `# revoked\n${fp.toUpperCase().match(/../g)?.join(":")}\n`);
    // The open session is refused at once (its connection is dropped, the next request fails).
    await until(() => auditLines().some((e) => e.tool === "credential_revocation"), "revocation audit");
    await expect(c.call("list_windows")).rejects.toThrow();
    await expect(connect(carol)).rejects.toThrow(/403|revoked/);
    const events = auditLines();
    const rev = events.find((e) => e.tool === "credential_revocation");
    expect(rev).toMatchObject({ outcome: "deny", reason: "credential_revoked", action: "none" });
    expect(rev?.counters).toMatchObject({ grants: 1, sessions: 1 });
    const grantEnd = events.find((e) => e.tool === "revocation" && e.reason === "credential_revoked");
    expect(grantEnd).toMatchObject({ client: rev?.client, pid: 4002 });
    // Others are untouched.
    const a = await connect(alice);
    expect((await a.ok("list_windows")).windows).toHaveLength(3);
  });
});

describe("mTLS and OAuth together", () => {
  it("needs both: the certificate gates the connection, the token's subject is the identity", async () => {
    const { makeIssuer, ISSUER, AUDIENCE } = await import("../support/remote.js");
    const issuer = await makeIssuer(dir);
    const both = await startRemote(desk, [
      "--tls-cert",
      server.cert,
      "--tls-key",
      server.key,
      "--client-ca",
      ca.cert,
      "--oauth-issuer",
      ISSUER,
      "--oauth-audience",
      AUDIENCE,
      "--oauth-jwks",
      issuer.jwksFile,
    ]);
    const clients: RemoteClient[] = [];
    try {
      const token = await issuer.sign({ sub: "agent-both", scope: "uiinspect:observe" });
      // Certificate without a token: 401.
      await expect(RemoteClient.connect(both.url, { tls: tls(alice) })).rejects.toThrow(/401|Bearer/);
      // Token without a certificate: the handshake refuses.
      await expect(RemoteClient.connect(both.url, { tls: tls(), token })).rejects.toThrow();
      // Both: the dialog shows the token's subject as verified by OAuth.
      const c = await RemoteClient.connect(both.url, { tls: tls(alice), token });
      clients.push(c);
      const before = desk.prompts().length;
      await c.ok("request_access", { hwnd: 1002 });
      expect(desk.prompts()[before]).toMatchObject({
        client_label: "agent-both",
        client_label_self_reported: false,
        client_verified: { method: "oauth" },
      });
    } finally {
      await Promise.all(clients.map((x) => x.close()));
      await both.stop();
    }
  });
});
