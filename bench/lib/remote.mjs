// What the remote-mode benches share: OAuth identities (ES256 JWTs signed at bench time with
// jose against a JWKS file), the simulated desktop of 4 windows with 20-button trees, its
// policy, the `serve --http 127.0.0.1:0` server and an MCP client per identity.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { CLI, cleanEnv, cpuProfArgs, LOOSE, RUFFLE } from "./mcp.mjs";

export const ISSUER = "https://idp.bench.invalid";
export const AUDIENCE = "https://uiinspect.bench.invalid/mcp";
export const WINDOWS = 4;
/** The hwnd identity `i` works on (identities are spread over the windows in turn). */
export const hwndOf = (i) => 1001 + (i % WINDOWS);

function benchWindows() {
  return Array.from({ length: WINDOWS }, (_, i) => ({
    hwnd: 1001 + i,
    title: `Ruffle - bench${i}.swf`,
    class: "RuffleWindow",
    pid: 4001 + i,
    process_start: "2026-11-30T08:00:00Z",
    process_path: RUFFLE,
    rect: [(i % 2) * 660, Math.floor(i / 2) * 500, (i % 2) * 660 + 640, Math.floor(i / 2) * 500 + 480],
    visible: true,
    iconic: false,
    z: i,
    fill: "#3366cc",
    paint: [{ rect: [20, 60, 300, 200], fill: "#202020" }],
    tree: {
      role: "window",
      name: `Bench ${i}`,
      children: Array.from({ length: 20 }, (_, k) => ({
        role: "button",
        name: `Button ${k}`,
        automation_id: `b${k}`,
        rect: [
          20 + (k % 5) * 100,
          60 + Math.floor(k / 5) * 40,
          110 + (k % 5) * 100,
          90 + Math.floor(k / 5) * 40,
        ],
        patterns: ["invoke"],
      })),
    },
  }));
}

/**
 * A scratch folder with the JWKS, the desktop and the policy, and `token(sub)` for an identity.
 * `remove()` deletes the folder.
 */
export async function remoteSetup(policyId) {
  const dir = mkdtempSync(join(tmpdir(), `uiinspect-${policyId}-`));
  const { publicKey, privateKey } = await generateKeyPair("ES256");
  const jwks = join(dir, "jwks.json");
  writeFileSync(
    jwks,
    JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k", alg: "ES256" }] }),
  );
  const desktop = join(dir, "desktop.json");
  writeFileSync(
    desktop,
    JSON.stringify({
      session: 1,
      foreground: 1001,
      windows: benchWindows(),
      consent: { answer: "approve", delay_ms: 0 },
    }),
  );
  const policy = join(dir, "policy.json");
  writeFileSync(
    policy,
    JSON.stringify({
      schema_version: 1,
      policy_id: policyId,
      application: { executable_path: RUFFLE, title_patterns: ["Ruffle - *"] },
      allowed_actions: ["observe", "inspect"],
      safe_regions: [{ name: "frame", rect: [10, 40, 410, 340] }],
      limits: { max_actions_per_minute: 10_000_000, max_screenshot_pixels_per_minute: 2_000_000_000_000 },
    }),
  );
  // One clock reading for iat and exp: jose reads the clock for each, and a second that ticks
  // between them makes a token of 3601 s, which the server refuses (its cap is 3600 s).
  const token = (sub) => {
    const iat = Math.floor(Date.now() / 1000);
    return new SignJWT({ scope: "uiinspect:observe uiinspect:inspect" })
      .setProtectedHeader({ alg: "ES256", kid: "k" })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(sub)
      .setJti(`${sub}-${Date.now()}`)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 3600)
      .sign(privateKey);
  };
  return { dir, jwks, desktop, policy, token, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Starts `cli serve --http 127.0.0.1:0` with OAuth on the setup's desktop and policy; resolves
 * once it listens. `env` adds to (or overrides) the server's environment.
 */
export async function startHttpServer(setup, { cli = CLI, maxSessions, env = {} }) {
  const server = spawn(
    process.execPath,
    [
      ...cpuProfArgs(),
      cli,
      "serve",
      "--http",
      "127.0.0.1:0",
      "--oauth-issuer",
      ISSUER,
      "--oauth-audience",
      AUDIENCE,
      "--oauth-jwks",
      setup.jwks,
      "--max-sessions",
      String(maxSessions),
    ],
    {
      env: {
        ...cleanEnv(),
        UIINSPECT_PLATFORM: "fake",
        UIINSPECT_FAKE_DESKTOP: setup.desktop,
        DESKTOP_AUTOMATION_POLICY_FILE: setup.policy,
        ...LOOSE,
        UIINSPECT_LOG_LEVEL: "error",
        ...env,
      },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let err = "";
  const url = await new Promise((resolve, reject) => {
    server.stderr.on("data", (d) => {
      err += d;
      const m = /listening on (\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
    server.once("exit", (c) => reject(new Error(`server exited ${c}: ${err}`)));
  });
  return {
    server,
    pid: server.pid,
    url,
    port: Number(new URL(url).port),
    stop: async () => {
      if (server.exitCode !== null) return;
      server.kill("SIGTERM");
      await new Promise((r) => server.once("exit", r));
    },
  };
}

/** An MCP client for identity `sub` over Streamable HTTP, with its Bearer token. */
export async function connectIdentity(setup, url, sub) {
  const t = await setup.token(sub);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${t}` } },
  });
  const client = new Client({ name: sub, version: "1" });
  await client.connect(transport);
  return { client, transport, token: t };
}

/** The two tools every remote bench identity loops over, alternately. */
export function nextCall(k, hwnd) {
  return k % 2 === 0
    ? { name: "inspect_tree", args: { hwnd } }
    : { name: "screenshot_window", args: { hwnd, region_name: "frame" } };
}
