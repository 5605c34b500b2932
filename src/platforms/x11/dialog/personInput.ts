/**
 * Which input events our dialog believes came from a person, as a pure
 * rule so it is tested on its own:
 *
 * - a security delay: nothing counts until SECURITY_DELAY_MS after the dialog was mapped, and
 *   again after it was uncovered, regained the focus, moved, or was found covered;
 * - nothing counts while any other window overlaps it (judged from the X server's stacking
 *   order by the caller, never from EWMH properties);
 * - synthetic events (XSendEvent: send_event set) never count;
 * - events whose XInput2 source device is an XTEST device (any program's XTest, ours included)
 *   do not count, unless the explicit unsafe test setting lets them through.
 */

export const SECURITY_DELAY_MS = 1000;

export interface InputFacts {
  /** ms, monotonic. */
  now: number;
  /** send_event of the event (XSendEvent). */
  synthetic: boolean;
  /** The XI2 source device is an XTEST device, or not a physical (slave) device at all. */
  injected: boolean;
  /** Another viewable window above ours intersects it. */
  overlapped: boolean;
}

export type Verdict = "accept" | "too_soon" | "synthetic" | "injected" | "overlapped";

export class PersonInputFilter {
  private armedAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly allowInjected: boolean,
    private readonly delayMs = SECURITY_DELAY_MS,
  ) {}

  /** Starts (or restarts) the security delay: mapped, uncovered, focused, moved, covered. */
  rearm(now: number): void {
    this.armedAt = now + this.delayMs;
  }

  /** Whether the buttons take input now (they are drawn disabled until then). */
  armed(now: number): boolean {
    return now >= this.armedAt;
  }

  judge(f: InputFacts): Verdict {
    if (f.synthetic) return "synthetic";
    if (f.injected && !this.allowInjected) return "injected";
    if (f.overlapped) {
      // Covered: whatever is on top may have steered this click; the delay starts again.
      this.rearm(f.now);
      return "overlapped";
    }
    if (!this.armed(f.now)) return "too_soon";
    return "accept";
  }
}

/** XTEST slave devices are named by the X server "<master> XTEST pointer|keyboard". */
export function isXtestDeviceName(name: string): boolean {
  return / XTEST (pointer|keyboard)$/.test(name);
}

/** XI2 device uses: only slave (physical) devices are sources a person's hand can drive. */
export const XI_SLAVE_POINTER = 3;
export const XI_SLAVE_KEYBOARD = 4;
export const XI_FLOATING_SLAVE = 5;
