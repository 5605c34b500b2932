import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { pino } from "pino";
import { ClientIdentity, newConnectionSalt } from "../../src/supervisor/access/clientIdentity.js";
import { buildSupervisor } from "../../src/supervisor/bootstrap.js";
import type { PortalPort } from "../../src/supervisor/consent/portalGate.js";
import { supervisorFor } from "../../src/supervisor/mcp/multiSession.js";
import { createMcpServer } from "../../src/supervisor/mcp/server.js";
import { ClientHarness, type FakeDesktop, LOOSE_BUDGETS, type ServerHarness } from "./mcp.js";

/**
 * The server in this test's own thread: the real supervisor (policy, consent, grants, tokens,
 * budgets, audit, the tool table) and the real worker dispatchers on the fake platform through
 * the `inline` endpoint (src/workers/inline.ts), driven by the SDK's Client over its
 * InMemoryTransport. Consent is answered by the fake desktop's scenario (docs/spec.md §10), as over
 * stdio. What needs a process of its own (the CLI, stdout purity, signals, process isolation,
 * the release guardian) stays in the stdio suites (McpHarness, ServerProcess).
 */
export class InProcessHarness extends ClientHarness {
  private constructor(
    client: Client,
    /** The server's log lines (pino JSON), where a stdio server would write stderr. */
    stderr: string[],
    readonly sup: ReturnType<typeof buildSupervisor>,
    private readonly server: Server,
  ) {
    super(client, stderr);
  }

  /**
   * `env` is what a stdio test gives the CLI (nothing of the runner's environment leaks in);
   * `clock` replaces Date.now for the supervisor (ManualTime's clock for grants, tokens, budgets).
   */
  static async start(
    env: Record<string, string>,
    clientInfo = { name: "uiinspect-test", version: "1.0.0" },
    opts: { clock?: () => number; portalPort?: PortalPort } = {},
  ): Promise<InProcessHarness> {
    const stderr: string[] = [];
    const logger = pino(
      { level: env.UIINSPECT_LOG_LEVEL ?? "warn", base: { svc: "uiinspect-mcp" } },
      { write: (line: string) => void stderr.push(line) },
    );
    const sup = buildSupervisor({
      env: { UIINSPECT_POLICY_WATCH_MS: "100", ...env },
      logger,
      clock: opts.clock,
      isolation: "inline",
      ...(opts.portalPort ? { portalPort: opts.portalPort } : {}),
    });
    const server = createMcpServer(sup, (info) => sup.setClient(info));
    // The line src/cli/serve.ts logs once connected, so a log check sees what a stdio run sees.
    logger.debug({ platform: sup.config.platform, isolation: sup.config.isolation }, "server_started");
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client(clientInfo);
    await client.connect(clientSide);
    return new InProcessHarness(client, stderr, sup, server);
  }

  /**
   * Another client on this same supervisor (its own identity, grants, tokens and budgets), as
   * remote mode serves many sessions from one server (src/supervisor/mcp/multiSession.ts).
   */
  async join(clientInfo: { name: string; version: string }): Promise<ServerHarness & { clientHash: string }> {
    const identity = ClientIdentity.fromClientInfo(clientInfo, newConnectionSalt());
    const server = createMcpServer(supervisorFor(this.sup, identity, null), () => undefined);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client(clientInfo);
    await client.connect(clientSide);
    return new JoinedClient(client, this.stderr, server, identity.hash);
  }

  /** As a stdio server ends: workers stopped, grants revoked, then the connection closed. */
  async close(): Promise<void> {
    await this.client.close();
    await this.sup.close();
    await this.server.close();
  }
}

/** A second client of an in-process supervisor: closing it ends only its connection. */
class JoinedClient extends ClientHarness {
  constructor(
    client: Client,
    stderr: string[],
    private readonly server: Server,
    /** The identity's hash, as the stores (and a revocation) name it. */
    readonly clientHash: string,
  ) {
    super(client, stderr);
  }

  async close(): Promise<void> {
    await this.client.close();
    await this.server.close();
  }
}

export interface InProcessOptions {
  platform: "fake";
  /** The simulated desktop (its scenario file answers consent too). */
  scenario: FakeDesktop;
  /** A policy file path, written with FakeDesktop.writePolicy or Desk.policy. */
  policy?: string;
  clock?: () => number;
  env?: Record<string, string>;
  client?: { name: string; version: string };
}

/** The in-process server on a fake desktop with loose budgets (rate tests pass their own). */
export function startInProcess(o: InProcessOptions): Promise<InProcessHarness> {
  return InProcessHarness.start(
    {
      UIINSPECT_PLATFORM: o.platform,
      UIINSPECT_FAKE_DESKTOP: o.scenario.path,
      ...(o.policy ? { DESKTOP_AUTOMATION_POLICY_FILE: o.policy } : {}),
      ...LOOSE_BUDGETS,
      ...o.env,
    },
    o.client,
    { clock: o.clock },
  );
}
