import type { Platform, WindowInfo } from "../../src/shared/platform.js";

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
}

export const PORT_CONTRACT: ReadonlyArray<{ name: string; run(ctx: ContractContext): Promise<void> }>;
