import inspector from "node:inspector";
import { type DenyReason, isUiError, type UiError, uiError } from "../shared/errors.js";
import { sameInstance } from "../shared/identity.js";
import {
  JsonlLeaseAudit,
  type LeaseAuditEventName,
  type LeaseAuditFields,
  type LeaseAuditSink,
} from "./audit.js";
import {
  buildLeaseDialogContent,
  type LeaseDialog,
  type LeaseDialogAnswer,
  leaseDialogTimeoutMs,
  selectLeaseDialog,
} from "./dialog.js";
import type { Env, LeaseScope } from "./endpoint.js";
import type { InstanceResolver } from "./instance.js";
import {
  encodeFrame,
  errorResponse,
  FrameDecoder,
  LEASE_PROTOCOL_VERSION,
  type LeaseRequest,
  LeaseRequestSchema,
  type LeaseResponse,
  type LeaseStatus,
  okResponse,
} from "./protocol.js";
import { resolveScope } from "./scope.js";
import { type ActiveLease, HOUR_MS, LeaseState } from "./state.js";
import {
  type AcceptFn,
  AlreadyRunningError,
  type BrokerTransport,
  type ConnectionHandlers,
  type RefusalReason,
  type ScopeMarker,
} from "./transport.js";

/**
 * The lease broker: one per (user, sign-in session). It holds the unattended lease in memory
 * only, answers validate/status/revoke from any same-user peer, and shows the trusted dialog
 * itself for activate/extend. Every validation re-resolves the target process instance from
 * the OS and compares it field by field with what the caller claims.
 */

export interface BrokerOptions {
  env?: Env;
  /** Defaults to resolveScope(env). */
  scope?: LeaseScope;
  /** Epoch ms; injected in tests. */
  clock?: () => number;
  /** Defaults to the JSONL file of the scope. */
  audit?: LeaseAuditSink;
  /** Stops the broker when aborted (runBroker also stops on SIGTERM/SIGINT/SIGHUP/SIGBREAK). */
  signal?: AbortSignal;
  /** Diagnostics for a person (stderr in brokerMain); never UI content. */
  log?: (line: string) => void;
}

export interface BrokerHandle {
  readonly scope: LeaseScope;
  readonly state: LeaseState;
  /** Stops listening, forgets the lease, releases the marker. */
  stop(): Promise<void>;
}

/** Exit codes of `uiinspect-mcp broker`. */
export const BROKER_EXIT = { ok: 0, failed: 2, alreadyRunning: 3 } as const;

const DIALOG_MARGIN_MS = 500;
const DENIAL_COALESCE_MS = 5000;

type Emit = (event: LeaseAuditEventName, fields?: LeaseAuditFields) => void;
type Listen = (
  accept: AcceptFn,
  refused: (r: RefusalReason, p: { pid?: number; uid?: number }) => void,
) => Promise<BrokerTransport>;

/** The OS's parts of a broker: the scope's marker (taken first), its listener and its resolver. */
async function platformParts(
  scope: LeaseScope,
  uid: number,
): Promise<{ marker: ScopeMarker; listen: Listen; resolver: InstanceResolver }> {
  if (scope.platform === "linux") {
    const lt = await import("./linuxTransport.js");
    const marker = lt.acquireLinuxMarker(scope, uid);
    const { linuxInstanceResolver } = await import("./instance.js");
    const resolver = linuxInstanceResolver({
      clockTicks: lt.clockTicksPerSecond(),
      session: scope.instance_session,
    });
    return { marker, listen: (a, r) => lt.listenLinux(scope, uid, a, r), resolver };
  }
  const wt = await import("./native/windows.js");
  const marker = wt.acquireWindowsMarker(scope);
  return {
    marker,
    listen: (a, r) => wt.listenWindowsPipe(scope, a, r),
    resolver: wt.windowsInstanceResolver(scope.instance_session),
  };
}

/**
 * One lease dialog at a time, open at most the consent timeout and never past the request's
 * deadline. At the timeout (or the request's end) the caller is answered consent_timeout at once,
 * without waiting for the dialog's window to close: its process may take seconds to exit on a
 * loaded machine, past the request's deadline. The slot stays taken until it has closed.
 */
export class DialogSlot {
  private open = false;

  constructor(
    private readonly dialog: LeaseDialog,
    private readonly consentTimeoutMs: number,
  ) {}

  async ask(
    action: "activate" | "extend",
    hours: number,
    caps: ActiveLease["capabilities"],
    expiresAtMs: number,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<boolean> {
    if (this.open) throw uiError("rate_limited", "A lease dialog is already open.");
    this.open = true;
    const content = buildLeaseDialogContent(action, hours, caps, new Date(expiresAtMs).toISOString());
    const ac = new AbortController();
    const onAbort = () => ac.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(
      () => ac.abort(),
      Math.max(1, Math.min(this.consentTimeoutMs, timeoutMs - DIALOG_MARGIN_MS)),
    );
    let shown: Promise<LeaseDialogAnswer>;
    try {
      shown = this.dialog.prompt(content, ac.signal);
    } catch (e) {
      shown = Promise.reject(e);
    }
    const closed = shown.finally(() => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      this.open = false;
    });
    const ended = new Promise<never>((_, reject) => {
      const fail = () => reject(uiError("consent_timeout"));
      if (ac.signal.aborted) fail();
      else ac.signal.addEventListener("abort", fail, { once: true });
    });
    closed.catch(() => {});
    ended.catch(() => {});
    return (await Promise.race([closed, ended])) === "approve";
  }
}

/**
 * Identical denials (reason, capability, target) within DENIAL_COALESCE_MS are counted, not
 * written one by one: a server polling without a lease must not flood the audit file.
 */
class DenialLog {
  private readonly seen = new Map<string, { atMs: number; suppressed: number }>();

  constructor(
    private readonly emit: Emit,
    private readonly clock: () => number,
  ) {}

  record(code: DenyReason, req: Extract<LeaseRequest, { op: "validate" }>): void {
    const key = `${code}\u0000${req.capability}\u0000${req.instance.pid}\u0000${req.instance.start_time}`;
    const seen = this.seen.get(key);
    const t = this.clock();
    if (seen && t - seen.atMs < DENIAL_COALESCE_MS) {
      seen.suppressed++;
      return;
    }
    this.emit("validation_denied", {
      reason: code,
      capability: req.capability,
      pid: req.instance.pid,
      process_start: req.instance.start_time,
      ...(seen && seen.suppressed > 0 ? { suppressed: seen.suppressed } : {}),
    });
    this.seen.set(key, { atMs: t, suppressed: 0 });
    if (this.seen.size > 1000) this.seen.clear();
  }
}

interface LeaseServiceParts {
  scope: LeaseScope;
  state: LeaseState;
  resolver: InstanceResolver;
  clock: () => number;
  emit: Emit;
  dialogs: DialogSlot;
  startedAt: string;
}

/** What the broker answers: one method per request op, over the lease it holds. */
class LeaseService {
  private expiryTimer: NodeJS.Timeout | null = null;
  private readonly denials: DenialLog;

  constructor(private readonly p: LeaseServiceParts) {
    this.denials = new DenialLog(p.emit, p.clock);
  }

  handle(req: LeaseRequest, signal: AbortSignal): Promise<unknown> {
    switch (req.op) {
      case "status":
        return Promise.resolve(this.status());
      case "revoke":
        return Promise.resolve(this.revoke());
      case "validate":
        return this.validate(req);
      case "activate":
        return this.activate(req, signal);
      case "extend":
        return this.extend(req, signal);
    }
  }

  status(): LeaseStatus {
    const l = this.p.state.current();
    return {
      active: l !== null,
      expires_at: l ? new Date(l.expiresAtMs).toISOString() : null,
      capabilities: l ? l.capabilities : [],
      broker_started_at: this.p.startedAt,
      broker_pid: process.pid,
    };
  }

  /** Ends the lease and its timer (stop); true when there was one. */
  end(): boolean {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = null;
    const had = this.p.state.current() !== null;
    this.p.state.revoke();
    return had;
  }

  private armExpiry(l: ActiveLease | null): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = null;
    if (!l) return;
    const delay = Math.max(0, Math.min(l.expiresAtMs - this.p.clock(), 2 ** 31 - 1));
    this.expiryTimer = setTimeout(() => this.armExpiry(this.p.state.current()), delay + 5);
  }

  private revoke(): { revoked: boolean } {
    const revoked = this.p.state.revoke();
    this.armExpiry(null);
    if (revoked) this.p.emit("revoke");
    return { revoked };
  }

  private async validate(req: Extract<LeaseRequest, { op: "validate" }>): Promise<unknown> {
    const { state, scope } = this.p;
    try {
      state.check(req.capability);
      const live = await this.p.resolver(req.instance.pid);
      if (!live) throw uiError("target_gone", "The target process is not running.");
      // Same exact instance, and inside this broker's sign-in session.
      if (req.instance.session !== scope.instance_session || !sameInstance(live, req.instance)) {
        throw uiError("target_changed");
      }
      // The lease may have ended while the instance was being resolved.
      const l = state.check(req.capability);
      return { decision: "ok", expires_at: new Date(l.expiresAtMs).toISOString() };
    } catch (e) {
      const err = isUiError(e) ? e : uiError("lease_revoked");
      this.denials.record(err.code, req);
      throw err;
    }
  }

  /** The dialog's answer; a refusal of any kind is audited as `denied` with its reason. */
  private async approved(
    denied: "activate_denied" | "extend_denied",
    ask: () => Promise<boolean>,
    hours: number,
    deniedText: string,
  ): Promise<void> {
    let approved: boolean;
    try {
      approved = await ask();
    } catch (e) {
      const err = isUiError(e) ? e : uiError("consent_denied");
      this.p.emit(denied, { hours, reason: err.code });
      throw err;
    }
    if (!approved) {
      this.p.emit(denied, { hours, reason: "consent_denied" });
      throw uiError("consent_denied", deniedText);
    }
  }

  private async activate(
    req: Extract<LeaseRequest, { op: "activate" }>,
    signal: AbortSignal,
  ): Promise<unknown> {
    const { state, clock, emit } = this.p;
    const caps = [...new Set(req.capabilities)];
    const expiresAtMs = clock() + req.hours * HOUR_MS;
    await this.approved(
      "activate_denied",
      () => this.p.dialogs.ask("activate", req.hours, caps, expiresAtMs, req.timeout_ms, signal),
      req.hours,
      "The unattended lease was denied.",
    );
    if (expiresAtMs <= clock()) {
      emit("activate_denied", { hours: req.hours, reason: "consent_timeout" });
      throw uiError("consent_timeout");
    }
    const l = state.activate(expiresAtMs, caps);
    this.armExpiry(l);
    emit("activate", {
      hours: req.hours,
      capabilities: l.capabilities,
      expires_at: new Date(l.expiresAtMs).toISOString(),
    });
    return this.status();
  }

  private async extend(req: Extract<LeaseRequest, { op: "extend" }>, signal: AbortSignal): Promise<unknown> {
    const { state, emit } = this.p;
    const target = state.extendedExpiry(req.hours);
    const caps = state.current()?.capabilities ?? [];
    await this.approved(
      "extend_denied",
      () => this.p.dialogs.ask("extend", req.hours, caps, target, req.timeout_ms, signal),
      req.hours,
      "The lease extension was denied.",
    );
    const l = state.extendTo(target);
    this.armExpiry(l);
    emit("extend", {
      hours: req.hours,
      capabilities: l.capabilities,
      expires_at: new Date(l.expiresAtMs).toISOString(),
    });
    return this.status();
  }
}

/** The answer to a request that did not parse: invalid_argument, under its id when it had one. */
function badRequestResponse(raw: unknown): LeaseResponse {
  const id =
    raw && typeof raw === "object" && "id" in raw && typeof raw.id === "string" && raw.id.length <= 64
      ? raw.id
      : "";
  const wrongVersion = raw && typeof raw === "object" && "v" in raw && raw.v !== LEASE_PROTOCOL_VERSION;
  return errorResponse(
    id,
    uiError(
      "invalid_argument",
      wrongVersion ? "Unsupported lease protocol version." : "The lease request is invalid.",
    ),
  );
}

/**
 * One connection: frames in, one answer per request (or broker_unavailable at the request's
 * deadline), and every pending dialog of a caller that went away closed (closed = deny).
 */
function connectionHandler(service: LeaseService, emit: Emit): AcceptFn {
  return (peer, io) => {
    const decoder = new FrameDecoder();
    const inflight = new Set<AbortController>();
    let open = true;
    const send = (r: LeaseResponse) => {
      if (open) io.write(encodeFrame(r));
    };
    const run = (raw: unknown) => {
      const parsed = LeaseRequestSchema.safeParse(raw);
      if (!parsed.success) {
        emit("protocol_error", { reason: "bad_request", peer_pid: peer.pid ?? undefined });
        send(badRequestResponse(raw));
        return;
      }
      const req = parsed.data;
      const ac = new AbortController();
      inflight.add(ac);
      let done = false;
      const finish = (r: LeaseResponse) => {
        if (done) return;
        done = true;
        clearTimeout(deadline);
        inflight.delete(ac);
        send(r);
      };
      const deadline = setTimeout(() => {
        if (done) return;
        ac.abort();
        finish(
          errorResponse(req.id, uiError("broker_unavailable", "The broker missed the request's deadline.")),
        );
      }, req.timeout_ms);
      service.handle(req, ac.signal).then(
        (result) => finish(okResponse(req.id, result)),
        (e: unknown) =>
          finish(errorResponse(req.id, isUiError(e) ? e : (uiError("broker_unavailable") as UiError))),
      );
    };
    const handlers: ConnectionHandlers = {
      data(chunk) {
        let messages: unknown[];
        try {
          messages = decoder.push(chunk);
        } catch {
          emit("protocol_error", { reason: "bad_frame", peer_pid: peer.pid ?? undefined });
          open = false;
          io.close();
          return;
        }
        for (const m of messages) run(m);
      },
      closed() {
        open = false;
        for (const ac of inflight) ac.abort();
        inflight.clear();
      },
    };
    return handlers;
  };
}

export async function startBroker(opts: BrokerOptions = {}): Promise<BrokerHandle> {
  const env = opts.env ?? process.env;
  const scope = opts.scope ?? (await resolveScope(env));
  const clock = opts.clock ?? Date.now;
  const startedAt = new Date(clock()).toISOString();
  // The marker first: a second broker for this scope stops here, before touching anything.
  const { marker, listen, resolver } = await platformParts(scope, process.getuid?.() ?? -1);
  let transport: BrokerTransport | null = null;
  try {
    const audit = opts.audit ?? new JsonlLeaseAudit(scope.audit_path);
    // Only UIINSPECT_LEASE_DIALOG picks the dialog, and only among real ones: no injection point.
    const dialogs = new DialogSlot(await selectLeaseDialog(env), leaseDialogTimeoutMs(env));
    const emit: Emit = (event, fields = {}) =>
      audit.write({
        time: new Date(clock()).toISOString(),
        event,
        scope: scope.hash.slice(0, 12),
        broker_pid: process.pid,
        ...fields,
      });
    const state = new LeaseState(clock, (l) =>
      emit("expire", { expires_at: new Date(l.expiresAtMs).toISOString(), capabilities: l.capabilities }),
    );
    const service = new LeaseService({ scope, state, resolver, clock, emit, dialogs, startedAt });
    transport = await listen(connectionHandler(service, emit), (reason, p) =>
      emit("peer_refused", { reason, peer_pid: p.pid, peer_uid: p.uid }),
    );
    emit("broker_start");
    opts.log?.("uiinspect lease broker listening");
    const listening = transport;
    let stopped: Promise<void> | null = null;
    const stop = () => {
      stopped ??= (async () => {
        const had = service.end();
        await listening.close();
        emit("broker_stop", { reason: had ? "lease_revoked" : undefined });
        marker.release();
      })();
      return stopped;
    };
    opts.signal?.addEventListener("abort", () => void stop(), { once: true });
    return { scope, state, stop };
  } catch (e) {
    await transport?.close();
    marker.release();
    throw e;
  }
}

/**
 * `uiinspect-mcp broker`: runs until SIGTERM/SIGINT/SIGHUP/SIGBREAK (or opts.signal) and
 * resolves with the exit code: 0 after a clean stop, 3 when another broker holds this scope,
 * 2 on any other failure.
 */
export async function runBroker(opts: BrokerOptions = {}): Promise<number> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // An inspector port is reachable by every local user: whoever attaches runs code in the
  // process that holds the lease. The broker never runs with one open.
  if (inspector.url() !== undefined) {
    log("uiinspect lease broker: refusing to run with the Node inspector open (--inspect).");
    return BROKER_EXIT.failed;
  }
  let broker: BrokerHandle;
  try {
    broker = await startBroker({ ...opts, log });
  } catch (e) {
    if (e instanceof AlreadyRunningError) {
      log(`uiinspect lease broker: ${e.message} Not starting a second one.`);
      return BROKER_EXIT.alreadyRunning;
    }
    log(`uiinspect lease broker: cannot start: ${isUiError(e) ? e.message : "unexpected failure"}`);
    return BROKER_EXIT.failed;
  }
  return new Promise<number>((resolve) => {
    // SIGBREAK: Ctrl+Break on Windows (Node also maps Ctrl+C to SIGINT and console close to SIGHUP).
    const signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT", "SIGHUP", "SIGBREAK"];
    const onSignal = () => {
      for (const s of signals) process.off(s, onSignal);
      void broker.stop().then(() => resolve(BROKER_EXIT.ok));
    };
    for (const s of signals) process.on(s, onSignal);
    opts.signal?.addEventListener("abort", onSignal, { once: true });
  });
}
