import type { UiError } from "../../shared/errors.js";
import type { Rect } from "../../shared/geometry.js";
import type { WindowInfo } from "../../shared/platform.js";
import type { OpArgs, OpName, OpResult } from "../../shared/protocol.js";
import type { ApplicationCharge } from "../budgets.js";
import type { EffectivePolicy } from "../policy/load.js";
import type { Capability } from "../policy/schema.js";
import type { Supervisor } from "../supervisor.js";
import type { ClientIdentity } from "./clientIdentity.js";
import type { Grant } from "./grants.js";
import type { SessionRecord } from "./sessions.js";
import type { ResolvedTarget } from "./targets.js";

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
  /** Zeroes the image: nothing of it can leave after this. */
  drop(): void;
}

/** A one-hop message's answer: the desktop it listed and what it did with the target. */
export interface OneHopReply {
  windows: WindowInfo[];
  held: HeldShot;
}

/** What a tool handler gets once the chain let it through. */
export interface CallContext {
  sup: Supervisor;
  correlationId: string;
  client: ClientIdentity;
  /** Present for every tool that needs a policy. */
  policy: EffectivePolicy | null;
  /** Present for tools that act on a window (after identity re-resolution). */
  target: ResolvedTarget | null;
  grant: Grant | null;
  /** The capability this call exercises (per-class tools: the requested class). */
  capability: Capability | null;
  signal: AbortSignal;
  progress: ProgressReporter;
  /** Calls a worker with the server's deadline and this call's cancellation. */
  call<K extends OpName>(op: K, args: OpArgs<K>, deadlineMs?: number): Promise<OpResult<K>>;
  /** Calls the uia worker that holds an automation session (one worker per grant). */
  callSession<K extends Extract<OpName, `a11y.${string}`>>(
    session: SessionRecord,
    op: K,
    args: OpArgs<K>,
    deadlineMs?: number,
  ): Promise<OpResult<K>>;
  /** Numeric/boolean audit counters for this call. */
  counters: Record<string, number | boolean>;
  /**
   * The typed characters / captured pixels this call booked on the application's budgets, or
   * null. A handler gives them back (refund) only when it is certain nothing was typed or shown.
   */
  charge: ApplicationCharge | null;
  /** The tool's work done in the message that resolved the target (ToolDef.oneHop), or null. */
  held: HeldShot | null;
}
