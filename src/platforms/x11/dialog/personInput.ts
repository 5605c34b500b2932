import { type DialogReport, emptyReport, type IgnoredKind } from "../../../shared/consentReport.js";

/**
 * Which input our dialog believes came from a person, as pure rules tested on their own. All
 * times are X server timestamps (ms, 32 bits, wrapping): an event is judged by when the server
 * made it, never by when the dialog read it, so a click made while Allow was disabled stays too
 * early however late a stalled dialog reads it.
 *
 * - The security delay (SECURITY_DELAY_MS) restarts whenever the dialog is mapped, uncovered,
 *   moved or found covered (those carry no timestamp: the caller asks the server for the time and
 *   hands it to `stamped`; until then nothing counts), whenever the pointer enters the dialog or
 *   lands on a button or off it, by any means, warps included (the pointer's own history: enter,
 *   motion, and the position of every press; a press where the history did not have the pointer
 *   is a landing too), and whenever the dialog gains the focus, at the focus event's server time.
 *   The one focus gain that restarts nothing for the pointer is the one a person's own press on
 *   the dialog causes (a window manager focuses on the press of a click): a focus gain at or
 *   after a press the dialog holds, or followed by a press made at or before it (the window
 *   manager's grab replays the press after focusing). A focus gain with no such press, such as
 *   another client's XSetInputFocus while the pointer rests, restarts the delay for everything.
 *   Keys restart on every focus gain.
 * - Synthetic events (XSendEvent) never count; events whose XInput2 source is an XTEST device
 *   (or no physical slave) count only under the explicit unsafe test setting.
 * - Nothing counts while another window overlaps the dialog (judged by the caller from the X
 *   server's window tree).
 * - Allow is a pointer gesture only: press and release on Allow, both after the delay. Keys move
 *   the focus between the buttons and can deny (Escape, or Return/space on Deny), never approve.
 */

export const SECURITY_DELAY_MS = 1000;

/** X server time a is at or after b (32-bit timestamps wrap after 49.7 days). */
export function serverAtOrAfter(a: number, b: number): boolean {
  return ((a - b) | 0) >= 0;
}

export interface InputFacts {
  /** The event's X server timestamp (ms). */
  time: number;
  /** send_event of the event (XSendEvent). */
  synthetic: boolean;
  /** The XI2 source device is an XTEST device, or not a physical (slave) device at all. */
  injected: boolean;
  /** Another window overlaps the dialog (X server's tree, checked by the caller). */
  covered: boolean;
}

export type Verdict = "accept" | "too_early" | "synthetic" | "injected" | "covered";

export class PersonInputFilter {
  /** Server time from which input counts; null until the first stamp after the map. */
  private armedAt: number | null = null;
  /** Server time from which keys count (every focus gain moves it). */
  private keysAt: number | null = null;
  /** Stamps asked for and not yet arrived (nothing counts until they do). */
  private pendingStamps = 0;
  /** Focus gains (server times) no press has explained yet; for the pointer they count as restarts. */
  private unexplainedFocus: number[] = [];

  constructor(
    private readonly allowInjected: boolean,
    private readonly delayMs = SECURITY_DELAY_MS,
  ) {}

  /** Mapped, uncovered or moved: the delay restarts at the server time `stamped` brings. */
  restartPending(): void {
    this.pendingStamps++;
  }

  /** A server timestamp taken after the event that asked for it (a property change of ours). */
  stamped(time: number): void {
    if (this.pendingStamps === 0) return;
    this.pendingStamps--;
    this.restartAt(time);
  }

  /** The delay restarts at this server time (the pointer landed, the dialog was found covered). */
  restartAt(time: number): void {
    this.armedAt = later(this.armedAt, (time + this.delayMs) >>> 0);
  }

  /**
   * The dialog gained the focus at server time `time`. Keys restart at once. For the pointer it
   * is a restart unless a press explains it: `explained` (it follows a press the dialog holds), or
   * a press made at or before it that arrives next (`pressAt`).
   */
  focusedAt(time: number, explained: boolean): void {
    this.keysAt = later(this.keysAt, (time + this.delayMs) >>> 0);
    if (!explained) this.unexplainedFocus.push(time);
  }

  /** A press made at `time`: focus gains at or after it were its own; earlier ones restart. */
  pressAt(time: number): void {
    for (const f of this.unexplainedFocus.splice(0)) if (!serverAtOrAfter(f, time)) this.restartAt(f);
  }

  /** Pointer input other than a press: a focus gain no press came for was not the person's click. */
  settleFocus(): void {
    for (const f of this.unexplainedFocus.splice(0)) this.restartAt(f);
  }

  /** Whether input made at server time `time` may count (the buttons are drawn enabled). */
  armedBy(time: number, key = false): boolean {
    if (this.pendingStamps > 0 || this.armedAt === null || !serverAtOrAfter(time, this.armedAt)) return false;
    // Drawing treats a focus gain not yet explained as a restart (a press it explains is judged
    // after `pressAt` dropped it).
    for (const f of this.unexplainedFocus)
      if (serverAtOrAfter(time, f) && !serverAtOrAfter(time, (f + this.delayMs) >>> 0)) return false;
    return !key || this.keysAt === null || serverAtOrAfter(time, this.keysAt);
  }

  judge(f: InputFacts, key = false): Verdict {
    if (f.synthetic) return "synthetic";
    if (f.injected && !this.allowInjected) return "injected";
    if (f.covered) {
      // Whatever is on top may have steered this input; the delay starts again.
      this.restartAt(f.time);
      return "covered";
    }
    return this.armedBy(f.time, key) ? "accept" : "too_early";
  }
}

function later(a: number | null, b: number): number {
  return a === null || serverAtOrAfter(b, a) ? b : a;
}

/** Where the pointer is, as the dialog's own history has it. */
export type Spot = "allow" | "deny" | "window" | "outside";
export type Button = "allow" | "deny";
export type KeyRole = "toggle" | "activate" | "escape" | "other";

/**
 * The whole gesture: the filter, the pointer's history, the pressed and the focused button, and
 * counts of what was ignored (kinds only). Returns the answer once one is given.
 */
export class ConsentGesture {
  readonly filter: PersonInputFilter;
  private at: Spot = "outside";
  private pressed: Button | null = null;
  /** Server time of the button 1 press the dialog holds (whatever its verdict), until it ends. */
  private heldSince: number | null = null;
  private focusedButton: Button = "deny";
  private readonly report: DialogReport = emptyReport();
  /** Set when the last key tried to approve (the window shows why nothing happened). */
  keyboardRefused = false;

  constructor(allowInjected: boolean, delayMs = SECURITY_DELAY_MS) {
    this.filter = new PersonInputFilter(allowInjected, delayMs);
  }

  get focused(): Button {
    return this.focusedButton;
  }

  get pointerSpot(): Spot {
    return this.at;
  }

  counts(): DialogReport {
    return { ...this.report, ignored: { ...this.report.ignored } };
  }

  private ignore(kind: IgnoredKind): void {
    this.report.ignored[kind]++;
  }

  /** Where a pointer query (at arm time) found the pointer; a change is a landing. */
  queried(spot: Spot, time: number | null): void {
    if (spot === this.at) return;
    this.at = spot;
    if (time !== null && spot !== "outside") this.filter.restartAt(time);
  }

  /** Enter, leave or motion in the dialog: entering or landing on/off a button restarts the delay. */
  pointer(kind: "enter" | "leave" | "motion", spot: Spot, time: number): void {
    this.filter.settleFocus();
    if (kind === "leave") {
      this.at = "outside";
      this.pressed = null;
      this.heldSince = null;
      return;
    }
    if (kind === "enter" || spot !== this.at) {
      this.at = spot;
      this.pressed = null;
      this.heldSince = null;
      this.filter.restartAt(time);
    }
  }

  /** The dialog gained the input focus at server time `time` (XI2 focus-in). */
  focusIn(time: number): void {
    const explained = this.heldSince !== null && serverAtOrAfter(time, this.heldSince);
    this.filter.focusedAt(time, explained);
  }

  /** A button 1 press or release at `spot`. */
  button(kind: "press" | "release", spot: Spot, f: InputFacts): "approve" | "deny" | null {
    if (kind === "press") {
      this.filter.pressAt(f.time);
      this.heldSince = f.time;
    } else {
      this.filter.settleFocus();
      this.heldSince = null;
    }
    if (spot !== this.at) {
      // The history did not have the pointer here: it arrived unseen (a warp while we were not
      // told, a grab in between). That is a landing like any other.
      this.at = spot;
      this.filter.restartAt(f.time);
    }
    const v = this.filter.judge(f);
    if (v !== "accept") {
      if (kind === "press" || this.pressed !== null) this.ignore(v);
      this.pressed = null;
      return null;
    }
    const b: Button | null = spot === "allow" || spot === "deny" ? spot : null;
    if (kind === "press") {
      this.pressed = b;
      return null;
    }
    const was = this.pressed;
    this.pressed = null;
    if (b === null || b !== was) return null;
    return b === "allow" ? "approve" : "deny";
  }

  /** A key press. Keys move the focus and deny; they never approve. */
  key(role: KeyRole, f: InputFacts): "deny" | null {
    if (role === "other") return null;
    const v = this.filter.judge(f, true);
    if (v !== "accept") {
      this.ignore(v);
      return null;
    }
    this.keyboardRefused = false;
    if (role === "toggle") {
      this.focusedButton = this.focusedButton === "deny" ? "allow" : "deny";
      return null;
    }
    if (role === "escape") return "deny";
    if (this.focusedButton === "deny") return "deny";
    this.ignore("keyboard");
    this.keyboardRefused = true;
    return null;
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
