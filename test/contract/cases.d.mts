import type { Rect } from "../../src/shared/geometry.js";
import type { Platform, WindowInfo } from "../../src/shared/platform.js";
import type { TargetExpectation } from "../../src/shared/protocol.js";
import type { VerifiedTarget, VerifyOptions } from "../../src/workers/verify.js";

/** Undoes a staged situation. */
export type Undo = () => Promise<void>;

export interface ContractCheck {
  assert(cond: unknown, msg: string): void;
  eq(a: unknown, b: unknown, msg: string): void;
  rejectsWith(p: Promise<unknown>, code: string, msg: string): Promise<unknown>;
}

export interface ContractContext {
  platform: Platform;
  /** A visible, unobscured top-level window of a known process, inside the screen. */
  subject: WindowInfo & { instance: NonNullable<WindowInfo["instance"]> };
  /** The pointer position, read independently of the backend under test (may poll for `expected`). */
  pointer(expected: { x: number; y: number }): Promise<{ x: number; y: number }>;
  /** Pixels a pointer read may differ by (Win32 rounds normalised absolute coordinates). */
  pointerSlack: number;
  isWindowInfo(w: unknown): boolean;
  /** Whether an accessibility provider serves this window here (false: openSession may fail with a code). */
  hasAccessibility: boolean;
  check: ContractCheck;
  /** That build's verifyTarget over platform.desktop. */
  verify(expected: TargetExpectation, opts?: VerifyOptions): Promise<VerifiedTarget>;
  /** Situations built for real by another process; each resolves to its undo. */
  stage: {
    cover(rect: Rect): Promise<Undo>;
    foreground(): Promise<Undo>;
    grab(device: "keyboard" | "pointer"): Promise<Undo>;
    minimize(): Promise<void>;
  };
  /** Lets the window manager act on the requests made so far. */
  settle(): Promise<void>;
  /** The subject's text field, read independently of the backend. */
  typed(): Promise<string>;
  waitFor<T>(fn: () => Promise<T> | T, ms: number): Promise<T | null>;
  /** Another process's window, fresh, that closes when asked politely, and its undo. */
  closable(): Promise<{ window: WindowInfo; undo: Undo }>;
  /** A second Platform of the same backend; the case that asks for it disposes it. */
  fresh(): Promise<Platform>;
  /** Ends a case this backend cannot run, saying why (never a silent pass). */
  unsupported(reason: string): never;
}

export const PORT_CONTRACT: ReadonlyArray<{ name: string; run(ctx: ContractContext): Promise<void> }>;
