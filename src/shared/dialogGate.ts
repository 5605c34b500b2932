import { uiError } from "./errors.js";

/**
 * "Is one of this server's consent or lease dialogs open?", answered before every single key and
 * button event we inject (none of our own input may ever reach our dialogs).
 *
 * The supervisor owns the count (`DialogGate`); the input worker reads it (`dialogGate`, one per
 * worker). In thread isolation both sides share one SharedArrayBuffer cell, so a dialog opened
 * between two key events of one gesture stops the very next event. In process isolation the
 * count travels as `dialog_state` messages, which the worker handles at every await between two
 * events; the dialog itself then ignores any event that still arrives in its first second (its
 * security delay), so the message latency cannot turn into an answer.
 */

const OPEN = 0;

/** Supervisor side: counts open dialogs; every open holds one count until released. */
export class DialogGate {
  readonly buffer = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
  private readonly cell = new Int32Array(this.buffer);
  private readonly listeners = new Set<(open: number) => void>();

  /** Dialogs open right now. */
  get open(): number {
    return Atomics.load(this.cell, OPEN);
  }

  /** Marks one dialog open; the returned release (idempotent) marks it closed. */
  hold(): () => void {
    const now = Atomics.add(this.cell, OPEN, 1) + 1;
    this.notify(now);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.notify(Atomics.sub(this.cell, OPEN, 1) - 1);
    };
  }

  /** Called with the new count whenever it changes (process-isolated workers are told by message). */
  onChange(listener: (open: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Refuses with consent_pending while a dialog is open. */
  assertNoDialog(): void {
    if (this.open > 0) throw uiError("consent_pending");
  }

  private notify(open: number): void {
    for (const l of this.listeners) l(open);
  }
}

/** Worker side: the supervisor's count, through the shared cell (thread) or the last message (process). */
export class DialogGateView {
  private cell: Int32Array | null = null;
  private messaged = 0;
  private readonly sources: Array<() => boolean> = [];

  /** Thread isolation: the supervisor's SharedArrayBuffer. */
  attach(buffer: SharedArrayBuffer): void {
    this.cell = new Int32Array(buffer);
  }

  /** Process isolation: the count from the latest dialog_state message. */
  setOpen(open: number): void {
    this.messaged = open;
  }

  /**
   * A platform's own way to learn of dialogs this supervisor did not open (X11: a lease dialog
   * of the broker, or another server's consent dialog); it must answer in microseconds.
   */
  addSource(isOpen: () => boolean): void {
    this.sources.push(isOpen);
  }

  /** The one check every per-event loop of the input worker and the platform input ports makes. */
  assertNoDialog(): void {
    const open = this.cell ? Atomics.load(this.cell, OPEN) : this.messaged;
    if (open > 0 || this.sources.some((isOpen) => isOpen())) throw uiError("consent_pending");
  }
}

/** This worker's view of the gate (set up by src/workers/runtime.ts). */
export const dialogGate = new DialogGateView();
