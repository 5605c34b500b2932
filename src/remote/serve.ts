import { buildSupervisor, warmWorkers } from "../supervisor/bootstrap.js";
import { log } from "../supervisor/log.js";
import { createMcpServer } from "../supervisor/mcp/server.js";
import { type RemoteServer, startRemoteServer } from "./httpServer.js";
import type { RemoteOptions } from "./options.js";

export interface RunningRemote {
  server: RemoteServer;
  /** Closes the HTTP server (every session) and then the shared supervisor; safe to call twice. */
  close(): Promise<void>;
}

/**
 * Builds the one shared supervisor and serves it over HTTP. The caller owns when to stop
 * (signals, orderly shutdown) and calls close(). Throws ConfigError/UiError/Error with a
 * message fit for a person when the configuration cannot start.
 */
export async function startRemote(options: RemoteOptions): Promise<RunningRemote> {
  const sup = buildSupervisor();
  warmWorkers(sup);
  let server: RemoteServer;
  try {
    // Over HTTP the identity comes from the credential; clientInfo is not asked for anything.
    server = await startRemoteServer(options, {
      supervisor: sup,
      createServer: (view) => createMcpServer(view, () => undefined),
      log,
    });
  } catch (e) {
    await sup.close().catch(() => undefined);
    throw e;
  }
  let closing: Promise<void> | null = null;
  return {
    server,
    close: () => {
      closing ??= server.close().then(() => sup.close().catch(() => undefined));
      return closing;
    },
  };
}
