import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spkiFingerprint } from "../../src/remote/mtls.js";
import {
  parseRevocationLine,
  parseRevocations,
  RevocationList,
  validateRevocationFile,
} from "../../src/remote/revocation.js";
import { Desk, until, win } from "../support/consent.js";
import {
  AUDIENCE,
  type CertFiles,
  ISSUER,
  initializeMessage,
  makeCa,
  makeIssuer,
  makeLeaf,
  opensslSpkiFingerprint,
  postJsonRpc,
  RemoteClient,
  tlsFetch,
} from "../support/remote.js";
import {
  type InProcessRemote,
  remoteOptions,
  replaceFile,
  startRemoteInProcess,
} from "../support/remoteInProcess.js";
import { scratchDir } from "../support/scratch.js";

// A revocation list that cannot be misread: every form an operator has in hand revokes, a line
// that does not parse is an error (refuse to start; on reload the last good list stays, the
// problem is audited and logged and health_check says degraded), and a revoked certificate is
// refused with 403 whatever else is configured.

let dir: string;
let ca: CertFiles;
let serverCert: CertFiles;
let alice: CertFiles;
let bob: CertFiles;

/** What `openssl x509 -fingerprint -sha256` prints for a certificate, as the operator copies it. */
const opensslCertFingerprintLine = (cert: string) =>
  execFileSync("openssl", ["x509", "-in", cert, "-noout", "-fingerprint", "-sha256"]).toString("utf8").trim();

beforeAll(() => {
  dir = scratchDir("revocation");
  ca = makeCa(dir, "rev-ca");
  serverCert = makeLeaf(dir, ca, "server", 2, "subjectAltName=IP:127.0.0.1");
  alice = makeLeaf(dir, ca, "alice", 7);
  bob = makeLeaf(dir, ca, "bob", 7);
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("revocation lines", () => {
  const fp = "ab".repeat(32);
  const pairs = fp.toUpperCase().match(/../g)?.join(":") ?? "";

  it("accepts the key digest and the certificate fingerprint in the forms operators have", () => {
    for (const line of [
      fp,
      fp.toUpperCase(),
      pairs,
      `sha256:${fp}`,
      `SHA256:${pairs}`,
      `SHA256 Fingerprint=${pairs}`,
      `sha256 Fingerprint=${pairs}`,
    ])
      expect(parseRevocationLine(line), line).toEqual({ digest: fp });
  });

  it("a trailing comment is a comment, not part of the entry", () => {
    expect(parseRevocationLine(`${fp}  # alice's laptop, lost 2026-11-30`)).toEqual({ digest: fp });
    expect(parseRevocationLine(`jti-123 # leaked in a log`)).toEqual({ jti: "jti-123" });
    expect(parseRevocationLine("   # only a comment")).toBeNull();
    expect(parseRevocationLine("")).toBeNull();
    // A jti may hold '#' itself; only a blank before it starts a comment.
    expect(parseRevocationLine("a#b")).toEqual({ jti: "a#b" });
  });

  it("jti values: bare, or jti: for one made of hex digits", () => {
    expect(parseRevocationLine("0f1c7a6e-2b7d-4c6e-9e2a-5b7b1f2f9a11")).toEqual({
      jti: "0f1c7a6e-2b7d-4c6e-9e2a-5b7b1f2f9a11",
    });
    expect(parseRevocationLine("jti:deadbeef")).toEqual({ jti: "deadbeef" });
  });

  it("anything that could be a misread digest is an error, never a jti that revokes nothing", () => {
    for (const bad of [
      fp.slice(0, 63),
      `${fp}0`,
      "deadbeef",
      pairs.slice(0, -3),
      "sha256:nothex",
      `SHA256 Fingerprint=${pairs.slice(3)}`,
      `${fp} extra`,
      "jti:",
      "jti:has space",
      "SHA1 Fingerprint=AB:CD",
    ])
      expect(parseRevocationLine(bad), bad).toMatchObject({ problem: expect.any(String) });
  });

  it("a file reports every bad line by number, never its text", () => {
    const r = parseRevocations(`# list\n${fp}\nsecret-looking deadbeef\n\nabcd\n`);
    expect(r.ok).toBe(false);
    if (r.ok) throw new Error("unreachable");
    expect(r.errors.map((e) => e.line)).toEqual([3, 5]);
    expect(JSON.stringify(r.errors)).not.toContain("secret-looking");
  });

  it("openssl's certificate fingerprint line revokes that certificate", () => {
    const line = opensslCertFingerprintLine(alice.cert);
    const cert = new X509Certificate(readFileSync(alice.cert));
    const digest = cert.fingerprint256.replaceAll(":", "").toLowerCase();
    expect(parseRevocationLine(`${line} # alice`)).toEqual({ digest });
    // And the documented SPKI digest, computed by openssl, is the identity's.
    expect(parseRevocationLine(opensslSpkiFingerprint(alice.cert))).toEqual({
      digest: spkiFingerprint(cert),
    });
  });

  it("validate-revocations names each bad line, or counts the entries", () => {
    const good = join(dir, "good.txt");
    writeFileSync(good, `${fp} # a\njti:abc\n`);
    expect(validateRevocationFile(good)).toEqual({
      ok: true,
      lines: [`${good}: valid (1 certificate digests, 1 jti values)`],
    });
    const bad = join(dir, "bad.txt");
    writeFileSync(bad, `${fp}\n${fp.slice(1)}\n`);
    const r = validateRevocationFile(bad);
    expect(r.ok).toBe(false);
    expect(r.lines).toEqual([
      `${bad}:2: ${(parseRevocationLine(fp.slice(1)) as { problem: string }).problem}`,
    ]);
    expect(validateRevocationFile(join(dir, "missing.txt"))).toMatchObject({ ok: false });
  });
});

describe("the revocation list at start and on reload", () => {
  const fp = "cd".repeat(32);

  it("a list with a bad line refuses to start, naming the line", () => {
    const f = join(dir, "bad-start.txt");
    writeFileSync(f, `${fp}\n${fp.slice(0, 40)}\n`);
    expect(() => new RevocationList(f, () => undefined)).toThrow(/line 2/);
  });

  it("a bad reload keeps the last good list, reports it once and says stale until fixed", () => {
    const f = join(dir, "reload.txt");
    writeFileSync(f, `${fp}\n`);
    const invalid: number[][] = [];
    const list = new RevocationList(
      f,
      { onRevoked: () => undefined, onInvalid: (e) => invalid.push(e.map((x) => x.line)) },
      60_000,
    );
    expect(list.isRevoked({ fingerprint: fp })).toBe(true);
    replaceFile(f, `${fp.slice(2)}\n`);
    // The old entry still holds; the broken one is not taken as anything.
    expect(list.isRevoked({ fingerprint: fp })).toBe(true);
    expect(list.health()).toEqual({ status: "stale", entries: 1, bad_lines: [1] });
    expect(list.isRevoked({ jti: fp.slice(2) })).toBe(false);
    expect(invalid).toEqual([[1]]);
    replaceFile(f, `jti:x\n`);
    expect(list.isRevoked({ fingerprint: fp })).toBe(false);
    expect(list.isRevoked({ jti: "x" })).toBe(true);
    expect(list.health()).toEqual({ status: "ok", entries: 1 });
    list.close();
  });
});

describe("revocation on a running server", () => {
  let revokedFile: string;
  let remote: InProcessRemote;
  let issuer: Awaited<ReturnType<typeof makeIssuer>>;
  const tls = (c: CertFiles) => ({ ca: ca.cert, cert: c.cert, key: c.key });

  beforeAll(async () => {
    revokedFile = join(dir, "served.txt");
    writeFileSync(revokedFile, "# nothing yet\n");
    issuer = await makeIssuer(dir);
  });

  afterAll(async () => remote?.close());

  it("mTLS: openssl's certificate fingerprint with a comment revokes; a bad reload keeps it, audited, degraded", async () => {
    const desk = new Desk([win(1)]);
    remote = await startRemoteInProcess(
      desk,
      remoteOptions({
        tls: { certFile: serverCert.cert, keyFile: serverCert.key },
        clientCaFile: ca.cert,
        revokedFile,
      }),
    );
    const a = await RemoteClient.connect(remote.url, { tls: tls(alice) });
    const b = await RemoteClient.connect(remote.url, { tls: tls(bob) });
    expect((await b.ok("health_check")).status).toBe("ok");
    replaceFile(revokedFile, `${opensslCertFingerprintLine(alice.cert)}  # alice, lost\n`);
    // Her open session ends (and her connections drop) as soon as the list is polled.
    await until(
      () => remote.sup.audit.recent(100).some((e) => e.tool === "credential_revocation"),
      "alice's revocation to end her session",
    );
    const r = await postJsonRpc(remote.url, initializeMessage(), {}, tlsFetch(tls(alice)));
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: { data: { code: string } } }).error.data.code).toBe(
      "credential_revoked",
    );
    await a.close();
    // A broken edit: the last good list stays (alice still refused), the server says so.
    replaceFile(revokedFile, `${opensslCertFingerprintLine(alice.cert).slice(0, -3)}\n`);
    const health = await b.ok("health_check");
    expect(health.status).toBe("degraded");
    expect(health.remote).toEqual({ revocation_list: { status: "stale", entries: 1, bad_lines: [1] } });
    expect((await postJsonRpc(remote.url, initializeMessage(), {}, tlsFetch(tls(alice)))).status).toBe(403);
    await until(
      () => remote.sup.audit.recent(100).some((e) => e.tool === "revocation_list" && e.outcome === "error"),
      "the bad reload's audit event",
    );
    expect(remote.logs.join("")).toContain("revocation_list_invalid_kept_last");
    await b.close();
    await remote.close();
  }, 60_000);

  it("mTLS and OAuth together: a revoked certificate is 403 whatever token comes with it", async () => {
    replaceFile(revokedFile, `${opensslSpkiFingerprint(bob.cert)}\n`);
    const desk = new Desk([win(1)]);
    remote = await startRemoteInProcess(
      desk,
      remoteOptions({
        tls: { certFile: serverCert.cert, keyFile: serverCert.key },
        clientCaFile: ca.cert,
        oauth: {
          issuer: ISSUER,
          audience: AUDIENCE,
          jwks: issuer.jwksFile,
          maxLifetimeSeconds: 3600,
          clockSkewSeconds: 60,
        },
        revokedFile,
      }),
    );
    const token = await issuer.sign({ sub: "bob" });
    for (const headers of [
      { authorization: `Bearer ${token}` },
      {},
      { authorization: "Bearer not.a.jwt" },
    ] as Record<string, string>[]) {
      const r = await postJsonRpc(remote.url, initializeMessage(), headers, tlsFetch(tls(bob)));
      expect(r.status).toBe(403);
    }
    // The same token over a certificate that is not revoked works.
    const ok = await postJsonRpc(
      remote.url,
      initializeMessage(),
      { authorization: `Bearer ${token}` },
      tlsFetch(tls(alice)),
    );
    expect(ok.status).toBe(200);
  }, 60_000);
});
