import type { UiError } from "../../shared/errors.js";
import type { Rect } from "../../shared/geometry.js";
import type { ProcessInstance } from "../../shared/identity.js";
import type { WindowInfo } from "../../shared/platform.js";
import type { OpArgs, OpResult, TargetExpectation } from "../../shared/protocol.js";
import type { Capability } from "../policy/schema.js";
import type { AccessDecision } from "./accessDecision.js";
import type { SessionRecord } from "./sessions.js";

/**
 * The facts a call carries that both its call object (calls.ts) and the services bound to it
 * (services.ts) read: progress, the decision for a named class, a one-hop frame, an observation
 * sent ahead.
 */

/** Sends notifications/progress when the client asked for it (a progressToken); else nothing. */
export type ProgressReporter = (progress: number, total?: number, message?: string) => Promise<void>;

/**
 * What a window tool's one-hop message brought besides the listing (screenshot_window by hwnd:
 * the frame, or a check's refusal), held by the chain until the target it shows is resolved and
 * authorized. The chain drops it when the call ends, however it ends.
 */
export interface HeldShot {
  /** The window-relative region the worker read. */
  region: Rect;
  frame: OpResult<"capture.region"> | null;
  /** A check's refusal, answered only once the call was authorized. */
  refused: UiError | null;
  /** The windows shown when the grant began that the worker's checks were given (shown_before). */
  shownBefore: readonly string[];
  /** Zeroes the image: nothing of it can leave after this. */
  drop(): void;
}

/** A one-hop message's answer: the desktop it listed and what it did with the target. */
export interface OneHopReply {
  windows: WindowInfo[];
  held: HeldShot;
}

/**
 * What a row's one-hop step may use while the chain resolves the target (before access is
 * decided): the call's cancellation, the caller's shot turn with its memory (ShotLane.turn), the
 * capture worker's one-hop message.
 */
export interface OneHopCall {
  readonly signal: AbortSignal;
  /** `work` in the caller's shot turn with `bytes` of the memory budget held (ShotLane.turn). */
  turn<T>(bytes: number, work: () => Promise<T>): Promise<T>;
  /** capture.window, inside `turn`, its frame kept (tiles "later") for the caller's identity only. */
  captureWindow(args: Omit<OpArgs<"capture.window">, "keep_for">): Promise<OpResult<"capture.window">>;
  /** The caller's live grants on a window: their instances and the windows shown when each began. */
  grantsOn(hwnd: string): ReadonlyArray<{ instance: ProcessInstance; shownBefore: readonly string[] }>;
}

/** The one access decision for the class a call names, and whether it holds a token for it. */
export interface ClassDecision {
  capability: Capability;
  decision: AccessDecision;
  hasValidToken: boolean;
}

/** The observations a tool may send ahead of its authorization (ToolDef.observeAhead). */
export type AheadOp = "a11y.inspect" | "a11y.find";

/**
 * An observation sent to the caller's open automation session while the chain resolves the
 * target, with the instance of the caller's grant as the worker's expectation (`ahead`: the
 * worker walks only a session already open and changes nothing on a refusal). The handler reads
 * it only when the call was authorized for exactly that session and expectation; the chain drops
 * it when the call ends, however it ends.
 */
export interface HeldObservation {
  readonly op: AheadOp;
  readonly session: SessionRecord;
  /** What it was sent with (but `ahead`): its expectation and the walk's limits. */
  readonly args: Omit<OpArgs<AheadOp>, "ahead">;
  /** The worker's answer (a rejection is handled: never an unhandled one). */
  readonly result: Promise<OpResult<AheadOp>>;
  /** Stops the worker's walk if it is still running; nothing reads the answer after this. */
  drop(): void;
  /** How the worker failed under it, once it has: it crashed or hung; else null. */
  lost(): "worker_crashed" | "worker_timeout" | null;
}

/** The session and expectation an observation may be sent ahead to, from the caller's grant. */
export interface AheadSession {
  session: SessionRecord;
  target: TargetExpectation;
}

/** What a row's observeAhead step may use while the chain resolves the target. */
export interface AheadCall {
  /**
   * The caller's open session on `hwnd` under its one live grant there for the tool's capability,
   * while the call's budget would let it through; else null (nothing is sent ahead).
   */
  sessionOn(hwnd: string): AheadSession | null;
  /** Sends `op` to that session's worker with `ahead` set, under the call's cancellation. */
  send<K extends AheadOp>(on: AheadSession, op: K, args: Omit<OpArgs<K>, "ahead">): HeldObservation;
  readonly treeDeadlineMs: number;
}
