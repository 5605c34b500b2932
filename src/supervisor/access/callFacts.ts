import type { UiError } from "../../shared/errors.js";
import type { Rect } from "../../shared/geometry.js";
import type { ProcessInstance } from "../../shared/identity.js";
import type { WindowInfo } from "../../shared/platform.js";
import type { OpArgs, OpResult } from "../../shared/protocol.js";
import type { Reservation } from "../budgets.js";
import type { Capability } from "../policy/schema.js";
import type { AccessDecision } from "./accessDecision.js";

/**
 * The facts a call carries that both its call object (calls.ts) and the services bound to it
 * (services.ts) read: progress, the decision for a named class, a one-hop frame.
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
 * decided): the call's cancellation, the memory budget, the capture worker's one-hop message.
 */
export interface OneHopCall {
  readonly signal: AbortSignal;
  reserve(bytes: number): Promise<Reservation>;
  /** capture.window, its frame kept (tiles "later") for the caller's identity only. */
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
