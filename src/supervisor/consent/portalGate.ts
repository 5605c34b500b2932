import { isUiError, uiError } from "../../shared/errors.js";
import { instanceKey as keyOfInstance, type ProcessInstance } from "../../shared/identity.js";
import type { Clock } from "../budgets.js";

/**
 * The second consent gate on Wayland: after the person approved our own dialog, the compositor's
 * portal dialog (xdg-desktop-portal's RemoteDesktop with a window ScreenCast source), where the
 * person picks the window and allows control. A grant stands only while the portal session it was
 * given under is open: the compositor ending the session (the portal's Closed signal, its stream
 * ending, the bus connection lost) ends it, and our side ending a grant for good ends the session.
 *
 * State per (client hash, process instance):
 *   none --admit--> picking --allowed--> open --end / compositor ends--> none
 *                      |--declined / timeout / target gone / error--> none
 * One picker per key at a time: concurrent admits share it. A caller that gives up (its signal)
 * detaches only its own wait; the picker stays up until it is answered or times out, and a session
 * that arrives then is kept for the next request. Nothing is written anywhere: a restore token, if
 * a port uses one, lives in that port's memory.
 */

/** Why the compositor ended a portal session (content-free). */
export type PortalEnd = "closed" | "stream_ended" | "bus_lost";

export interface PortalSession {
  /** Ends the session at the portal (idempotent); the end listener is not called for it. */
  close(): void;
  /** The one listener for the compositor ending the session; called at most once. */
  onEnd(listener: (why: PortalEnd) => void): void;
}

export type PortalAnswer = { answer: "allowed"; session: PortalSession } | { answer: "declined" };

export interface PortalRequest {
  instance: ProcessInstance;
  hwnd: string;
}

/** Opens one portal session; the picker closes (and the promise rejects) when `signal` aborts. */
export interface PortalPort {
  /** What health_check says of it (no secret, no title). */
  readonly mechanism: string;
  open(req: PortalRequest, signal: AbortSignal): Promise<PortalAnswer>;
}

export interface PortalEnded {
  client: string;
  instanceKey: string;
  instance: ProcessInstance;
  why: PortalEnd;
}

export interface PortalGateOptions {
  port: PortalPort;
  clock: Clock;
  /** How long the picker may stay unanswered: the consent timeout (UIINSPECT_CONSENT_TIMEOUT_MS). */
  timeoutMs: number;
  /** Held while a picker may be on screen: no input of ours is sent meanwhile (consent_pending). */
  holdDialog?: () => () => void;
  /** The compositor ended a session: the supervisor revokes the grant, forgets the approval, audits. */
  onEnded: (e: PortalEnded) => void;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
}

interface Waiter {
  resolve: (a: "allowed" | "declined") => void;
  reject: (e: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

interface Picking {
  kind: "picking";
  instance: ProcessInstance;
  controller: AbortController;
  waiters: Set<Waiter>;
  timer: unknown;
  release: () => void;
  settled: boolean;
}

interface Open {
  kind: "open";
  instance: ProcessInstance;
  session: PortalSession;
  openedAt: number;
}

type Slot = Picking | Open;

export class PortalGate {
  private readonly slots = new Map<string, Slot>();
  private readonly setTimer: (fn: () => void, ms: number) => unknown;
  private readonly clearTimer: (handle: unknown) => void;
  private pickersShown = 0;

  constructor(private readonly opts: PortalGateOptions) {
    if (!(opts.timeoutMs >= 1)) throw uiError("invalid_argument", "The portal timeout must be >= 1 ms.");
    this.setTimer = opts.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.clearTimer = opts.clearTimer ?? ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
  }

  get mechanism(): string {
    return this.opts.port.mechanism;
  }

  /** Pickers shown since start. */
  get pickerCount(): number {
    return this.pickersShown;
  }

  /** Open portal sessions. */
  get openCount(): number {
    let n = 0;
    for (const s of this.slots.values()) if (s.kind === "open") n++;
    return n;
  }

  /** Whether (client, instance) holds an open portal session. */
  has(client: string, instanceKey: string): boolean {
    return this.slots.get(mapKey(client, instanceKey))?.kind === "open";
  }

  /**
   * The second gate for (client, instance): "allowed" once an open session stands (at once when one
   * already does), "declined" when the person cancelled the picker. Fails with consent_timeout,
   * target_gone (the instance was ended meanwhile), cancelled (this caller's signal) or
   * platform_unavailable (no portal, or it failed).
   */
  admit(req: {
    client: string;
    instance: ProcessInstance;
    hwnd: string;
    signal?: AbortSignal;
  }): Promise<"allowed" | "declined"> {
    if (req.signal?.aborted) return Promise.reject(uiError("cancelled"));
    const key = mapKey(req.client, keyOfInstance(req.instance));
    const slot = this.slots.get(key);
    if (slot?.kind === "open") return Promise.resolve("allowed");
    const picking = slot ?? this.openPicker(key, req);
    return new Promise((resolve, reject) => {
      const w: Waiter = { resolve, reject, signal: req.signal };
      if (req.signal) {
        w.onAbort = () => {
          if (picking.waiters.delete(w)) reject(uiError("cancelled"));
        };
        req.signal.addEventListener("abort", w.onAbort, { once: true });
      }
      picking.waiters.add(w);
    });
  }

  /** Our side ends (client, instance)'s session or picker for good: release, revocation. */
  end(client: string, instanceKey: string): boolean {
    return this.endWhere((k) => k === mapKey(client, instanceKey), "consent_required");
  }

  /** Ends every client's session or picker on an instance (it is gone or changed). */
  endInstance(instanceKey: string): number {
    return this.endAllWhere((k) => k.endsWith(`\u0000${instanceKey}`), "target_gone");
  }

  /** Ends everything one client holds (its credential was revoked). */
  endClient(client: string): number {
    return this.endAllWhere((k) => k.startsWith(`${client}\u0000`), "credential_revoked");
  }

  /** Ends everything (server shutdown). */
  endAll(): number {
    return this.endAllWhere(() => true, "cancelled");
  }

  private openPicker(key: string, req: { instance: ProcessInstance; hwnd: string }): Picking {
    const picking: Picking = {
      kind: "picking",
      instance: req.instance,
      controller: new AbortController(),
      waiters: new Set(),
      timer: undefined,
      release: this.opts.holdDialog?.() ?? (() => undefined),
      settled: false,
    };
    this.slots.set(key, picking);
    this.pickersShown++;
    picking.timer = this.setTimer(
      () =>
        this.fail(
          key,
          picking,
          uiError("consent_timeout", "The compositor's window picker timed out: nobody answered it in time."),
        ),
      this.opts.timeoutMs,
    );
    let shown: Promise<PortalAnswer>;
    try {
      shown = this.opts.port.open({ instance: req.instance, hwnd: req.hwnd }, picking.controller.signal);
    } catch (e) {
      shown = Promise.reject(e);
    }
    shown.then(
      (a) => this.answered(key, picking, a),
      (e) =>
        this.fail(
          key,
          picking,
          isUiError(e) && e.code !== "cancelled"
            ? e
            : uiError("platform_unavailable", "The compositor's window picker failed."),
        ),
    );
    return picking;
  }

  private answered(key: string, picking: Picking, a: PortalAnswer): void {
    if (picking.settled) {
      // Too late (timed out, or ended by us): the session must not outlive its gate.
      if (a.answer === "allowed") a.session.close();
      return;
    }
    this.finish(picking);
    if (a.answer === "declined") {
      if (this.slots.get(key) === picking) this.slots.delete(key);
      for (const w of this.detach(picking)) w.resolve("declined");
      return;
    }
    const open: Open = {
      kind: "open",
      instance: picking.instance,
      session: a.session,
      openedAt: this.opts.clock(),
    };
    this.slots.set(key, open);
    a.session.onEnd((why) => {
      if (this.slots.get(key) !== open) return; // ended by us first
      this.slots.delete(key);
      const [client, instanceKey] = splitKey(key);
      this.opts.onEnded({ client, instanceKey, instance: open.instance, why });
    });
    for (const w of this.detach(picking)) w.resolve("allowed");
  }

  private fail(key: string, picking: Picking, e: unknown): void {
    if (picking.settled) return;
    this.finish(picking);
    picking.controller.abort(e);
    if (this.slots.get(key) === picking) this.slots.delete(key);
    for (const w of this.detach(picking)) w.reject(e);
  }

  private finish(picking: Picking): void {
    picking.settled = true;
    if (picking.timer !== undefined) this.clearTimer(picking.timer);
    picking.release();
  }

  private detach(picking: Picking): Waiter[] {
    const ws = [...picking.waiters];
    picking.waiters.clear();
    for (const w of ws) if (w.signal && w.onAbort) w.signal.removeEventListener("abort", w.onAbort);
    return ws;
  }

  private endWhere(
    match: (key: string) => boolean,
    code: "consent_required" | "target_gone" | "credential_revoked" | "cancelled",
  ): boolean {
    return this.endAllWhere(match, code) > 0;
  }

  private endAllWhere(
    match: (key: string) => boolean,
    code: "consent_required" | "target_gone" | "credential_revoked" | "cancelled",
  ): number {
    let n = 0;
    for (const [key, slot] of [...this.slots]) {
      if (!match(key)) continue;
      n++;
      if (slot.kind === "picking") {
        this.fail(key, slot, uiError(code));
      } else {
        this.slots.delete(key);
        slot.session.close();
      }
    }
    return n;
  }
}

function mapKey(client: string, instanceKey: string): string {
  return `${client}\u0000${instanceKey}`;
}

function splitKey(key: string): [string, string] {
  const i = key.indexOf("\u0000");
  return [key.slice(0, i), key.slice(i + 1)];
}
