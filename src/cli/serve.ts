import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { parseRemoteFlags, type RemoteOptions } from "../remote/options.js";
import { UiError } from "../shared/errors.js";
import { buildSupervisor, warmWorkers } from "../supervisor/bootstrap.js";
import { ConfigError } from "../supervisor/config.js";
import { boundHeap } from "../supervisor/heap.js";
import { log } from "../supervisor/log.js";
import { createMcpServer } from "../supervisor/mcp/server.js";
import { stdoutSink } from "../supervisor/mcp/stdoutSinks.js";
import { StdoutQueue } from "../supervisor/mcp/stdoutWriter.js";
import { installShutdown, SHUTDOWN_BOUND_MS } from "../supervisor/shutdown.js";

/**
 * `uiinspect-mcp serve [--http HOST:PORT …]`: one MCP connection over stdio until stdin closes
 * or a signal arrives; with --http, authenticated remote mode (src/remote) instead.
 */
export async function serve(argv: string[] = []): Promise<number> {
  const flags = parseRemoteFlags(argv, process.env);
  // Before the server allocates: the heaps stay small, and near their live size in remote mode
  // (src/supervisor/heap.ts).
  boundHeap({ memoryMode: flags.ok && flags.options !== null });
  if (!flags.ok) {
    process.stderr.write(`uiinspect-mcp: ${flags.message}\n`);
    return 2;
  }
  if (flags.options) return serveHttp(flags.options);
  let sup: ReturnType<typeof buildSupervisor>;
  try {
    sup = buildSupervisor();
  } catch (e) {
    if (e instanceof ConfigError || e instanceof UiError) {
      process.stderr.write(`uiinspect-mcp: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  warmWorkers(sup);
  const server = createMcpServer(sup, (info) => sup.setClient(info));
  const out = boundedStdout(sup.config.stdoutQueueBytes);
  const transport = new StdioServerTransport(process.stdin, out.queue.stream);
  // One bounded, orderly way out for every end (signals, stdin/stdout closed, uncaught errors):
  // in-flight input is cancelled and released before anything closes (src/supervisor/shutdown.ts).
  const shutdown = installShutdown({
    logger: log,
    close: async () => {
      await sup.close().catch(() => undefined);
      await server.close().catch(() => undefined);
    },
  });
  server.onclose = () => shutdown.begin("connection_closed");
  out.onGone(() => shutdown.begin("stdout_closed"));
  await server.connect(transport);
  // Debug, not info: clients show any stderr line of a server as an error (Claude Code: [ERROR]).
  log.debug({ platform: sup.config.platform, isolation: sup.config.isolation }, "server_started");
  const code = await shutdown.done;
  out.stopped();
  // Every answer queued before the end goes out, unless the client stays unread this long.
  if (!(await out.queue.flush(SHUTDOWN_BOUND_MS)))
    log.debug({ bytes: out.queue.queuedBytes }, "stdout_unflushed");
  log.flush();
  // Nothing left may keep a stopped server alive (a half-closed pipe, a stuck handle).
  setTimeout(() => process.exit(code), 200).unref();
  return code;
}

/**
 * The MCP frames' way to stdout (src/supervisor/mcp/stdoutWriter.ts): in order, never blocking the
 * event loop, and bounded. While more than `limitBytes` of answers wait for a client that is not
 * reading, no further request is read from stdin (the client's own writes back up); reading
 * resumes once half has gone out. What can still queue past the limit is the answers of the
 * requests already read, so the queue never grows with the time the client stays unread.
 */
function boundedStdout(limitBytes: number) {
  let ended = false;
  let gone: (() => void) | null = null;
  const queue = new StdoutQueue(stdoutSink(process.stdout), {
    limitBytes,
    onPressure: (full) => {
      log.debug({ bytes: queue.queuedBytes, full }, "stdout_backpressure");
      if (full) process.stdin.pause();
      else if (!ended) process.stdin.resume();
    },
    onGone: () => gone?.(),
  });
  return {
    queue,
    onGone: (f: () => void) => {
      gone = f;
    },
    /** After the shutdown: stdin stays as the transport left it. */
    stopped: () => {
      ended = true;
    },
  };
}

/** Remote mode until SIGINT/SIGTERM; the listening URL goes to stderr (stdout carries nothing here). */
async function serveHttp(options: RemoteOptions): Promise<number> {
  const { startRemote } = await import("../remote/serve.js");
  let running: Awaited<ReturnType<typeof startRemote>>;
  try {
    running = await startRemote(options);
  } catch (e) {
    const message = e instanceof Error ? e.message : "failed to start";
    process.stderr.write(`uiinspect-mcp: ${message}\n`);
    return 2;
  }
  process.stderr.write(`uiinspect-mcp: listening on ${running.server.url}\n`);
  log.info({ transport: "http" }, "server_started");
  await new Promise<void>((resolve) => {
    const stop = () => void running.close().then(resolve, resolve);
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  log.flush();
  return 0;
}
