import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseCommandLine, verbUsage } from "../../src/cli/args.js";
import { parseRemoteFlags } from "../../src/remote/options.js";
import { remoteSettings, SETTINGS } from "../../src/shared/settings.js";
import { AUDIENCE, ISSUER, runCli } from "../support/remote.js";
import { scratchDir } from "../support/scratch.js";

// Remote mode's flags are rows of the one settings table: each has its environment variable
// (the fallback when the flag is absent), help names each flag's argument, -V prints the
// version, and validate-revocations checks a revocation list.

const OAUTH_ENV = {
  UIINSPECT_HTTP: "127.0.0.1:8765",
  UIINSPECT_OAUTH_ISSUER: ISSUER,
  UIINSPECT_OAUTH_AUDIENCE: AUDIENCE,
  UIINSPECT_OAUTH_JWKS: "/x/jwks.json",
};

describe("remote flags and their variables", () => {
  it("every remote flag is a settings row with a variable", () => {
    const flags = remoteSettings().map((s) => s.flag);
    expect(flags).toEqual(
      expect.arrayContaining([
        "http",
        "tls-cert",
        "tls-key",
        "client-ca",
        "max-cert-days",
        "oauth-issuer",
        "oauth-audience",
        "oauth-jwks",
        "oauth-max-lifetime",
        "oauth-clock-skew",
        "revoked",
        "allow-origin",
        "max-sessions",
        "max-sessions-per-identity",
        "max-inflight",
        "max-inflight-per-identity",
        "max-connections-per-identity",
        "idle-timeout",
        "header-timeout",
        "body-timeout",
      ]),
    );
    for (const s of remoteSettings()) expect(s.env).toMatch(/^UIINSPECT_[A-Z0-9_]+$/);
  });

  it("the variables configure remote mode when the flags are absent", () => {
    const r = parseRemoteFlags([], {
      ...OAUTH_ENV,
      UIINSPECT_MAX_INFLIGHT: "100",
      UIINSPECT_MAX_INFLIGHT_PER_IDENTITY: "7",
      UIINSPECT_OAUTH_CLOCK_SKEW_S: "5",
      UIINSPECT_HEADER_TIMEOUT_S: "3",
      UIINSPECT_BODY_TIMEOUT_S: "4",
      UIINSPECT_ALLOW_ORIGINS: "https://a.example, https://b.example",
    });
    expect(r).toMatchObject({
      ok: true,
      options: {
        host: "127.0.0.1",
        port: 8765,
        oauth: { issuer: ISSUER, audience: AUDIENCE, clockSkewSeconds: 5 },
        maxInFlight: 100,
        maxInFlightPerIdentity: 7,
        headerTimeoutMs: 3000,
        bodyTimeoutMs: 4000,
        allowedOrigins: ["https://a.example", "https://b.example"],
      },
    });
  });

  it("a flag wins over its variable; a bad variable is named", () => {
    const r = parseRemoteFlags(["--max-inflight", "9"], { ...OAUTH_ENV, UIINSPECT_MAX_INFLIGHT: "100" });
    expect(r.ok && r.options?.maxInFlight).toBe(9);
    expect(parseRemoteFlags([], { ...OAUTH_ENV, UIINSPECT_MAX_SESSIONS: "lots" })).toEqual({
      ok: false,
      message: "UIINSPECT_MAX_SESSIONS must be a whole number from 1 to 10000.",
    });
    // Without UIINSPECT_HTTP the other variables do nothing: stdio.
    expect(parseRemoteFlags([], { UIINSPECT_CLIENT_CA: "ca.pem" })).toEqual({ ok: true, options: null });
  });

  it("defaults: header and body deadlines in seconds, a per-identity share below the global cap", () => {
    const r = parseRemoteFlags([], OAUTH_ENV);
    expect(r).toMatchObject({
      ok: true,
      options: {
        headerTimeoutMs: SETTINGS.headerTimeout.default * 1000,
        bodyTimeoutMs: SETTINGS.bodyTimeout.default * 1000,
        maxInFlight: 256,
        maxInFlightPerIdentity: 32,
        oauth: { clockSkewSeconds: 60, maxLifetimeSeconds: 3600 },
      },
    });
    expect(SETTINGS.headerTimeout.default).toBeLessThanOrEqual(60);
    expect(SETTINGS.bodyTimeout.default).toBeLessThanOrEqual(60);
  });
});

describe("the command line", () => {
  it("-V prints the version", () => {
    expect(parseCommandLine(["-V"])).toEqual({ kind: "version" });
  });

  it("serve's help names each flag's argument and its variable", () => {
    const help = verbUsage("serve");
    expect(help).not.toContain("VALUE");
    for (const [flag, arg] of [
      ["http", "HOST:PORT"],
      ["tls-cert", "FILE"],
      ["oauth-jwks", "FILE|URL"],
      ["oauth-issuer", "URL"],
      ["allow-origin", "ORIGIN"],
      ["max-inflight", "N"],
    ])
      expect(help).toContain(`--${flag} ${arg} `);
    for (const s of remoteSettings()) expect(help).toContain(`env ${s.env}`);
    expect(verbUsage("manager")).toContain("--hours N");
  });

  it("validate-revocations checks a file: 0 valid, 1 naming each bad line", async () => {
    const dir = scratchDir("revocations");
    const good = join(dir, "good.txt");
    const bad = join(dir, "bad.txt");
    writeFileSync(good, `${"ab".repeat(32)} # a\n`);
    writeFileSync(bad, `# list\n${"ab".repeat(31)}\n`);
    expect(parseCommandLine(["validate-revocations", good])).toMatchObject({
      kind: "run",
      positionals: [good],
    });
    expect((await runCli(["validate-revocations", good])).code).toBe(0);
    const r = await runCli(["validate-revocations", bad]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${bad}:2: not a SHA-256`);
    // serve refuses to start with it.
    const s = await runCli(["serve", "--revoked", bad], { ...OAUTH_ENV, UIINSPECT_HTTP: "127.0.0.1:0" });
    expect(s.code).toBe(2);
    expect(s.stderr).toContain("line 2");
  }, 30_000);
});
