import { uiError } from "../../shared/errors.js";
import { PipewireFrames, type StreamFrame } from "./pipewireFrames.js";
import { PortalSession, type PortalStream } from "./portalSession.js";
import { type MatchResult, matchAround, opaqueBox } from "./streamMatch.js";

/**
 * The portal sessions this worker may see and act through, each bound to the window (hwnd) the
 * person was asked about: the window stream's frames (capture, and the proof of what a press
 * reaches), the monitor stream's frames (where the window is shown, what covers it), and the
 * session that injects. A binding ends when its session closes, for whatever reason, and its
 * frame readers end with it.
 *
 * Coordinates: the window stream's picture is the window's surface, client-side shadow
 * included, in the surface's own coordinates, which are the coordinates the client reports its
 * elements in over AT-SPI (measured with GTK 3: the frame's extents include the shadow margins).
 * Only fully opaque pixels count as the window's own: shadows and rounded corners are blended
 * with whatever lies behind on the monitor.
 */

const FRAME_WAIT_MS = 3000;
/**
 * How long after a frame arrives its counterpart of the other stream may still be on its way
 * (see provePoint). Each stream has its own reader process, so on a loaded machine one lags the
 * other by up to the time a reader needs for a frame: about a second for the monitor at load 15
 * on two cores.
 */
const SKEW_MS = 2000;
/** A point check waits at most this long in all for the two streams to agree. */
const SETTLE_MAX_MS = 3000;
/** Each frame's opaque box, computed once. */
const boxes = new WeakMap<StreamFrame, [number, number, number, number] | null>();

/**
 * What a binding needs of a session: its streams and its end. A PortalSession is one; a worker
 * that only reads frames (the capture worker) can be handed the same facts from the worker that
 * holds the session, since a PipeWire node is read by its id.
 */
export interface SharedSource {
  readonly streams: readonly PortalStream[];
  readonly isOpen: boolean;
  onClosed(fn: () => void): () => void;
}

export interface Binding {
  readonly hwnd: string;
  readonly source: SharedSource;
  /** The session that injects, when this worker holds it; null for a frames-only binding. */
  readonly session: PortalSession | null;
  readonly windowStream: PortalStream;
  readonly window: PipewireFrames;
  readonly monitor: PipewireFrames | null;
}

/** What a point check found: the window's offset on the monitor, from both streams' frames. */
export interface PointFact {
  /** Window-stream coordinates of the point. */
  readonly sx: number;
  readonly sy: number;
  readonly dx: number;
  readonly dy: number;
}

export class PortalStreams {
  private readonly bound = new Map<string, Binding>();

  /**
   * Binds a started session (with a window stream) to `hwnd`, replacing an older binding.
   * `session`: the PortalSession itself (frames and input) or only its streams and end (frames).
   */
  bind(hwnd: string, source: SharedSource | PortalSession): Binding {
    const windowStream = source.streams.find((s) => s.sourceType === "window");
    if (!windowStream) throw uiError("platform_unavailable", "The shared source is not a window.");
    if (!source.isOpen) throw uiError("target_gone", "The screen-sharing session has ended.");
    this.unbind(hwnd);
    const monitorStream = source.streams.find((s) => s.sourceType === "monitor");
    const b: Binding = {
      hwnd,
      source,
      session: source instanceof PortalSession ? source : null,
      windowStream,
      window: new PipewireFrames(windowStream.node),
      monitor: monitorStream ? new PipewireFrames(monitorStream.node) : null,
    };
    this.bound.set(hwnd, b);
    source.onClosed(() => {
      if (this.bound.get(hwnd) === b) this.unbind(hwnd);
    });
    return b;
  }

  unbind(hwnd: string): void {
    const b = this.bound.get(hwnd);
    if (!b) return;
    this.bound.delete(hwnd);
    b.window.close();
    b.monitor?.close();
  }

  get(hwnd: string): Binding | null {
    const b = this.bound.get(hwnd);
    if (!b) return null;
    if (!b.source.isOpen || b.window.ended) {
      this.unbind(hwnd);
      return null;
    }
    return b;
  }

  get size(): number {
    return this.bound.size;
  }

  /** The one bound window when there is exactly one, else null. */
  only(): Binding | null {
    if (this.bound.size !== 1) return null;
    const [hwnd] = this.bound.keys();
    return this.get(hwnd);
  }

  /** The window stream's latest frame and where the window's own pixels are in it. */
  async windowFrame(b: Binding): Promise<{ frame: StreamFrame; box: [number, number, number, number] }> {
    const frame = await b.window.frame(FRAME_WAIT_MS).catch((e) => {
      throw b.window.ended ? uiError("target_gone", "The shared window's stream has ended.") : e;
    });
    let box = boxes.get(frame);
    if (box === undefined) {
      box = opaqueBox(frame);
      boxes.set(frame, box);
    }
    if (!box) throw uiError("target_gone", "The shared window shows no pixels.");
    return { frame, box };
  }

  /**
   * Proves, from the latest frames of both streams, that the window's pixels around the
   * window point (x, y) are what the monitor shows, at exactly one place. Throws out_of_bounds
   * (the point is not on the window's own pixels), occluded (the monitor does not show them
   * there, or nothing tells where), platform_unavailable (no monitor stream was shared).
   */
  async provePoint(b: Binding, x: number, y: number): Promise<PointFact> {
    if (!b.monitor)
      throw uiError("platform_unavailable", "No monitor was shared, so the window's place cannot be proven.");
    const monitor = b.monitor;
    const waitUntil = Date.now() + SETTLE_MAX_MS;
    for (;;) {
      const { frame, box } = await this.windowFrame(b);
      if (x < box[0] || y < box[1] || x >= box[2] || y >= box[3])
        throw uiError(
          "out_of_bounds",
          `The point (${x}, ${y}) lies outside the shared window (${box[2] - box[0]}×${box[3] - box[1]}).`,
        );
      const mon = await monitor.frame(FRAME_WAIT_MS);
      const r: MatchResult = matchAround(frame, mon, x, y);
      if (r.kind === "found") return { sx: x, sy: y, dx: r.dx, dy: r.dy };
      if (r.kind === "transparent")
        throw uiError("out_of_bounds", `The point (${x}, ${y}) is not on the shared window's own pixels.`);
      // The two streams are composited and sent apart: a window that just redrew (a hover, a
      // focus change) shows its new pixels in one stream before the other. Only the newest pair
      // of frames is ever judged; a mismatch stands once no newer frame has come for SKEW_MS
      // after the newer of the two arrived (at once for a cover that has been there a while).
      const left = Math.min(waitUntil, Math.max(frame.receivedAt, mon.receivedAt) + SKEW_MS) - Date.now();
      if (left <= 0 || !(await newerFrame(b.window, frame.seq, monitor, mon.seq, left)))
        throw r.kind === "not_shown"
          ? uiError("occluded", "The screen does not show the target window at the requested place.")
          : uiError(
              "occluded",
              "The screen around the requested place is too plain to prove it shows the target window.",
            );
    }
  }

  dispose(): void {
    for (const hwnd of [...this.bound.keys()]) this.unbind(hwnd);
  }
}

/** Whether either stream sends a frame newer than the ones judged within `timeoutMs`. */
async function newerFrame(
  win: PipewireFrames,
  winSeq: number,
  mon: PipewireFrames,
  monSeq: number,
  timeoutMs: number,
): Promise<boolean> {
  const arrivals = [win.next(winSeq, timeoutMs), mon.next(monSeq, timeoutMs)];
  for (const a of arrivals) a.catch(() => {});
  return Promise.any(arrivals).then(
    () => true,
    () => false,
  );
}
