import inspector from "node:inspector";
import { isUiError, type UiError, uiError } from "../shared/errors.js";
import { sameInstance } from "../shared/identity.js";
import {
  JsonlLeaseAudit,
  type LeaseAuditEventName,
  type LeaseAuditFields,
  type LeaseAuditSink,
} from "./audit.js";
import { buildLeaseDialogContent, leaseDialogTimeoutMs, selectLeaseDialog } from "./dialog.js";
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

export async function startBroker(opts: BrokerOptions = {}): Promise<BrokerHandle> {
  const env = opts.env ?? process.env;
  const scope = opts.scope ?? (await resolveScope(env));
  const clock = opts.clock ?? Date.now;
  const startedAt = new Date(clock()).toISOString();
  const uid = process.getuid?.() ?? -1;

  // The marker first: a second broker for this scope stops here, before touching anything.
  let marker: ScopeMarker;
  let listen: (
    accept: AcceptFn,
    refused: (r: RefusalReason, p: { pid?: number; uid?: number }) => void,
  ) => Promise<BrokerTransport>;
  let resolver: InstanceResolver;
  if (scope.platform === "linux") {
    const lt = await import("./linuxTransport.js");
    marker = lt.acquireLinuxMarker(scope, uid);
    listen = (a, r) => lt.listenLinux(scope, uid, a, r);
    const { linuxInstanceResolver } = await import("./instance.js");
    resolver = linuxInstanceResolver({
      clockTicks: lt.clockTicksPerSecond(),
      session: scope.instance_session,
    });
  } else {
    const wt = await import("./native/windows.js");
    marker = wt.acquireWindowsMarker(scope);
    listen = (a, r) => wt.listenWindowsPipe(scope, a, r);
    resolver = wt.windowsInstanceResolver(scope.instance_session);
  }

  let transport: BrokerTransport | null = null;
  try {
    const audit = opts.audit ?? new JsonlLeaseAudit(scope.audit_path);
    // Only UIINSPECT_LEASE_DIALOG picks the dialog, and only among real ones: no injection point.
    const dialog = await selectLeaseDialog(env);
    const emit = (event: LeaseAuditEventName, fields: LeaseAuditFields = {}) =>
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
    let expiryTimer: NodeJS.Timeout | null = null;
    const armExpiry = (l: ActiveLease | null) => {
      if (expiryTimer) clearTimeout(expiryTimer);
      expiryTimer = null;
      if (!l) return;
      const delay = Math.max(0, Math.min(l.expiresAtMs - clock(), 2 ** 31 - 1));
      expiryTimer = setTimeout(() => armExpiry(state.current()), delay + 5);
    };

    const status = (): LeaseStatus => {
      const l = state.current();
      return {
        active: l !== null,
        expires_at: l ? new Date(l.expiresAtMs).toISOString() : null,
        capabilities: l ? l.capabilities : [],
        broker_started_at: startedAt,
        broker_pid: process.pid,
      };
    };

    const consentTimeoutMs = leaseDialogTimeoutMs(env);
    const denials = new Map<string, { atMs: number; suppressed: number }>();
    let dialogOpen = false;
    const withDialog = async (
      action: "activate" | "extend",
      hours: number,
      caps: ActiveLease["capabilities"],
      expiresAtMs: number,
      timeoutMs: number,
      signal: AbortSignal,
    ): Promise<boolean> => {
      if (dialogOpen) throw uiError("rate_limited", "A lease dialog is already open.");
      dialogOpen = true;
      const content = buildLeaseDialogContent(action, hours, caps, new Date(expiresAtMs).toISOString());
      const ac = new AbortController();
      const onAbort = () => ac.abort();
      signal.addEventListener("abort", onAbort, { once: true });
      // Open at most the consent timeout, and never past the request's own deadline.
      const timer = setTimeout(
        () => ac.abort(),
        Math.max(1, Math.min(consentTimeoutMs, timeoutMs - DIALOG_MARGIN_MS)),
      );
      try {
        return (await dialog.prompt(content, ac.signal)) === "approve";
      } finally {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        dialogOpen = false;
      }
    };

    const handle = async (req: LeaseRequest, signal: AbortSignal): Promise<unknown> => {
      switch (req.op) {
        case "status":
          return status();
        case "revoke": {
          const revoked = state.revoke();
          armExpiry(null);
          if (revoked) emit("revoke");
          return { revoked };
        }
        case "validate": {
          try {
            state.check(req.capability);
            const live = await resolver(req.instance.pid);
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
            // Identical denials (reason, capability, target) within DENIAL_COALESCE_MS are counted,
            // not written one by one: a server polling without a lease must not flood the file.
            const key = `${err.code}\u0000${req.capability}\u0000${req.instance.pid}\u0000${req.instance.start_time}`;
            const seen = denials.get(key);
            const t = clock();
            if (seen && t - seen.atMs < DENIAL_COALESCE_MS) {
              seen.suppressed++;
            } else {
              emit("validation_denied", {
                reason: err.code,
                capability: req.capability,
                pid: req.instance.pid,
                process_start: req.instance.start_time,
                ...(seen && seen.suppressed > 0 ? { suppressed: seen.suppressed } : {}),
              });
              denials.set(key, { atMs: t, suppressed: 0 });
              if (denials.size > 1000) denials.clear();
            }
            throw err;
          }
        }
        case "activate": {
          const caps = [...new Set(req.capabilities)];
          const expiresAtMs = clock() + req.hours * HOUR_MS;
          let approved: boolean;
          try {
            approved = await withDialog("activate", req.hours, caps, expiresAtMs, req.timeout_ms, signal);
          } catch (e) {
            const err = isUiError(e) ? e : uiError("consent_denied");
            emit("activate_denied", { hours: req.hours, reason: err.code });
            throw err;
          }
          if (!approved) {
            emit("activate_denied", { hours: req.hours, reason: "consent_denied" });
            throw uiError("consent_denied", "The unattended lease was denied.");
          }
          if (expiresAtMs <= clock()) {
            emit("activate_denied", { hours: req.hours, reason: "consent_timeout" });
            throw uiError("consent_timeout");
          }
          const l = state.activate(expiresAtMs, caps);
          armExpiry(l);
          emit("activate", {
            hours: req.hours,
            capabilities: l.capabilities,
            expires_at: new Date(l.expiresAtMs).toISOString(),
          });
          return status();
        }
        case "extend": {
          const target = state.extendedExpiry(req.hours);
          const caps = state.current()?.capabilities ?? [];
          let approved: boolean;
          try {
            approved = await withDialog("extend", req.hours, caps, target, req.timeout_ms, signal);
          } catch (e) {
            const err = isUiError(e) ? e : uiError("consent_denied");
            emit("extend_denied", { hours: req.hours, reason: err.code });
            throw err;
          }
          if (!approved) {
            emit("extend_denied", { hours: req.hours, reason: "consent_denied" });
            throw uiError("consent_denied", "The lease extension was denied.");
          }
          const l = state.extendTo(target);
          armExpiry(l);
          emit("extend", {
            hours: req.hours,
            capabilities: l.capabilities,
            expires_at: new Date(l.expiresAtMs).toISOString(),
          });
          return status();
        }
      }
    };

    const accept: AcceptFn = (peer, io) => {
      const decoder = new FrameDecoder();
      const inflight = new Set<AbortController>();
      let open = true;
      const send = (r: LeaseResponse) => {
        if (open) io.write(encodeFrame(r));
      };
      const run = (raw: unknown) => {
        const parsed = LeaseRequestSchema.safeParse(raw);
        if (!parsed.success) {
          const id =
            raw && typeof raw === "object" && "id" in raw && typeof raw.id === "string" && raw.id.length <= 64
              ? raw.id
              : "";
          const wrongVersion =
            raw && typeof raw === "object" && "v" in raw && raw.v !== LEASE_PROTOCOL_VERSION;
          emit("protocol_error", { reason: "bad_request", peer_pid: peer.pid ?? undefined });
          send(
            errorResponse(
              id,
              uiError(
                "invalid_argument",
                wrongVersion ? "Unsupported lease protocol version." : "The lease request is invalid.",
              ),
            ),
          );
          return;
        }
        const req = parsed.data;
        const ac = new AbortController();
        inflight.add(ac);
        let done = false;
        const deadline = setTimeout(() => {
          if (done) return;
          done = true;
          ac.abort();
          inflight.delete(ac);
          send(
            errorResponse(req.id, uiError("broker_unavailable", "The broker missed the request's deadline.")),
          );
        }, req.timeout_ms);
        handle(req, ac.signal).then(
          (result) => {
            if (done) return;
            done = true;
            clearTimeout(deadline);
            inflight.delete(ac);
            send(okResponse(req.id, result));
          },
          (e: unknown) => {
            if (done) return;
            done = true;
            clearTimeout(deadline);
            inflight.delete(ac);
            send(errorResponse(req.id, isUiError(e) ? e : (uiError("broker_unavailable") as UiError)));
          },
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
          // A caller that went away takes its pending dialog with it (closed = deny).
          for (const ac of inflight) ac.abort();
          inflight.clear();
        },
      };
      return handlers;
    };

    transport = await listen(accept, (reason, p) =>
      emit("peer_refused", { reason, peer_pid: p.pid, peer_uid: p.uid }),
    );
    emit("broker_start");
    opts.log?.("uiinspect lease broker listening");

    let stopped: Promise<void> | null = null;
    const stop = () => {
      if (!stopped) {
        stopped = (async () => {
          if (expiryTimer) clearTimeout(expiryTimer);
          const had = state.current() !== null;
          state.revoke();
          await transport?.close();
          emit("broker_stop", { reason: had ? "lease_revoked" : undefined });
          marker.release();
        })();
      }
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
