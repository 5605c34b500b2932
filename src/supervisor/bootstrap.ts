import { createRequire } from "node:module";
import { GuardianHost } from "../guardian/host.js";
import { showWaylandDialog } from "../platforms/wayland/consent.js";
import { DialogGate } from "../shared/dialogGate.js";
import { uiError } from "../shared/errors.js";
import { FairShare } from "../shared/fairShare.js";
import type { WorkerKind } from "../shared/protocol.js";
import { SETTINGS } from "../shared/settings.js";
import { readSetting } from "../shared/settingsReader.js";
import { SHOTS_IN_FLIGHT } from "../shared/shots.js";
import { auditIdOf, ClientIdentity, newConnectionSalt } from "./access/clientIdentity.js";
import { GrantStore, type RevokeReason } from "./access/grants.js";
import type { LeaseGate } from "./access/leaseGate.js";
import { createLeaseGate } from "./access/leaseGateImpl.js";
import { A11ySessions } from "./access/sessions.js";
import { ConfirmationTokenStore } from "./access/tokens.js";
import { AuditLog } from "./audit.js";
import { budgetConfigFromEnv, MemoryBudget, memoryBudgetBytesFromEnv, RateBudgets } from "./budgets.js";
import { loadConfig, type ServerConfig } from "./config.js";
import { ConsentBroker } from "./consent/broker.js";
import { describeConsentDialog } from "./consent/dialogInfo.js";
import { FakePrompter } from "./consent/fakePrompter.js";
import { GatedPrompter } from "./consent/gatedPrompter.js";
import { PortalGate, type PortalPort } from "./consent/portalGate.js";
import type { ConsentPrompter } from "./consent/prompter.js";
import { createWorkerPortalPort } from "./consent/workerPortal.js";
import { CONSENT_DIALOG_TITLE, X11Prompter } from "./consent/x11Prompter.js";
import { InputLane } from "./hosting/inputLane.js";
import { type Isolation, WorkerHost } from "./hosting/workerHost.js";
import { log as defaultLog, type Logger } from "./log.js";
import { loadPolicy, policyStatusAt } from "./policy/load.js";
import { CAPABILITY_TABLE } from "./policy/schema.js";
import { PolicyWatcher } from "./policy/watch.js";
import { type KeptFrames, keptFrames } from "./screenshot/keptFrames.js";
import type { Supervisor, Workers } from "./supervisor.js";

export function serverVersion(): string {
  const require = createRequire(import.meta.url);
  return (require("../../package.json") as { version: string }).version;
}

/** A prompter for a platform without a dialog of its own: consent can never be given. */
class UnavailablePrompter implements ConsentPrompter {
  readonly simulated = false;
  async prompt(): Promise<never> {
    throw uiError("platform_unavailable", "No trusted consent dialog is available on this platform.");
  }
}

function prompterFor(
  config: ServerConfig,
  workers: Workers,
  env: Record<string, string | undefined>,
): ConsentPrompter {
  switch (config.platform) {
    case "fake":
      // The scripted consent answer exists only on the simulated desktop.
      return config.fakeDesktop ? new FakePrompter(config.fakeDesktop) : new UnavailablePrompter();
    case "x11":
      return new X11Prompter(env, config.consentTimeoutMs);
    case "win32":
      return new WorkerDialogPrompter(workers.input);
    case "wayland":
      // The first of two gates; the compositor's portal dialog follows an approval (PortalGate).
      return new WaylandPrompter(env, config.consentTimeoutMs);
    default:
      return new UnavailablePrompter();
  }
}

/** What the Wayland dialog adds to the server-built text: the second gate comes next. */
export const WAYLAND_SECOND_GATE_LINE =
  "After Allow, the system's own sharing dialog asks you to pick this application's window and to allow remote control. Access ends when that sharing stops.";

/** Wayland: zenity's question box, the first gate (src/platforms/wayland/consent.ts). */
class WaylandPrompter implements ConsentPrompter {
  readonly simulated = false;
  constructor(
    private readonly env: Record<string, string | undefined>,
    private readonly timeoutMs: number,
  ) {}
  prompt(content: { text: string }, signal: AbortSignal): Promise<"approve" | "deny"> {
    return showWaylandDialog(
      {
        title: CONSENT_DIALOG_TITLE,
        text: `${content.text}\n\n${WAYLAND_SECOND_GATE_LINE}`,
        timeoutMs: this.timeoutMs + 5000,
      },
      this.env,
      signal,
    );
  }
}

/** Win32: the dialog is native code, so it runs in the input worker's dialog thread. */
class WorkerDialogPrompter implements ConsentPrompter {
  readonly simulated = false;
  constructor(private readonly host: WorkerHost) {}
  async prompt(content: { text: string }, signal: AbortSignal): Promise<"approve" | "deny"> {
    const r = await this.host.call("dialog.consent", { text: content.text }, { deadlineMs: 600_000, signal });
    return r.answer;
  }
}

/**
 * Whether the input worker is likely to be needed soon: on Windows it shows the consent dialog;
 * elsewhere only when the policy in force allows a capability that drives input. An input
 * worker is a whole isolate (12–20 MiB); a server for observing and inspecting never needs
 * one, and restore_window (observe) or a policy that starts allowing input later starts it
 * at its first call, as after a crash (its deadline starts once it is ready).
 */
export function inputWorkerExpected(sup: Pick<Supervisor, "config" | "policyState" | "clock">): boolean {
  if (sup.config.platform === "win32") return true;
  const state = policyStatusAt(sup.policyState, () => new Date(sup.clock()));
  if (state.status !== "ok") return false;
  return [...state.policy.allowed_actions].some((c) => CAPABILITY_TABLE[c].openWorld);
}

/**
 * Workers boot (module loading, ~0.25 s) while the MCP server is built and the client says
 * hello: capture first, since the first call is usually list_windows; input once it is up
 * (on 2 cores, booting both at once slows the one that is needed first) and only when expected.
 */
export function warmWorkers(sup: Supervisor): void {
  if (!sup.config.platform) return;
  const { capture, input } = sup.workers;
  capture.warm().finally(() => {
    if (inputWorkerExpected(sup)) void input.warm();
  });
}

export interface BuildOptions {
  env?: Record<string, string | undefined>;
  logger?: Logger;
  clock?: () => number;
  /**
   * Overrides the configured isolation; `inline` (workers on this thread, src/workers/inline.ts)
   * is for the in-process test harness (test/support/inProcess.ts) and has no setting.
   */
  isolation?: Isolation;
  /** The compositor's portal on Wayland; tests pass their own (in process, no compositor). */
  portalPort?: PortalPort;
}

type RevocationAudit = (
  client: string,
  instance: { pid: number; start_time: string },
  reason: Exclude<RevokeReason, "released" | "expired">,
  counters?: Record<string, number | boolean>,
) => void;

/** The worker hosts: the release guardian, when there is one, sees every press of the input worker. */
function workerHostFactory(
  config: ServerConfig,
  logger: Logger,
  dialogs: DialogGate,
  guardian: GuardianHost | null,
): (kind: WorkerKind) => WorkerHost {
  return (kind) =>
    new WorkerHost({
      init: {
        kind,
        platform: config.platform ?? "fake",
        fake_desktop: config.fakeDesktop,
        log_level: config.logLevel,
      },
      isolation: config.isolation,
      logger,
      // Only the input worker injects events; it checks the gate before each one.
      ...(kind === "input" ? { dialogGate: dialogs } : {}),
      guardian: kind === "input" && guardian ? guardian : undefined,
    });
}

/** The consent broker over the platform's dialog, held back while another dialog of ours shows. */
function createConsent(
  config: ServerConfig,
  workers: Workers,
  env: Record<string, string | undefined>,
  dialogs: DialogGate,
  clock: () => number,
): ConsentBroker {
  return new ConsentBroker({
    prompter: new GatedPrompter(prompterFor(config, workers, env), dialogs),
    clock,
    timeoutMs: config.consentTimeoutMs,
    grantTtlMs: config.grantTtlMs,
    isInstanceAlive: async (instance) => {
      try {
        return (
          await workers.capture.call(
            "desktop.alive",
            { instance },
            // Waited for 5 s; only the worker's own deadline may tear it down.
            { deadlineMs: config.workerDeadlineMs, waitMs: 5000 },
          )
        ).alive;
      } catch {
        return true; // a slow worker is not proof of exit; the dialog's own timeout still applies
      }
    },
  });
}

/** A revocation not seen by a call is still audited, as a denial of the tool "revocation". */
function revocationAuditor(audit: AuditLog, policyId: () => string | null): RevocationAudit {
  return (client, instance, reason, counters = {}) =>
    audit.record(
      {
        correlation_id: "000000000000",
        client: auditIdOf(client),
        policy_id: policyId(),
        action: "none",
        tool: "revocation",
        outcome: "deny",
        reason:
          reason === "shutdown" ? "cancelled" : reason === "portal_closed" ? "consent_required" : reason,
        duration_ms: 0,
        pid: instance.pid,
        process_start: instance.start_time,
        counters: reason === "portal_closed" ? { portal_closed: true, ...counters } : counters,
      },
      client,
    );
}

/**
 * The compositor's second gate on Wayland (or the tests' port). The compositor ended a portal
 * session: the grant given under it ends, and so does the kept approval (no silent renewal), so
 * the next request_access passes both gates again.
 */
function createPortal(
  port: PortalPort | null,
  deps: {
    clock: () => number;
    timeoutMs: number;
    dialogs: DialogGate;
    consent: ConsentBroker;
    grants: GrantStore;
    auditRevocation: RevocationAudit;
  },
): PortalGate | null {
  if (!port) return null;
  const { consent, grants, auditRevocation } = deps;
  return new PortalGate({
    port,
    clock: deps.clock,
    timeoutMs: deps.timeoutMs,
    holdDialog: () => deps.dialogs.hold(),
    onEnded: (e) => {
      consent.forgetApproval(e.client, e.instanceKey);
      const detail = { stream_ended: e.why === "stream_ended", bus_lost: e.why === "bus_lost" };
      if (!grants.revoke(e.client, e.instanceKey, "portal_closed", detail))
        auditRevocation(e.client, e.instance, "portal_closed", detail);
    },
  });
}

/**
 * What ends with a grant: its a11y sessions, the frames the capture worker kept for it, its
 * tokens when the target changed, its portal session.
 */
function onGrantRevoked(
  grants: GrantStore,
  deps: {
    sessions: A11ySessions;
    kept: KeptFrames;
    tokens: ConfirmationTokenStore;
    portal: PortalGate | null;
    auditRevocation: RevocationAudit;
  },
): void {
  const { sessions, kept, tokens, portal, auditRevocation } = deps;
  grants.onRevoke((e) => {
    sessions.disposeByInstance(e.grant.instanceKey, e.grant.client);
    kept.grantEnded(e);
    // Tokens are bound to the instance: one that changed or left can never use them.
    if (e.reason === "target_changed" || e.reason === "target_gone")
      tokens.revokeInstance(e.grant.instanceKey);
    // A grant ended for good takes its portal session along (an expired one is renewed under it).
    if (e.reason !== "expired" && e.reason !== "portal_closed")
      portal?.end(e.grant.client, e.grant.instanceKey);
    if (e.reason !== "released" && e.reason !== "expired")
      auditRevocation(e.grant.client, e.grant.instance, e.reason, e.detail);
  });
}

function createAudit(config: ServerConfig, clock: () => number, logger: Logger): AuditLog {
  return new AuditLog({
    capacity: 1000,
    filePath: config.auditFile,
    clock,
    onSinkError: (code) => logger.error({ code }, "audit_sink_error"),
    onReject: (fields) => logger.error({ fields }, "audit_event_rejected"),
  });
}

/**
 * The release guardian: every press and remap of the input worker is recorded there first, so
 * nothing stays down whatever ends the worker or this process (docs/architecture.md).
 * An inline worker lives and dies with this thread: there is no separate worker to outlive.
 */
function guardianFor(
  config: ServerConfig,
  logger: Logger,
  env: Record<string, string | undefined>,
): GuardianHost | null {
  return config.platform && config.isolation !== "inline"
    ? new GuardianHost(config.platform, logger, env as NodeJS.ProcessEnv)
    : null;
}

/** Grants end first (their revocations audited, their portal sessions closed), the audit log last. */
async function shutDown(p: {
  watcher: PolicyWatcher;
  grants: GrantStore;
  portal: PortalGate | null;
  consent: ConsentBroker;
  workers: Workers;
  sessions: A11ySessions;
  guardian: GuardianHost | null;
  audit: AuditLog;
}): Promise<void> {
  p.watcher.stop();
  p.grants.revokeAll("shutdown");
  p.portal?.endAll();
  p.consent.dispose();
  await Promise.all([...Object.values(p.workers).map((w) => w.close()), p.sessions.closeAll()]);
  await p.guardian?.close(300);
  await p.audit.close();
}

export type BuiltSupervisor = Supervisor & {
  close(): Promise<void>;
  setClient(info: unknown): void;
  checkPolicyNow(): void;
};

export function buildSupervisor(opts: BuildOptions = {}): BuiltSupervisor {
  const env = opts.env ?? process.env;
  const logger = opts.logger ?? defaultLog;
  const clock = opts.clock ?? Date.now;
  const loaded = loadConfig(env);
  const config = opts.isolation ? { ...loaded, isolation: opts.isolation } : loaded;
  const policyState = loadPolicy(env, () => new Date(clock()));
  const dialogs = new DialogGate();
  const guardian = guardianFor(config, logger, env);
  const makeHost = workerHostFactory(config, logger, dialogs, guardian);
  const workers: Workers = { capture: makeHost("capture"), input: makeHost("input") };
  const grants = new GrantStore(clock, config.grantTtlMs);
  const salt = newConnectionSalt();
  let client = ClientIdentity.fromClientInfo(null, salt);
  const consent = createConsent(config, workers, env, dialogs, clock);
  const sessions = new A11ySessions(() => makeHost("uia"), logger, config.isolation, {
    idleRetireMs: config.uiaIdleRetireMs,
  });
  const tokens = new ConfirmationTokenStore(clock);
  const audit = createAudit(config, clock, logger);
  // The policy id is the one in force when the revocation happens (the watcher may replace it).
  const auditRevocation = revocationAuditor(audit, () =>
    built.policyState.status === "ok" ? built.policyState.policy.policy_id : null,
  );
  const portalPort =
    opts.portalPort ??
    (config.platform === "wayland" ? createWorkerPortalPort(workers, config.consentTimeoutMs) : null);
  const portal = createPortal(portalPort, {
    clock,
    timeoutMs: config.consentTimeoutMs,
    dialogs,
    consent,
    grants,
    auditRevocation,
  });
  const kept = keptFrames(workers.capture, config.workerDeadlineMs);
  onGrantRevoked(grants, { sessions, kept, tokens, portal, auditRevocation });
  const lease: LeaseGate | null = config.lease === "broker" ? createLeaseGate(env) : null;
  const sup: Supervisor = {
    config,
    policyState,
    clock,
    log: logger,
    audit,
    budgets: new RateBudgets(budgetConfigFromEnv(env), clock),
    memory: new MemoryBudget(memoryBudgetBytesFromEnv(env)),
    grants,
    tokens,
    consent,
    sessions,
    workers,
    lease,
    dialogs,
    inputLane: new InputLane(),
    shotTurns: new FairShare(SHOTS_IN_FLIGHT),
    consentDialog: describeConsentDialog(config.platform, env),
    portal,
    client: () => client,
    startedAt: clock(),
    version: serverVersion(),
  };
  const built = {
    ...sup,
    client: () => client,
    setClient: (info: unknown) => {
      client = ClientIdentity.fromClientInfo(info, salt);
    },
    onPolicyChange: (listener: () => void) => watcher.onChange(listener),
    /** One look at the policy file now, as the watcher's timer takes (tests tick it by hand). */
    checkPolicyNow: () => watcher.check(),
    close: () => shutDown({ watcher, grants, portal, consent, workers, sessions, guardian, audit }),
  };
  const watcher = watchPolicy(env, clock, built);
  watcher.onChange(() => kept.policyChanged());
  return built;
}

/** The policy file is read again when it changes; every call sees the new state at once. */
function watchPolicy(
  env: Record<string, string | undefined>,
  clock: () => number,
  built: Pick<Supervisor, "policyState">,
): PolicyWatcher {
  const watcher = new PolicyWatcher(
    env,
    () => new Date(clock()),
    () => built.policyState,
    (state) => {
      built.policyState = state;
    },
  );
  watcher.start(readSetting(env, SETTINGS.policyWatchMs));
  return watcher;
}
