import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Desk, IN_STAGE, until, win } from "../support/consent.js";
import { filePolicy } from "../support/mcp.js";
import {
  AUDIENCE,
  type CertFiles,
  ISSUER,
  makeCa,
  makeIssuer,
  makeLeaf,
  RemoteClient,
} from "../support/remote.js";
import {
  type InProcessRemote,
  remoteOptions,
  replaceFile,
  replacePolicy,
  startRemoteInProcess,
} from "../support/remoteInProcess.js";
import { scratchDir } from "../support/scratch.js";

// One live policy for every session, whatever its credential: a reload of the operator's policy
// (narrower, wider, invalid, deleted, expired) reaches every open session on its next call, and
// each session hears notifications/tools/list_changed. A session whose policy is gone is left
// with health_check only. Run once over mTLS (no scopes: nothing used to refresh the session's
// copy) and once over OAuth.

let dir: string;
let ca: CertFiles;
let serverCert: CertFiles;
let alice: CertFiles;
let issuer: Awaited<ReturnType<typeof makeIssuer>>;

beforeAll(async () => {
  dir = scratchDir("live-policy");
  ca = makeCa(dir, "live-ca");
  serverCert = makeLeaf(dir, ca, "server", 2, "subjectAltName=IP:127.0.0.1");
  alice = makeLeaf(dir, ca, "alice", 7);
  issuer = await makeIssuer(dir);
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Mode = "mtls" | "oauth";

async function start(
  mode: Mode,
  desk: Desk,
  policyFile: string,
  clock: () => number,
): Promise<InProcessRemote> {
  const options =
    mode === "mtls"
      ? remoteOptions({ tls: { certFile: serverCert.cert, keyFile: serverCert.key }, clientCaFile: ca.cert })
      : remoteOptions({
          oauth: {
            issuer: ISSUER,
            audience: AUDIENCE,
            jwks: issuer.jwksFile,
            maxLifetimeSeconds: 3600,
            clockSkewSeconds: 60,
          },
        });
  return startRemoteInProcess(desk, options, { policyFile, clock });
}

async function connect(mode: Mode, url: string): Promise<RemoteClient> {
  if (mode === "mtls")
    return RemoteClient.connect(url, { tls: { ca: ca.cert, cert: alice.cert, key: alice.key } });
  // Every capability in scope: only the operator's policy narrows here.
  const scope = "observe inspect hover click interact key text close drag"
    .split(" ")
    .map((c) => `uiinspect:${c}`)
    .join(" ");
  return RemoteClient.connect(url, { token: await issuer.sign({ sub: "alice", scope }) });
}

const toolNames = async (c: RemoteClient) => (await c.client.listTools()).tools.map((t) => t.name).sort();

describe.each<Mode>(["mtls", "oauth"])("one live policy for every session (%s)", (mode) => {
  let desk: Desk;
  let policyFile: string;
  let remote: InProcessRemote;
  let offsetMs = 0;
  const sessions: RemoteClient[] = [];
  const heard = [0, 0];

  beforeAll(async () => {
    desk = new Desk([win(1), win(2)]);
    policyFile = join(desk.fake.dir, "live-policy.json");
    writeFileSync(
      policyFile,
      JSON.stringify(filePolicy({ allowed_actions: ["observe", "inspect", "click"] })),
    );
    remote = await start(mode, desk, policyFile, () => Date.now() + offsetMs);
    for (let i = 0; i < 2; i++) {
      const c = await connect(mode, remote.url);
      c.client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
        heard[i] = (heard[i] ?? 0) + 1;
      });
      sessions.push(c);
    }
    // Notifications need each session's GET stream, which the client opens after initialize.
    await new Promise((r) => setTimeout(r, 300));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(sessions.map((c) => c.close()));
    await remote?.close();
  });

  /** Waits until every open session was told the listing changed (once more than `before`). */
  const allHeard = async (before: number[]) =>
    until(() => heard.every((n, i) => n > (before[i] ?? 0)), "tools/list_changed on every session");

  it("a narrower policy reaches both open sessions: click refused, click_window no longer listed", async () => {
    const [a, b] = sessions as [RemoteClient, RemoteClient];
    expect(await a.ok("request_access", { hwnd: 1001, capabilities: ["observe", "click"] })).toMatchObject({
      decision: "approved",
    });
    await a.ok("click_window", { hwnd: 1001, ...IN_STAGE });
    expect(await toolNames(b)).toContain("click_window");
    const effects = desk.effects().length;
    const before = [...heard];
    replacePolicy(policyFile, { allowed_actions: ["observe", "inspect"] });
    await allHeard(before);
    for (const c of [a, b]) {
      expect((await c.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("action_not_allowed");
      expect(await toolNames(c)).not.toContain("click_window");
    }
    expect(desk.effects().length).toBe(effects);
  });

  it("a wider policy reaches them too", async () => {
    const before = [...heard];
    replacePolicy(policyFile, { allowed_actions: ["observe", "inspect", "click", "hover"] });
    await allHeard(before);
    for (const c of sessions)
      expect(await toolNames(c)).toEqual(expect.arrayContaining(["click_window", "hover_window"]));
  });

  it("an invalid policy: every session is left with health_check", async () => {
    const before = [...heard];
    replaceFile(policyFile, "{ not json");
    await allHeard(before);
    for (const c of sessions) {
      expect(await toolNames(c)).toEqual(["health_check"]);
      expect((await c.call("list_windows")).code).toBe("policy_invalid");
    }
  });

  it("a deleted policy: every session is left with health_check", async () => {
    // The restore's own tools/list_changed must be heard before the snapshot below, or it
    // would stand in for the deletion's (seen under load: the old listing read after it).
    const restored = [...heard];
    replacePolicy(policyFile, { allowed_actions: ["observe"] });
    await until(() => remote.sup.policyState.status === "ok", "the policy back");
    await allHeard(restored);
    const before = [...heard];
    rmSync(policyFile);
    await allHeard(before);
    for (const c of sessions) {
      expect(await toolNames(c)).toEqual(["health_check"]);
      const code = (await c.call("list_windows")).code;
      expect(code).toMatch(/^policy_/);
      expect((await c.ok("health_check")).status).toBe("degraded");
    }
  });

  it("an expired policy: every session is left with health_check", async () => {
    const expires = new Date(Date.now() + offsetMs + 60_000).toISOString().replace(/\.\d+Z$/, "Z");
    const restored = [...heard];
    replacePolicy(policyFile, { allowed_actions: ["observe"], expires_at: expires });
    await allHeard(restored);
    for (const c of sessions) expect(await toolNames(c)).toContain("list_windows");
    const before = [...heard];
    offsetMs += 120_000;
    await allHeard(before);
    for (const c of sessions) {
      expect(await toolNames(c)).toEqual(["health_check"]);
      expect((await c.call("list_windows")).code).toBe("policy_expired");
    }
  });
});
