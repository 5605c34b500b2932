import type { DialogGate } from "../shared/dialogGate.js";
import { uiError } from "../shared/errors.js";
import type { FairShare } from "../shared/fairShare.js";
import type { ClientIdentity } from "./access/clientIdentity.js";
import type { GrantStore } from "./access/grants.js";
import type { LeaseGate } from "./access/leaseGate.js";
import type { A11ySessions } from "./access/sessions.js";
import type { ConfirmationTokenStore } from "./access/tokens.js";
import type { AuditLog } from "./audit.js";
import type { MemoryBudget, RateBudgets } from "./budgets.js";
import type { ServerConfig } from "./config.js";
import type { ConsentBroker } from "./consent/broker.js";
import type { ConsentDialogFacts } from "./consent/dialogInfo.js";
import type { PortalGate } from "./consent/portalGate.js";
import type { InputLane } from "./hosting/inputLane.js";
import type { WorkerHost } from "./hosting/workerHost.js";
import type { Logger } from "./log.js";
import type { EffectivePolicy, PolicyState } from "./policy/load.js";
import { policyStatusAt } from "./policy/load.js";

export interface Workers {
  capture: WorkerHost;
  input: WorkerHost;
}

/**
 * Everything the supervisor owns. Built once per server; over stdio one MCP connection uses it,
 * over HTTP every session gets a view of it (src/supervisor/mcp/multiSession.ts) that differs only
 * in `client` and, for narrowing OAuth scopes, `policyState`.
 */
export interface Supervisor {
  config: ServerConfig;
  policyState: PolicyState;
  clock: () => number;
  log: Logger;
  audit: AuditLog;
  budgets: RateBudgets;
  memory: MemoryBudget;
  grants: GrantStore;
  tokens: ConfirmationTokenStore;
  consent: ConsentBroker;
  sessions: A11ySessions;
  workers: Workers;
  lease: LeaseGate | null;
  /**
   * The compositor's portal dialog, the second consent gate (Wayland): a grant stands only while
   * its portal session is open. Absent where the platform has none.
   */
  portal?: PortalGate | null;
  /** How many of our consent/lease dialogs are open (input is refused while any is). */
  dialogs: DialogGate;
  /** Serializes each client's input effects. */
  inputLane: InputLane;
  /**
   * Every identity's screenshots at the one capture worker, in turns: as many in flight as the
   * worker works on at once (SHOTS_IN_FLIGHT), then round robin by identity, so one identity's
   * backlog of shots does not hold back another's. Taken through ShotLane
   * (screenshot/shotLane.ts), which reserves a shot's memory only inside its turn.
   */
  shotTurns: FairShare;
  /** The consent dialog's mechanism and unsafe settings, for health_check and doctor. */
  consentDialog: ConsentDialogFacts;
  client: () => ClientIdentity;
  startedAt: number;
  version: string;
  /**
   * Calls the listener whenever the policy state changes while the server runs (the file was
   * edited, the policy expired); returns the way to stop. Absent where nothing watches it.
   */
  onPolicyChange?: (listener: () => void) => () => void;
  /**
   * Remote mode's own health facts (the revocation list), for health_check; absent over stdio.
   * `degraded` makes health_check say degraded.
   */
  remoteHealth?: () => { degraded: boolean; revocation_list: RemoteRevocationHealth | null };
}

/** The revocation list as health_check shows it (src/remote/revocation.ts). */
export interface RemoteRevocationHealth {
  status: "ok" | "stale" | "unreadable";
  entries: number;
  bad_lines?: number[] | undefined;
}

/** The policy in force at the supervisor's clock, or the refusal that stands instead of one. */
export function requirePolicy(sup: Supervisor): EffectivePolicy {
  const state = policyStatusAt(sup.policyState, () => new Date(sup.clock()));
  if (state.status === "none") throw uiError("policy_not_configured");
  if (state.status === "error") throw uiError(state.code);
  return state.policy;
}
