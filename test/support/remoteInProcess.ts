import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { startRemoteServer } from "../../src/remote/httpServer.js";
import { REMOTE_DEFAULTS, type RemoteOptions } from "../../src/remote/options.js";
import { buildSupervisor } from "../../src/supervisor/bootstrap.js";
import { createMcpServer } from "../../src/supervisor/mcp/server.js";
import type { Desk } from "./consent.js";
import { filePolicy, LOOSE_BUDGETS } from "./mcp.js";

/**
 * Remote mode in this test's own thread: the real supervisor on the fake platform (inline
 * workers) served by the real HTTP server on 127.0.0.1:0, so reloads, admission and deadlines
 * are tested without spawning the CLI. Clients connect over real sockets (TLS where given).
 */

export interface InProcessRemote {
  url: string;
  sup: ReturnType<typeof buildSupervisor>;
  logs: string[];
  close(): Promise<void>;
}

/** Options for 127.0.0.1:0 with the defaults; `over` sets the rest (tls, clientCaFile, oauth, caps…). */
export function remoteOptions(over: Partial<RemoteOptions>): RemoteOptions {
  return {
    host: "127.0.0.1",
    port: 0,
    tls: null,
    clientCaFile: null,
    maxCertValidityDays: REMOTE_DEFAULTS.maxCertValidityDays,
    oauth: null,
    revokedFile: null,
    allowedOrigins: [],
    maxBodyBytes: REMOTE_DEFAULTS.maxBodyBytes,
    idleTimeoutMs: REMOTE_DEFAULTS.idleTimeoutMs,
    maxSessions: REMOTE_DEFAULTS.maxSessions,
    maxSessionsPerIdentity: REMOTE_DEFAULTS.maxSessionsPerIdentity,
    maxInFlight: REMOTE_DEFAULTS.maxInFlight,
    maxInFlightPerIdentity: REMOTE_DEFAULTS.maxInFlightPerIdentity,
    maxConnectionsPerIdentity: REMOTE_DEFAULTS.maxConnectionsPerIdentity,
    headerTimeoutMs: REMOTE_DEFAULTS.headerTimeoutMs,
    bodyTimeoutMs: REMOTE_DEFAULTS.bodyTimeoutMs,
    ...over,
  };
}

export async function startRemoteInProcess(
  desk: Desk,
  options: RemoteOptions,
  opts: { policyFile?: string; env?: Record<string, string>; clock?: () => number } = {},
): Promise<InProcessRemote> {
  const logs: string[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => void logs.push(line) });
  const sup = buildSupervisor({
    env: {
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: desk.fake.path,
      DESKTOP_AUTOMATION_POLICY_FILE: opts.policyFile ?? desk.policy(),
      UIINSPECT_POLICY_WATCH_MS: "100",
      ...LOOSE_BUDGETS,
      ...opts.env,
    },
    logger,
    clock: opts.clock,
    isolation: "inline",
  });
  let server: Awaited<ReturnType<typeof startRemoteServer>>;
  try {
    server = await startRemoteServer(options, {
      supervisor: sup,
      createServer: (view) => createMcpServer(view, () => undefined),
      log: logger,
      clock: opts.clock,
    });
  } catch (e) {
    await sup.close();
    throw e;
  }
  return {
    url: server.url,
    sup,
    logs,
    close: async () => {
      await server.close();
      await sup.close();
    },
  };
}

/** Replaces a policy file atomically (a new inode, so the watcher sees it whatever the timing). */
export function replaceFile(path: string, text: string): void {
  const tmp = join(path, `../.next-${Math.random().toString(16).slice(2)}`);
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

export function replacePolicy(path: string, over: Record<string, unknown>): void {
  replaceFile(path, JSON.stringify(filePolicy(over)));
}
