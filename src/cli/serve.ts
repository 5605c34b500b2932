import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { UiError } from "../shared/errors.js";
import { buildSupervisor } from "../supervisor/bootstrap.js";
import { ConfigError } from "../supervisor/config.js";
import { log } from "../supervisor/log.js";
import { createMcpServer } from "../supervisor/server.js";
import { singleDrainWriter } from "../supervisor/stdoutWriter.js";

/** `uiinspect-mcp serve`: one MCP connection over stdio until stdin closes or a signal arrives. */
export async function serve(): Promise<number> {
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
  // Workers boot (module loading, ~0.25 s) while the MCP server is built and the client says
  // hello: capture first, since the first call is usually list_windows; input once it is up
  // (on 2 cores, booting both at once slows the one that is needed first).
  if (sup.config.platform) {
    const { capture, input } = sup.workers;
    capture.warm().finally(() => input.warm());
  }
  const server = createMcpServer(sup, (info) => sup.setClient(info));
  // One 'drain' listener on stdout however many answers are in flight (stdoutWriter.ts).
  const transport = new StdioServerTransport(process.stdin, singleDrainWriter(process.stdout));
  let closing = false;
  const done = new Promise<void>((resolve) => {
    const shutdown = async () => {
      if (closing) return;
      closing = true;
      await sup.close().catch(() => undefined);
      await server.close().catch(() => undefined);
      resolve();
    };
    server.onclose = () => void shutdown();
    process.stdin.on("end", () => void shutdown());
    process.on("SIGINT", () => void shutdown());
    process.on("SIGTERM", () => void shutdown());
  });
  await server.connect(transport);
  log.info({ platform: sup.config.platform, isolation: sup.config.isolation }, "server_started");
  await done;
  log.flush();
  return 0;
}
