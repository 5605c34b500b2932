import { isUiError, type UiError, uiError } from "../../shared/errors.js";
import { rectArea } from "../../shared/geometry.js";
import type { WindowInfo } from "../../shared/platform.js";
import type { A11yNodeOut, OPS, OpArgs, OpName, OpResult } from "../../shared/protocol.js";
import type { AuditEvent } from "../audit.js";
import type { ApplicationLimits, ApplicationUsage, BudgetState } from "../budgets.js";
import type { ConsentDecision } from "../consent/broker.js";
import { withWaitProgress } from "../consent/progress.js";
import type { WorkerStats } from "../hosting/workerHost.js";
import { type EffectivePolicy, type PolicyState, policyStatusAt } from "../policy/load.js";
import type { Capability } from "../policy/schema.js";
import type { ScreenshotPlan } from "../screenshot/plan.js";
import { captureFrame, type FrameRequest, stillAuthorized } from "../screenshot/sample.js";
import { shotLane } from "../screenshot/shotLane.js";
import { streamMemoryUse } from "../screenshot/streamMemory.js";
import { requirePolicy, type Supervisor } from "../supervisor.js";
import { applyGrantDecision, authorizeCapability, leaseCapabilities } from "./accessDecision.js";
import type { AheadOp, ClassDecision, HeldObservation, HeldShot, ProgressReporter } from "./callFacts.js";
import type { ClientIdentity } from "./clientIdentity.js";
import type { Grant } from "./grants.js";
import { liveWindows, pollWindows } from "./liveWindows.js";
import { takeAhead } from "./observedAhead.js";
import type { SessionRecord } from "./sessions.js";
import { shownNow } from "./shownBefore.js";
import type { ResolvedTarget } from "./targets.js";

/**
 * The services a tool's handler can be handed, each narrow and bound to the call (its client,
 * cancellation and, where it has one, its target). A tool entry names the ones it uses; the
 * chain builds exactly those once access is decided (buildServices), and the handler's call
 * object carries nothing else: no handler reaches the supervisor itself.
 */
export interface Services {
  /** The live desktop: its windows, and the capture worker's reads that show no pixels. */
  desktop: DesktopService;
  /** Frames and reference hashes of the target, under the process-wide memory budget. */
  capture: CaptureService;
  /** Input effects on the target: one at a time per client, none while a dialog of ours is open. */
  input: InputService;
  /** The target's automation session, its refs and the uia worker behind it. */
  sessions: SessionService;
  /** Asking the person (or the lease) for the target and holding the grant that follows. */
  consent: ConsentService;
  /** Confirmation tokens of this client for the target. */
  tokens: TokenService;
  /** This client's grants: listing them and giving them back. */
  grants: GrantService;
  /** This client's rate budgets, its applications' and the memory budget's figures. */
  usage: UsageService;
  /** This client's audit events (the ring is shared; each event keeps its client's key). */
  audit: AuditReader;
  /** The policy in force now, for a tool that needs none but reads what it configures. */
  policies: PolicyReader;
  /** The server's own facts for health_check. */
  server: ServerFacts;
}

export type ServiceName = keyof Services;

type OpOf<W extends string> = {
  [K in OpName]: (typeof OPS)[K]["worker"] extends W ? K : never;
}[OpName];
/** The capture worker's reads that show no pixels. */
export type DesktopRead = Extract<OpName, "desktop.get" | "desktop.virtual_screen" | "desktop.health">;
export type InputOp = OpOf<"input">;
export type SessionOp = Extract<OpName, `a11y.${string}`>;

export interface DesktopService {
  /** The windows now; grants of instances that have exited end on the way. */
  windows(): Promise<WindowInfo[]>;
  /** windows() for a wait's poll: overlapping polls share one listing. */
  poll(): Promise<WindowInfo[]>;
  /**
   * `waitMs`: how long this call waits for the answer (then worker_timeout). The worker's own
   * deadline (UIINSPECT_WORKER_DEADLINE_MS) still decides whether it is silent and torn down: a
   * short wait must not kill a worker that is only slow, e.g. behind another program's grab of
   * the X server, and with it every call in flight there.
   */
  read<K extends DesktopRead>(op: K, args: OpArgs<K>, waitMs?: number): Promise<OpResult<K>>;
}

export interface CaptureService {
  /** One frame of the planned region (check → read → check → masks in the capture worker). */
  frame(plan: ScreenshotPlan, req: FrameRequest): Promise<OpResult<"capture.region">>;
  /** The SHA-256 of the masked region's RGB bytes and the colours at `points`; no image. */
  hash(
    plan: ScreenshotPlan,
    points: readonly { x: number; y: number }[],
  ): Promise<{ hash: string; colors: string[] }>;
  /**
   * The tile hashes of a frame taken with tiles "later" for this client and target instance, by
   * its full frame hash: null when the capture worker has none for them (never kept for them,
   * forgotten when a grant ended, evicted, lost with a restart).
   */
  tilesOf(frameHash: string): Promise<readonly number[] | null>;
  /** How long a sampler waits between frames (the configured sample rate). */
  readonly sampleIntervalMs: number;
  /** Null while frames may still be taken for this client, else the error that ends sampling. */
  stillAuthorized(): UiError | null;
  /** The frame the message that resolved the target brought (ToolDef.oneHop), or null. */
  readonly held: HeldShot | null;
}

export interface InputService {
  press<K extends InputOp>(op: K, args: OpArgs<K>, deadlineMs?: number): Promise<OpResult<K>>;
  readonly focusMode: Supervisor["config"]["focusMode"];
  readonly textMode: Supervisor["config"]["textMode"];
  /** The server's worker deadline; a long gesture adds its own time to it. */
  readonly deadlineMs: number;
}

export interface SessionService {
  /** The target's automation session for this client (made on first use). */
  forTarget(): SessionRecord;
  /** A ref of this client's, or element_stale. */
  lookupRef(ref: string): SessionRecord & { inner: string };
  externalize<T extends A11yNodeOut>(session: SessionRecord, node: T): T;
  call<K extends SessionOp>(
    session: SessionRecord,
    op: K,
    args: OpArgs<K>,
    deadlineMs?: number,
  ): Promise<OpResult<K>>;
  /**
   * call() for an observation, answered by the one the chain sent ahead while it resolved the
   * target (ToolDef.observeAhead) when that went to this session with exactly `args.target`
   * (`ahead` then says so, for the call's audit counters).
   */
  observe<K extends AheadOp>(
    session: SessionRecord,
    op: K,
    args: OpArgs<K>,
    deadlineMs?: number,
  ): Promise<{ answer: OpResult<K>; ahead: boolean }>;
  readonly treeDeadlineMs: number;
  readonly deadlineMs: number;
}

export interface ConsentService {
  /** Under the unattended lease: what it can grant under this policy; null without a lease. */
  leaseCapabilities(): Capability[] | null;
  /** Under the lease: the broker's word for each capability; the resulting grant's expiry. */
  viaLease(wanted: readonly Capability[]): Promise<number | null>;
  /** Asks the person (one dialog per client and instance; kept decisions), with progress. */
  ask(wanted: Capability[]): Promise<ConsentDecision>;
  /** Holds what the person approved as this client's grant on the target. */
  /** The grant, with the windows of the instance shown before it began (when asked and now). */
  grant(capabilities: Iterable<string>): Promise<Grant>;
  /** The window changed hands meanwhile: the grants on the old instance end. */
  revokeChanged(): void;
  /**
   * The second gate where the compositor has one (Wayland): its portal dialog, where the person
   * picks the window and allows control. "none" where there is no such gate. Anything but
   * "allowed" forgets the first gate's approval (a cancelled call leaves it standing).
   */
  portal(): Promise<"allowed" | "declined" | "none">;
  /** No grant comes of this request after all: its portal session ends too. */
  endPortal(): void;
}

export interface TokenService {
  /**
   * Applies the grant part of the call's decision (a silent renewal, the lease's word) or
   * throws its refusal: a token is issued only to a client that holds the class.
   */
  holdGrant(): Promise<Grant>;
  issue(capability: Capability, ttlSeconds: number): { token_id: string; expires_at: string };
}

export interface GrantService {
  mine(): Grant[];
  /**
   * Gives this client's grant on an instance back: no silent renewal from the kept decision
   * after it, the approval is not reused, the automation sessions end. A kept Deny stays.
   */
  release(instanceKey: string): boolean;
}

export interface UsageService {
  client(): BudgetState;
  application(instanceKey: string, limits: ApplicationLimits): ApplicationUsage;
  /** Another client also holds a grant on the instance (its typing must not show). */
  sharedWithOthers(instanceKey: string): boolean;
  memory(): { limit_bytes: number; in_use_bytes: number; peak_bytes: number };
}

export interface AuditReader {
  mine(limit: number): AuditEvent[];
}

export interface PolicyReader {
  /** The usable policy now, or null. */
  current(): EffectivePolicy | null;
  /** The usable policy now, or the refusal that stands instead of one. */
  required(): EffectivePolicy;
}

export interface ServerFacts {
  readonly platform: string | null;
  readonly version: string;
  readonly leaseMode: Supervisor["config"]["lease"];
  /** The policy state at the supervisor's clock (an expired policy reads as its error). */
  policyStatus(): PolicyState;
  lease(): Promise<{ active: boolean; expires_at: string | null; reachable: boolean }>;
  auditSink(): Supervisor["audit"]["sink"];
  auditRingSize(): number;
  workers(): WorkerStats[];
  consentDialog(): Supervisor["consentDialog"] & { open: number };
  uptimeMs(): number;
  streams(): { in_use: number; peak: number };
  remote(): ReturnType<NonNullable<Supervisor["remoteHealth"]>> | undefined;
}

/** What a service is bound to: the call's client and cancellation, and what the chain resolved. */
export interface ServiceScope {
  sup: Supervisor;
  client: ClientIdentity;
  signal: AbortSignal;
  progress: ProgressReporter;
  policy: EffectivePolicy | null;
  target: ResolvedTarget | null;
  decision: ClassDecision | null;
  held: HeldShot | null;
  ahead: HeldObservation | null;
}

/** The chain resolved what the service needs; a missing part is a bug in the table. */
function need<T>(v: T | null, what: string): T {
  if (v === null) throw new Error(`a service needs the call's ${what}, which its tool kind does not resolve`);
  return v;
}

const FACTORIES: { [K in ServiceName]: (s: ServiceScope) => Services[K] } = {
  desktop: ({ sup, signal }) => ({
    windows: () => liveWindows(sup, signal),
    poll: () => pollWindows(sup, signal),
    read: (op, args, waitMs) =>
      sup.workers.capture.call(op, args, {
        deadlineMs: sup.config.workerDeadlineMs,
        ...(waitMs === undefined ? {} : { waitMs }),
        signal,
      }),
  }),
  capture: ({ sup, client, signal, policy, target, held }) => {
    const p = need(policy, "policy");
    const t = need(target, "target");
    const lane = shotLane(sup, client.hash, signal);
    // Authorized by a grant (not a lease): the grant must stay live for every sample.
    const byGrant = sup.grants.get(client.hash, t.instanceKey) !== undefined;
    return {
      frame: (plan, req) => captureFrame(sup, lane, p.limits.max_png_bytes, t, plan, req, client.hash),
      hash: (plan, points) =>
        // Only a hash leaves the worker; the raw frame it reads still counts (4 bytes a pixel).
        lane.turn(rectArea(plan.region) * 4, async () => {
          const r = await lane.call("capture.region", {
            target: t.expectation,
            region: plan.region,
            masks: plan.masks,
            grid_spacing: null,
            output: "sha256",
            max_png_bytes: p.limits.max_png_bytes,
            compression_level: 0,
            sample_points: points.map((q) => [q.x, q.y] as [number, number]),
          });
          const colors = r.samples ?? [];
          if (!r.sha256 || colors.length !== points.length)
            throw uiError("platform_unavailable", "No hash was produced.");
          return { hash: r.sha256, colors };
        }),
      tilesOf: async (frameHash) =>
        (
          await sup.workers.capture.call(
            "capture.tiles",
            // Only this identity's frames of this instance: never another's of the same pixels.
            { frame_hash: frameHash, client: client.hash, instance: t.instanceKey },
            { deadlineMs: sup.config.workerDeadlineMs, signal },
          )
        ).tiles,
      sampleIntervalMs: 1000 / sup.config.visualSampleRate,
      stillAuthorized: () => stillAuthorized(sup, client.hash, p, t, byGrant),
      held,
    };
  },
  input: ({ sup, client, signal }) => ({
    press: (op, args, deadlineMs) =>
      // Input effects: one at a time per client, none while a dialog of ours is open (the worker
      // checks again before every single event). "activate" focus mode's wait counts against the
      // deadline: it is part of the effect.
      sup.inputLane.run(client.hash, signal, () => {
        sup.dialogs.assertNoDialog();
        return sup.workers.input.call(op, args, {
          deadlineMs: deadlineMs ?? sup.config.workerDeadlineMs,
          signal,
        });
      }),
    focusMode: sup.config.focusMode,
    textMode: sup.config.textMode,
    deadlineMs: sup.config.workerDeadlineMs,
  }),
  sessions: ({ sup, client, signal, target, ahead }) => ({
    forTarget: () => sup.sessions.sessionFor(client.hash, need(target, "target")),
    lookupRef: (ref) => sup.sessions.lookupRef(ref, client.hash),
    externalize: (session, node) => sup.sessions.externalize(session, node),
    call: (session, op, args, deadlineMs) =>
      sup.sessions.call(session, op, args, { deadlineMs: deadlineMs ?? sup.config.workerDeadlineMs, signal }),
    observe: async (session, op, args, deadlineMs) => {
      const early = await takeAhead(ahead, session, op, args);
      if (early) return { answer: early.answer, ahead: true };
      const answer = await sup.sessions.call(session, op, args, {
        deadlineMs: deadlineMs ?? sup.config.workerDeadlineMs,
        signal,
      });
      return { answer, ahead: false };
    },
    treeDeadlineMs: sup.config.treeDeadlineMs,
    deadlineMs: sup.config.workerDeadlineMs,
  }),
  consent: (s) => consentService(s),
  tokens: ({ sup, client, policy, target, decision }) => {
    const t = need(target, "target");
    const d = need(decision, "decision");
    return {
      holdGrant: () =>
        applyGrantDecision(sup, client.hash, t, need(policy, "policy"), d.decision, d.capability),
      issue: (capability, ttlSeconds) => sup.tokens.issue(client.hash, t.instanceKey, capability, ttlSeconds),
    };
  },
  grants: ({ sup, client }) => ({
    mine: () => sup.grants.listForClient(client.hash),
    release: (key) => {
      const released = sup.grants.release(client.hash, key);
      sup.grants.markReleased(client.hash, key);
      sup.consent.forgetApproval(client.hash, key);
      sup.portal?.end(client.hash, key);
      sup.sessions.disposeByInstance(key, client.hash);
      return released;
    },
  }),
  usage: ({ sup, client }) => ({
    client: () => sup.budgets.state(client.hash),
    application: (key, limits) => sup.budgets.applicationState(key, limits),
    sharedWithOthers: (key) => sup.grants.sharedWithOthers(client.hash, key),
    memory: () => ({
      limit_bytes: sup.memory.limitBytes,
      in_use_bytes: sup.memory.inUse,
      peak_bytes: sup.memory.peak,
    }),
  }),
  audit: ({ sup, client }) => ({ mine: (limit) => sup.audit.recent(limit, client.hash) }),
  policies: ({ sup }) => ({
    current: () => {
      const state = policyStatusAt(sup.policyState, () => new Date(sup.clock()));
      return state.status === "ok" ? state.policy : null;
    },
    required: () => requirePolicy(sup),
  }),
  server: ({ sup }) => ({
    platform: sup.config.platform,
    version: sup.version,
    leaseMode: sup.config.lease,
    policyStatus: () => policyStatusAt(sup.policyState, () => new Date(sup.clock())),
    lease: () =>
      sup.lease ? sup.lease.status() : Promise.resolve({ active: false, expires_at: null, reachable: false }),
    auditSink: () => sup.audit.sink,
    auditRingSize: () => sup.audit.recent(1000).length,
    workers: () => [
      ...Object.values(sup.workers).map((w) =>
        // The capture worker's shots waiting for their identity's turn (not yet sent) count with it.
        w === sup.workers.capture ? { ...w.stats(), queued: sup.shotTurns.load().waiting } : w.stats(),
      ),
      sup.sessions.stats(),
    ],
    consentDialog: () => ({ ...sup.consentDialog, open: sup.dialogs.open }),
    uptimeMs: () => sup.clock() - sup.startedAt,
    streams: () => streamMemoryUse(sup),
    remote: () => sup.remoteHealth?.(),
  }),
};

function consentService({ sup, client, signal, progress, policy, target }: ServiceScope): ConsentService {
  const p = need(policy, "policy");
  const t = need(target, "target");
  let shownAtAsk: string[] = [];
  return {
    leaseCapabilities: () => (sup.lease ? leaseCapabilities(sup.lease, p) : null),
    viaLease: async (wanted) => {
      for (const c of wanted) await authorizeCapability(sup, client.hash, t, c, p);
      const g = sup.grants.get(client.hash, t.instanceKey);
      return g ? g.expiresAt : null;
    },
    // Clients that show progress can say "waiting for approval" while the dialog is open. The
    // instance's windows already shown are never popups of the grant: read before the prompt
    // and again at the grant, so a window shown while it was open is not one either.
    ask: async (wanted) => {
      shownAtAsk = await shownNow(sup, client.hash, t, signal);
      return withWaitProgress(
        sup.consent.request({
          clientHash: client.hash,
          clientLabel: client.label,
          clientVerified: client.verified,
          instance: t.instance,
          capabilities: wanted,
          signal,
        }),
        progress,
        { totalMs: sup.config.consentTimeoutMs },
      );
    },
    grant: async (capabilities) => {
      const shownAtGrant = await shownNow(sup, client.hash, t, signal);
      const grant = sup.grants.put({
        client: client.hash,
        instance: t.instance,
        hwnd: t.window.hwnd,
        capabilities: [...capabilities],
        shownBefore: [...new Set([...shownAtAsk, ...shownAtGrant])],
      });
      sup.grants.clearReleased(client.hash, t.instanceKey);
      return grant;
    },
    revokeChanged: () => {
      sup.grants.revokeInstance(t.instanceKey, "target_changed");
      sup.portal?.endInstance(t.instanceKey);
    },
    portal: async () => {
      if (!sup.portal) return "none";
      let second: "allowed" | "declined";
      try {
        second = await withWaitProgress(
          sup.portal.admit({ client: client.hash, instance: t.instance, hwnd: t.window.hwnd, signal }),
          progress,
          { totalMs: sup.config.consentTimeoutMs },
        );
      } catch (e) {
        if (!(isUiError(e) && e.code === "cancelled")) sup.consent.forgetApproval(client.hash, t.instanceKey);
        throw e;
      }
      if (second === "declined") sup.consent.forgetApproval(client.hash, t.instanceKey);
      return second;
    },
    endPortal: () => {
      sup.portal?.end(client.hash, t.instanceKey);
    },
  };
}

/** Builds the named services, each frozen; nothing else of the supervisor goes with them. */
export function buildServices(scope: ServiceScope, names: readonly ServiceName[]): Partial<Services> {
  const out: Partial<Record<ServiceName, unknown>> = {};
  for (const n of names) out[n] = Object.freeze(FACTORIES[n](scope));
  return out as Partial<Services>;
}
