import { type DialogReport, ignoredSentence, TAMPERED_NOTE } from "../../shared/consentReport.js";
import { type DenyReason, uiError } from "../../shared/errors.js";
import { instanceKey as keyOfInstance, type ProcessInstance } from "../../shared/identity.js";
import { SETTINGS } from "../../shared/settings.js";
import type { VerifiedBy } from "../access/clientIdentity.js";
import { DEFAULT_GRANT_TTL_MS } from "../access/grants.js";
import { type Clock, MINUTE_MS, SlidingWindowLimiter } from "../budgets.js";
import type { Capability } from "../policy/schema.js";
import { buildDialogContent, orderCapabilities } from "./content.js";
import type { ConsentAnswer, ConsentPrompter } from "./prompter.js";

export const DEFAULT_CONSENT_TIMEOUT_MS = SETTINGS.consentTimeoutMs.default;

export interface ConsentBrokerOptions {
  prompter: ConsentPrompter;
  clock: Clock;
  /** UIINSPECT_CONSENT_TIMEOUT_MS. */
  timeoutMs?: number;
  /** New dialogs per client per minute; cached decisions and joined waits use no permit. */
  dialogsPerMinute?: number;
  /** Whether the exact instance still runs (DesktopPort.isInstanceAlive via a worker). */
  isInstanceAlive: (i: ProcessInstance) => Promise<boolean>;
  alivePollMs?: number;
  /** Grant TTL, only to state the first expiry in the dialog. */
  grantTtlMs?: number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
}

export interface ConsentRequest {
  clientHash: string;
  /** ClientIdentity.label: shown as self-reported (or verified, with how), never used for a decision. */
  clientLabel: string;
  clientVerified?: VerifiedBy | null;
  instance: ProcessInstance;
  capabilities: readonly string[];
  signal?: AbortSignal;
}

export interface ConsentDecision {
  decision: "approved" | "denied";
  /** What this call may use: the requested set when approved, empty when denied. */
  capabilities: string[];
  source: "dialog" | "cached";
  /** A denial the dialog made itself because its window was tampered with (nothing is kept). */
  reason?: "dialog_tampered";
  /** Words for that reason, content-free. */
  note?: string;
}

export interface KeptDecision {
  decision: "approved" | "denied";
  /** The approved ceiling (empty for a denial). */
  capabilities: string[];
}

interface Waiter {
  requested: Capability[];
  resolve: (d: ConsentDecision) => void;
  reject: (e: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

interface Flight {
  /** The entries map key (client hash + instance key). */
  readonly key: string;
  readonly instanceKey: string;
  readonly requested: ReadonlySet<Capability>;
  readonly waiters: Set<Waiter>;
  readonly controller: AbortController;
  timeoutTimer: unknown;
  pollTimer: unknown;
  settled: boolean;
  /** The dialog's latest word about the input it ignored (counts and kinds only). */
  report: DialogReport | null;
}

type Entry = { instanceKey: string } & (
  | { kind: "pending"; flight: Flight }
  | { kind: "approved"; ceiling: ReadonlySet<Capability> }
  | { kind: "denied" }
);

type Outcome =
  | { kind: "answer"; answer: ConsentAnswer }
  | { kind: "tampered" }
  | { kind: "fail"; code: DenyReason; message?: string };

/**
 * Consent single flight per (client hash, process instance) for this server session.
 *
 * - The first request opens one dialog (a permit from the per-client dialog limiter); every
 *   concurrent or later request for the same key shares its first terminal decision.
 * - A caller whose signal aborts gets `cancelled`; only its own wait is detached. The dialog
 *   stays up even when every waiter has left: a person may be reading it, and the decision
 *   is kept for the session, so a retry is answered from the cache without a second dialog.
 * - Timeout closes the dialog (its signal aborts), fails with consent_timeout and forgets the
 *   key, so a later request opens a clean prompt.
 * - The target exiting during the prompt closes it and fails with target_gone (the person
 *   decided nothing; the instance can never come back, so the key is simply forgotten).
 *   A failing liveness probe is not an exit: polling goes on and the timeout still bounds it.
 * - A prompter that fails (cannot show the dialog) fails with platform_unavailable; the key
 *   is forgotten, nothing is kept.
 * - A timeout's message says what the dialog ignored (injected, synthetic, too early, covered,
 *   a key on Allow: counts only) and, on a display with only XTest devices, names the test-only
 *   setting. A dialog that closed itself because its window was tampered with is a denial with
 *   reason `dialog_tampered` that is not kept: the person decided nothing.
 * - Deny is kept for the session (later calls: denied, cached, no dialog). Approval keeps the
 *   approved ceiling; asking later for anything outside it is capability_expansion_denied
 *   without a dialog. A waiter that joined a pending dialog with a wider set gets the same.
 */
export class ConsentBroker {
  private readonly entries = new Map<string, Entry>();
  private readonly prompter: ConsentPrompter;
  private readonly clock: Clock;
  private readonly timeoutMs: number;
  private readonly alivePollMs: number;
  private readonly grantTtlMs: number;
  private readonly isInstanceAlive: (i: ProcessInstance) => Promise<boolean>;
  private readonly setTimer: (fn: () => void, ms: number) => unknown;
  private readonly clearTimer: (handle: unknown) => void;
  private readonly dialogLimiter: SlidingWindowLimiter;
  private dialogsOpened = 0;

  constructor(opts: ConsentBrokerOptions) {
    this.prompter = opts.prompter;
    this.clock = opts.clock;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_CONSENT_TIMEOUT_MS;
    this.alivePollMs = opts.alivePollMs ?? 500;
    this.grantTtlMs = opts.grantTtlMs ?? DEFAULT_GRANT_TTL_MS;
    this.isInstanceAlive = opts.isInstanceAlive;
    this.setTimer = opts.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.clearTimer = opts.clearTimer ?? ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
    if (!(this.timeoutMs >= 1) || !(this.alivePollMs >= 1))
      throw uiError("invalid_argument", "Consent timeout and poll interval must be >= 1 ms.");
    this.dialogLimiter = new SlidingWindowLimiter(opts.dialogsPerMinute ?? 3, MINUTE_MS, opts.clock);
  }

  /** Whether dialogs are simulated (the demo says so). */
  get simulated(): boolean {
    return this.prompter.simulated;
  }

  /** Dialogs opened since start (tests, health figures). */
  get dialogCount(): number {
    return this.dialogsOpened;
  }

  /** Dialogs currently on screen. */
  get pendingCount(): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.kind === "pending") n++;
    return n;
  }

  request(req: ConsentRequest): Promise<ConsentDecision> {
    try {
      return this.requestInner(req);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** The decision standing for (client, instance), for silent grant renewal; undefined if none yet. */
  keptDecision(clientHash: string, instanceKey: string): KeptDecision | undefined {
    const e = this.entries.get(mapKey(clientHash, instanceKey));
    if (!e || e.kind === "pending") return undefined;
    if (e.kind === "denied") return { decision: "denied", capabilities: [] };
    return { decision: "approved", capabilities: [...e.ceiling] };
  }

  /**
   * Forgets a kept approval of (client, instance): the client gave its grant back, so its next
   * request_access asks the person again. A kept Deny stays: only a person resets that (a
   * restart of the server), never the agent.
   */
  forgetApproval(clientHash: string, instanceKey: string): void {
    const key = mapKey(clientHash, instanceKey);
    if (this.entries.get(key)?.kind === "approved") this.entries.delete(key);
  }

  /**
   * Forgets kept decisions for an instance that is gone (it can never return: a new process
   * has a new start time and so a new key). Only bounds memory; never call it for a live one.
   * A pending dialog is left to its liveness poll.
   */
  forgetInstance(instanceKey: string): void {
    for (const [k, e] of this.entries)
      if (e.instanceKey === instanceKey && e.kind !== "pending") this.entries.delete(k);
  }

  /**
   * Ends everything one client holds here (its credential was revoked): open dialogs close and
   * their waiters fail with `code`; kept decisions are forgotten, so a new credential for the
   * same identity faces a new dialog.
   */
  forgetClient(clientHash: string, code: DenyReason): number {
    let n = 0;
    for (const [k, e] of [...this.entries]) {
      if (!k.startsWith(`${clientHash}\u0000`)) continue;
      n++;
      if (e.kind === "pending") this.settle(e.flight, { kind: "fail", code });
      this.entries.delete(k);
    }
    return n;
  }

  /** Closes every open dialog and fails its waiters with cancelled (server shutdown). */
  dispose(): void {
    for (const e of [...this.entries.values()])
      if (e.kind === "pending") this.settle(e.flight, { kind: "fail", code: "cancelled" });
  }

  private requestInner(req: ConsentRequest): Promise<ConsentDecision> {
    if (typeof req.clientHash !== "string" || req.clientHash === "") throw uiError("invalid_argument");
    const requested = orderCapabilities(req.capabilities);
    if (requested.length === 0) throw uiError("invalid_argument", "No capabilities requested.");
    if (req.signal?.aborted) throw uiError("cancelled");
    const ik = keyOfInstance(req.instance);
    const key = mapKey(req.clientHash, ik);
    const entry = this.entries.get(key);
    if (entry && entry.kind !== "pending") return Promise.resolve(decide(entry, requested, "cached"));
    if (entry) return this.wait(entry.flight, requested, req.signal);
    const permit = this.dialogLimiter.tryTake(req.clientHash);
    if (!permit.ok)
      throw uiError("rate_limited", "Too many consent dialogs for this client.", permit.retryAfterMs);
    const flight = this.open(key, ik, req, requested);
    return this.wait(flight, requested, req.signal);
  }

  private open(key: string, ik: string, req: ConsentRequest, requested: Capability[]): Flight {
    const now = this.clock();
    // Upper bound of the first grant's expiry: approval can come at the latest at the timeout.
    const content = buildDialogContent({
      instance: req.instance,
      capabilities: requested,
      clientLabel: req.clientLabel,
      clientVerified: req.clientVerified ?? null,
      expiresAt: now + this.timeoutMs + this.grantTtlMs,
    });
    const flight: Flight = {
      key,
      instanceKey: ik,
      requested: new Set(requested),
      waiters: new Set(),
      controller: new AbortController(),
      timeoutTimer: undefined,
      pollTimer: undefined,
      settled: false,
      report: null,
    };
    this.entries.set(key, { instanceKey: ik, kind: "pending", flight });
    this.dialogsOpened++;
    flight.timeoutTimer = this.setTimer(
      () =>
        this.settle(flight, {
          kind: "fail",
          code: "consent_timeout",
          message: `The consent dialog timed out: nobody approved it in time.${ignoredSentence(flight.report)}`,
        }),
      this.timeoutMs,
    );
    this.schedulePoll(flight, req.instance);
    let shown: Promise<ConsentAnswer>;
    try {
      shown = this.prompter.prompt(content, flight.controller.signal, (r) => {
        if (!flight.settled) flight.report = r;
      });
    } catch {
      shown = Promise.reject(uiError("platform_unavailable"));
    }
    shown.then(
      (answer) =>
        this.settle(
          flight,
          answer === "deny" && flight.report?.tampered === true
            ? { kind: "tampered" }
            : { kind: "answer", answer },
        ),
      () =>
        this.settle(flight, {
          kind: "fail",
          code: "platform_unavailable",
          message: "The consent dialog failed.",
        }),
    );
    return flight;
  }

  private schedulePoll(flight: Flight, instance: ProcessInstance): void {
    flight.pollTimer = this.setTimer(() => {
      flight.pollTimer = undefined;
      if (flight.settled) return;
      let probe: Promise<boolean>;
      try {
        probe = this.isInstanceAlive(instance);
      } catch {
        probe = Promise.reject(new Error("probe failed"));
      }
      probe.then(
        (alive) => {
          if (flight.settled) return;
          if (alive === false) this.settle(flight, { kind: "fail", code: "target_gone" });
          else this.schedulePoll(flight, instance);
        },
        () => {
          // Unknown is not gone: keep polling; the timeout still bounds the dialog.
          if (!flight.settled) this.schedulePoll(flight, instance);
        },
      );
    }, this.alivePollMs);
  }

  private wait(flight: Flight, requested: Capability[], signal?: AbortSignal): Promise<ConsentDecision> {
    return new Promise<ConsentDecision>((resolve, reject) => {
      const w: Waiter = { requested, resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          if (!flight.waiters.delete(w)) return;
          reject(uiError("cancelled"));
        };
        signal.addEventListener("abort", w.onAbort, { once: true });
      }
      flight.waiters.add(w);
    });
  }

  private settle(flight: Flight, outcome: Outcome): void {
    if (flight.settled) return; // first terminal event wins; late answers are ignored
    flight.settled = true;
    if (flight.timeoutTimer !== undefined) this.clearTimer(flight.timeoutTimer);
    if (flight.pollTimer !== undefined) this.clearTimer(flight.pollTimer);
    let result: Entry | undefined;
    if (outcome.kind === "answer" && outcome.answer === "approve")
      result = { instanceKey: flight.instanceKey, kind: "approved", ceiling: flight.requested };
    else if (outcome.kind === "answer" && outcome.answer === "deny")
      result = { instanceKey: flight.instanceKey, kind: "denied" };
    const entry = this.entries.get(flight.key);
    if (entry?.kind === "pending" && entry.flight === flight) {
      if (result) this.entries.set(flight.key, result);
      else this.entries.delete(flight.key); // not decided by a person: the key is released
    }
    // Close the dialog unless the person already answered it with a valid answer.
    if (!result) flight.controller.abort();

    const waiters = [...flight.waiters];
    flight.waiters.clear();
    for (const w of waiters) {
      if (w.signal && w.onAbort) w.signal.removeEventListener("abort", w.onAbort);
      if (outcome.kind === "tampered") {
        w.resolve({
          decision: "denied",
          capabilities: [],
          source: "dialog",
          reason: "dialog_tampered",
          note: TAMPERED_NOTE,
        });
      } else if (result?.kind === "approved" || result?.kind === "denied") {
        try {
          w.resolve(decide(result, w.requested, "dialog"));
        } catch (e) {
          w.reject(e);
        }
      } else if (outcome.kind === "fail") {
        w.reject(uiError(outcome.code, outcome.message));
      } else {
        w.reject(uiError("platform_unavailable", "The consent dialog gave no valid answer."));
      }
    }
  }
}

/** The answer a kept decision gives to one request; throws capability_expansion_denied. */
function decide(
  entry: { kind: "approved"; ceiling: ReadonlySet<Capability> } | { kind: "denied" },
  requested: Capability[],
  source: "dialog" | "cached",
): ConsentDecision {
  if (entry.kind === "denied") return { decision: "denied", capabilities: [], source };
  for (const c of requested)
    if (!entry.ceiling.has(c))
      throw uiError(
        "capability_expansion_denied",
        `The person approved ${[...entry.ceiling].join(", ")} for this process instance; more is not asked for while that approval stands. To ask for more: release_access, then request_access with the wider list (a new dialog).`,
      );
  return { decision: "approved", capabilities: [...requested], source };
}

function mapKey(clientHash: string, instanceKey: string): string {
  return `${clientHash}\u0000${instanceKey}`;
}
