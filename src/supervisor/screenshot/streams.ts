import type { Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js";
import { ERROR_CODES, isUiError, type UiError, uiError } from "../../shared/errors.js";
import { rectArea } from "../../shared/geometry.js";
import type { OpResult } from "../../shared/protocol.js";
import type { ChainRecord } from "../access/calls.js";
import { runChain } from "../access/chain.js";
import type { ResolvedTarget } from "../access/targets.js";
import { type AuditReason, isDenial, newCorrelationId } from "../audit.js";
import type { Reservation } from "../budgets/memory.js";
import { policyStatusAt } from "../policy/load.js";
import type { Supervisor } from "../supervisor.js";
import { TOOLS_BY_NAME } from "../tools/index.js";
import { planScreenshot, type ScreenshotPlan } from "./plan.js";
import { captureFrame, stillAuthorized } from "./sample.js";
import { shotLane } from "./shotLane.js";
import { streamMemory } from "./streamMemory.js";
import { changedRects, shortHash } from "./visual.js";

/**
 * Frame streams: each granted window's named regions (and, where the policy allows screenshots
 * of the whole window, the window) as MCP resources. resources/subscribe starts sampling: every
 * sample is one capture.region call to the capture worker, the same check → read → check →
 * masks path as screenshot_window, asking for no image while the frame's hash is the last one's,
 * so an unchanged region costs a hash and no encoding. A changed frame takes the application's
 * pixel budget, is kept as the subscription's one undelivered frame (a newer one replaces it)
 * and the client hears notifications/resources/updated once per undelivered frame; resources/read
 * hands it over and keeps it as the last read. PNG bytes kept by all streams of the process are
 * capped (UIINSPECT_STREAM_MEMORY_BYTES): a frame that does not fit is dropped. A reader that
 * never reads therefore holds at most two frames, and hears of one.
 *
 * A frame that fails the checks (covered, minimized, moved off the region…) is not kept; the
 * update says why in _meta.error, once per change of reason. A stream ends, with an update
 * whose _meta.ended says why, on unsubscribe, release, revocation, expiry, instance change, a
 * policy change and when the session closes.
 */

const SCHEME = "uiinspect://window/";
/** Errors after which the stream cannot go on: the grant, the policy or the window is not what it was. */
const TERMINAL: ReadonlySet<string> = new Set([
  "target_gone",
  "target_changed",
  "target_not_allowed",
  "consent_required",
  "consent_denied",
  "action_not_allowed",
  "policy_not_configured",
  "policy_invalid",
  "policy_expired",
  "policy_conflict",
  "policy_unreadable",
  "policy_insecure",
  "confirmation_required",
  "lease_revoked",
  "credential_revoked",
]);

interface Kept {
  png: Uint8Array;
  hash: string;
  tiles: readonly number[] | null;
  sequence: number;
  captured_at: string;
  reservation: Reservation;
}

interface Stream {
  uri: string;
  target: ResolvedTarget;
  plan: ScreenshotPlan;
  policy: Parameters<typeof stillAuthorized>[2];
  byGrant: boolean;
  timer: NodeJS.Timeout | null;
  abort: AbortController;
  sequence: number;
  lastHash: string | null;
  lastTiles: readonly number[] | null;
  pending: Kept | null;
  lastRead: Kept | null;
  /** Tiles of the frame this session last read, for the changed rectangles of the next read. */
  readTiles: readonly number[] | null;
  lastError: string | null;
  ended: string | null;
}

interface Parsed {
  hwnd: string;
  region: string | null;
}

export function parseFrameUri(uri: string): Parsed | null {
  if (!uri.startsWith(SCHEME)) return null;
  const rest = uri.slice(SCHEME.length);
  const whole = /^(\d{1,20})\/window$/.exec(rest);
  if (whole?.[1]) return { hwnd: whole[1], region: null };
  const named = /^(\d{1,20})\/region\/([^/]+)$/.exec(rest);
  if (!named?.[1] || !named[2]) return null;
  try {
    return { hwnd: named[1], region: decodeURIComponent(named[2]) };
  } catch {
    return null;
  }
}

export function frameUri(hwnd: string, region: string | null): string {
  return region === null
    ? `${SCHEME}${hwnd}/window`
    : `${SCHEME}${hwnd}/region/${encodeURIComponent(region)}`;
}

export type Notify = (uri: string, meta: Record<string, unknown>) => void;
/** Tells the client that resources/list would answer differently now. */
export type ListChanged = () => void;

/** One MCP session's streams. */
export class FrameStreams {
  private readonly streams = new Map<string, Stream>();
  private readonly stops: Array<() => void> = [];
  private listed = "[]";

  constructor(
    private readonly sup: Supervisor,
    private readonly notify: Notify,
    private readonly listChanged: ListChanged = () => undefined,
  ) {
    this.stops.push(
      sup.grants.onRevoke(({ grant, reason }) => {
        for (const s of this.streams.values())
          if (grant.client === this.client() && grant.instanceKey === s.target.instanceKey)
            this.end(s, reason === "released" ? "released" : reason);
        this.checkList();
      }),
    );
    const off = sup.onPolicyChange?.(() => {
      for (const s of this.streams.values()) this.end(s, "policy_changed");
      this.checkList();
    });
    if (off) this.stops.push(off);
  }

  private client(): string {
    return this.sup.client().hash;
  }

  /**
   * Sends resources/list_changed when the list differs from the one last seen (a grant was made
   * or ended, the policy changed); the server calls it after every tool call as well.
   */
  checkList(): void {
    const now = JSON.stringify(this.resources());
    if (now === this.listed) return;
    this.listed = now;
    this.listChanged();
  }

  /** The session's frame resources: its granted windows' safe regions, and whole windows where allowed. */
  list(): Resource[] {
    const out = this.resources();
    this.listed = JSON.stringify(out);
    return out;
  }

  private resources(): Resource[] {
    const state = policyStatusAt(this.sup.policyState, () => new Date(this.sup.clock()));
    if (state.status !== "ok" || !state.policy.allowed_actions.has("observe")) return [];
    const p = state.policy;
    const out: Resource[] = [];
    for (const g of this.sup.grants.listForClient(this.client())) {
      if (!g.capabilities.has("observe")) continue;
      for (const r of p.safe_regions)
        out.push({
          uri: frameUri(g.hwnd, r.name),
          name: `window ${g.hwnd} region ${r.name}`,
          mimeType: "image/png",
        });
      if (p.source === "env" && p.allow_unrestricted_screenshots)
        out.push({ uri: frameUri(g.hwnd, null), name: `window ${g.hwnd}`, mimeType: "image/png" });
    }
    return out;
  }

  templates(): ResourceTemplate[] {
    return [
      {
        uriTemplate: `${SCHEME}{hwnd}/region/{region_name}`,
        name: "frames of a granted window's safe region",
        mimeType: "image/png",
      },
      {
        uriTemplate: `${SCHEME}{hwnd}/window`,
        name: "frames of a granted window (env policy with unrestricted screenshots)",
        mimeType: "image/png",
      },
    ];
  }

  /**
   * Authorizes the stream as a screenshot_window call of the same region would be (policy,
   * target identity, grant, token, budgets) and takes its first frame; then samples.
   */
  async subscribe(uri: string): Promise<void> {
    const existing = this.streams.get(uri);
    if (existing && existing.ended === null) return;
    const { target, plan, policy, first } = await this.authorize(uri);
    const s: Stream = {
      uri,
      target,
      plan,
      policy,
      byGrant: this.sup.grants.get(this.client(), target.instanceKey) !== undefined,
      timer: null,
      abort: new AbortController(),
      sequence: 0,
      lastHash: null,
      lastTiles: null,
      pending: null,
      lastRead: null,
      readTiles: null,
      lastError: null,
      ended: null,
    };
    this.streams.set(uri, s);
    this.accept(s, first);
    this.schedule(s);
  }

  unsubscribe(uri: string): void {
    const s = this.streams.get(uri);
    if (s) this.end(s, "unsubscribed");
  }

  /**
   * The subscription's newest frame (the undelivered one, else the last read), with the changed
   * rectangles since this session's previous read. Without a subscription: one frame now, as a
   * screenshot of the region.
   */
  async read(uri: string): Promise<{ png: Uint8Array; meta: Record<string, unknown> }> {
    const s = this.streams.get(uri);
    if (!s || s.ended !== null || (s.pending === null && s.lastRead === null)) {
      const { first } = await this.authorize(uri);
      if (!first.png) throw uiError("platform_unavailable", "No image was produced.");
      return {
        png: first.png,
        meta: {
          sequence: 1,
          hash: shortHash(first.frame_hash ?? ""),
          changed_rects: [],
          captured_at: new Date(this.sup.clock()).toISOString(),
        },
      };
    }
    if (s.pending) {
      s.lastRead?.reservation.release();
      s.lastRead = s.pending;
      s.pending = null;
    }
    const f = s.lastRead;
    if (!f) throw uiError("platform_unavailable", "No frame is kept.");
    const w = s.plan.region[2] - s.plan.region[0];
    const h = s.plan.region[3] - s.plan.region[1];
    const rects =
      s.readTiles === f.tiles && s.readTiles !== null
        ? []
        : changedRects(s.readTiles, f.tiles ?? [], w, h, [s.plan.region[0], s.plan.region[1]]);
    s.readTiles = f.tiles;
    return {
      png: f.png,
      meta: { sequence: f.sequence, hash: f.hash, changed_rects: rects, captured_at: f.captured_at },
    };
  }

  /** Ends every stream of the session (it closed). */
  close(): void {
    for (const s of this.streams.values()) this.end(s, "session_closed", false);
    for (const stop of this.stops.splice(0)) stop();
  }

  /** For tests and health: streams sampling now, frames kept. */
  stats(): { active: number; kept: number } {
    let active = 0;
    let kept = 0;
    for (const s of this.streams.values()) {
      if (s.ended === null) active += 1;
      if (s.pending) kept += 1;
      if (s.lastRead) kept += 1;
    }
    return { active, kept };
  }

  private async authorize(uri: string) {
    const parsed = parseFrameUri(uri);
    if (!parsed) throw uiError("invalid_argument", "Not a frame resource of this server.");
    const def = TOOLS_BY_NAME.get("screenshot_window");
    if (!def) throw uiError("platform_unavailable");
    const raw =
      parsed.region === null
        ? { hwnd: parsed.hwnd, crop_left: 0, crop_top: 0, crop_right: 0, crop_bottom: 0 }
        : { hwnd: parsed.hwnd, region_name: parsed.region };
    const args = def.input.safeParse(raw);
    if (!args.success) throw uiError("invalid_argument", "Not a frame resource of this server.");
    type Got = {
      target: ResolvedTarget;
      plan: ScreenshotPlan;
      first: OpResult<"capture.region">;
      policy: Parameters<typeof stillAuthorized>[2];
    };
    const box: { got: Got | null } = { got: null };
    const started = performance.now();
    const correlationId = newCorrelationId();
    let ctxOf: ChainRecord | null = null;
    let reason: AuditReason = "ok";
    try {
      // The chain of the screenshot tool, with a handler that takes the frame and hands it back.
      await runChain(this.sup, {
        def: {
          ...def,
          // The row's own services (its call object's capture service): the same frame path.
          handler: async (admitted, a) => {
            const { policy, target, charge } = admitted.record;
            const capture = admitted.services.capture;
            if (!policy || !target || !capture) throw uiError("platform_unavailable");
            const plan = planScreenshot(policy, target.window, a as Parameters<typeof planScreenshot>[2]);
            const first = await capture
              .frame(plan, { grid_spacing: null, output: "png", unless_hash: null, tiles: true })
              .catch((e: unknown) => {
                charge?.refund();
                throw e;
              });
            box.got = { target, plan, first, policy };
            return { structured: {} };
          },
        },
        args: args.data as Record<string, unknown>,
        signal: new AbortController().signal,
        progress: async () => {},
        correlationId,
        onRecord: (c) => {
          ctxOf = c;
        },
      });
    } catch (e) {
      reason = isUiError(e) ? (e as UiError).code : "platform_unavailable";
      throw e;
    } finally {
      this.audit(correlationId, ctxOf, reason, performance.now() - started, { stream: true });
    }
    if (!box.got) throw uiError("platform_unavailable");
    return box.got;
  }

  /** One audit event for a stream's authorization (subscribe, or a read without one). */
  private audit(
    correlationId: string,
    ctx: ChainRecord | null,
    reason: AuditReason,
    ms: number,
    counters: Record<string, number | boolean>,
  ): void {
    const t = (ctx as ChainRecord | null)?.target ?? null;
    this.sup.audit.record(
      {
        correlation_id: correlationId,
        client: this.sup.client().auditId,
        policy_id: (ctx as ChainRecord | null)?.policy?.policy_id ?? null,
        action: "observe",
        tool: "screenshot_window",
        outcome: reason === "ok" ? "allow" : isDenial(reason) ? "deny" : "error",
        reason,
        duration_ms: Math.round(ms * 100) / 100,
        pid: t?.instance.pid ?? null,
        process_start: t?.instance.start_time ?? null,
        counters: { ...((ctx as ChainRecord | null)?.counters ?? {}), ...counters },
      },
      this.sup.client().hash,
    );
  }

  private schedule(s: Stream): void {
    if (s.ended !== null) return;
    s.timer = setTimeout(() => {
      s.timer = null;
      this.sample(s).finally(() => this.schedule(s));
    }, 1000 / this.sup.config.visualSampleRate);
    s.timer.unref?.();
  }

  private async sample(s: Stream): Promise<void> {
    if (s.ended !== null) return;
    try {
      const denied = stillAuthorized(this.sup, this.client(), s.policy, s.target, s.byGrant);
      if (denied) throw denied;
      const r = await captureFrame(
        this.sup,
        shotLane(this.sup, this.client(), s.abort.signal),
        s.policy.limits.max_png_bytes,
        { ...s.target, listing: undefined },
        s.plan,
        { grid_spacing: null, output: "png", unless_hash: s.lastHash, tiles: true },
      );
      if (s.ended !== null) return;
      if (r.png === null) {
        this.clearError(s);
        return;
      }
      // Frames that change take the pixel budget a screenshot of the region would.
      this.sup.budgets.takeApplication({
        key: s.target.instanceKey,
        limits: s.policy.limits,
        screenshotPixels: rectArea(s.plan.region),
      });
      this.accept(s, r);
    } catch (e) {
      if (s.ended !== null) return;
      const code = isUiError(e) ? (e as UiError).code : "platform_unavailable";
      if (TERMINAL.has(code)) this.end(s, code);
      else if (s.lastError !== code) {
        s.lastError = code;
        this.notify(s.uri, { error: code });
      }
    }
  }

  private clearError(s: Stream): void {
    s.lastError = null;
  }

  /** Keeps a new frame as the undelivered one (a newer one replaces it) within the process cap. */
  private accept(s: Stream, r: OpResult<"capture.region">): void {
    if (!r.png || !r.frame_hash) return;
    const hash = shortHash(r.frame_hash);
    s.lastHash = r.frame_hash;
    s.lastTiles = r.tiles ?? null;
    this.clearError(s);
    const cap = streamMemory(this.sup);
    const hadPending = s.pending !== null;
    // Latest wins: the older undelivered frame goes before the newer one is counted.
    s.pending?.reservation.release();
    s.pending = null;
    const reservation = cap.tryReserve(r.png.byteLength);
    if (!reservation) {
      s.lastError = "memory_budget_exceeded";
      this.notify(s.uri, { error: "memory_budget_exceeded" });
      return;
    }
    s.sequence += 1;
    // A copy of exactly the PNG's bytes: the worker's transferred buffer may be larger.
    s.pending = {
      png: r.png.slice(),
      hash,
      tiles: r.tiles ?? null,
      sequence: s.sequence,
      captured_at: new Date(this.sup.clock()).toISOString(),
      reservation,
    };
    if (!hadPending) this.notify(s.uri, { sequence: s.sequence, hash });
  }

  private end(s: Stream, reason: string, tell = true): void {
    if (s.ended !== null) return;
    s.ended = reason;
    if (s.timer) clearTimeout(s.timer);
    s.timer = null;
    s.abort.abort();
    s.pending?.reservation.release();
    s.lastRead?.reservation.release();
    s.pending = null;
    s.lastRead = null;
    this.streams.delete(s.uri);
    if (tell) this.notify(s.uri, { ended: reason });
    // The stream's end: how many frames it kept, and the refusal that ended it (if one did).
    const code = (ERROR_CODES as readonly string[]).includes(reason) ? (reason as AuditReason) : "ok";
    this.sup.audit.record(
      {
        correlation_id: newCorrelationId(),
        client: this.sup.client().auditId,
        policy_id: s.policy.policy_id,
        action: "observe",
        tool: "screenshot_window",
        outcome: code === "ok" ? "allow" : isDenial(code) ? "deny" : "error",
        reason: code,
        duration_ms: 0,
        pid: s.target.instance.pid,
        process_start: s.target.instance.start_time,
        counters: { stream_end: true, frames: s.sequence },
      },
      this.sup.client().hash,
    );
  }
}
