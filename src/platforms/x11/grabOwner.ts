import koffi from "koffi";
import type { Ptr } from "../../os/linux/xlib.js";
import { uiError } from "../../shared/errors.js";
import { sleep } from "../../shared/sleep.js";
import type { XConnection } from "./xconn.js";

/**
 * Whose pointer grab is active. A probing GrabPointer only says that some other client holds one
 * (AlreadyGrabbed), and every open GTK menu or combo popup does. The RECORD extension tells which
 * clients the X server delivers events to: during an active pointer grab, pointer events go to the
 * grabbing client alone (XI2 raw events aside, which are not counted). So a recording of the
 * pointer events delivered to every client while the pointer moves one pixel and back names the
 * grab's owner by its resource id base, which X-Resource turns into a PID. Server truth only: no
 * client can write what RECORD reports. A grab that selected no motion gets nothing and so proves
 * nothing (the caller then refuses). See docs/x11.md ("Grabs").
 */

const RECORD_ALL_CLIENTS = 3n;
const CATEGORY_FROM_SERVER = 0;
const CATEGORY_START_OF_DATA = 4;
const CATEGORY_END_OF_DATA = 5;
const BUTTON_PRESS = 4;
const MOTION_NOTIFY = 6;
const LEAVE_NOTIFY = 8;
const GENERIC_EVENT = 35;
/** XI2 device events that follow the pointer: XI_Motion, XI_Enter, XI_Leave (not the raw ones). */
const XI_POINTER_EVENTS = new Set([6, 7, 8]);
const XI_BUTTON_PRESS = 4;

/** Which delivered events a recording counts: their core type, or an XI2 event's evtype. */
interface EventKinds {
  /** The lowest core event type recorded (RECORD's delivered-events range ends at GenericEvent). */
  first: number;
  core(type: number): boolean;
  xi(evtype: number): boolean;
}

const POINTER_EVENTS: EventKinds = {
  first: MOTION_NOTIFY,
  core: (t) => t >= MOTION_NOTIFY && t <= LEAVE_NOTIFY,
  xi: (e) => XI_POINTER_EVENTS.has(e),
};

/** Button presses (core ButtonPress, XI_ButtonPress; never the raw ones, which any root listener gets). */
const PRESS_EVENTS: EventKinds = {
  first: BUTTON_PRESS,
  core: (t) => t === BUTTON_PRESS,
  xi: (e) => e === XI_BUTTON_PRESS,
};
/** How long the server may take to start or end the recording (a loaded machine included). */
const RECORD_WAIT_MS = 3000;
/**
 * How long the recording's end may take while this process holds the server grab: nobody's
 * display updates meanwhile, and the server runs no other client then, so the end-of-data
 * comes at once or something is wrong (the caller then refuses, input_grabbed).
 */
const RECORD_WAIT_GRABBED_MS = 250;
const POLL_MS = 2;

interface InterceptData {
  id_base: number | bigint;
  category: number;
  client_swapped: number;
  data: unknown;
  data_len: number | bigint;
}

/**
 * A recording of event deliveries (pointer motion by default; button presses with
 * `PointerDeliveries.presses`), started before the input and ended after.
 */
export class PointerDeliveries {
  private readonly recipients = new Set<number>();
  private started = false;
  private ended = false;
  private disabled = false;
  private closed = false;

  private constructor(
    private readonly x: XConnection,
    private readonly data: Ptr,
    private readonly ctx: bigint | number,
    private readonly callback: bigint,
    private readonly xiOpcode: number,
    private readonly kinds: EventKinds,
  ) {}

  /** A recording of which clients get the button presses delivered while it runs. */
  static presses(x: XConnection): Promise<PointerDeliveries> {
    return PointerDeliveries.start(x, PRESS_EVENTS);
  }

  /**
   * Starts recording (on a second display connection of its own, as RECORD requires). Must run
   * while this process does not hold the server grab: the server has to execute the enable.
   */
  static async start(x: XConnection, kinds: EventKinds = POINTER_EVENTS): Promise<PointerDeliveries> {
    const n = x.n;
    const r = n.xrecord;
    const op = [0];
    if (n.XQueryExtension(x.dpy, "RECORD", op, [0], [0]) === 0)
      throw uiError("input_grabbed", "Another client holds the pointer and its owner cannot be told.");
    const xi = [0];
    const xiOpcode = n.XQueryExtension(x.dpy, "XInputExtension", xi, [0], [0]) === 0 ? -1 : (xi[0] ?? -1);
    const data = n.XOpenDisplay(x.displayName);
    if (data === null || data === 0n)
      throw uiError("platform_unavailable", "The X display cannot be opened.");
    n.XSetIOErrorExitHandler(data, n.noopErrorHandler, null);
    const range = r.XRecordAllocRange();
    if (range === null || range === 0n) {
      n.XCloseDisplay(data);
      throw uiError("platform_unavailable", "RECORD is unavailable.");
    }
    const none = { first: 0, last: 0 };
    const noExt = { ext_major: none, ext_minor: none };
    koffi.encode(range, r.Range, {
      core_requests: none,
      core_replies: none,
      ext_requests: noExt,
      ext_replies: noExt,
      delivered_events: { first: kinds.first, last: GENERIC_EVENT },
      device_events: none,
      errors: none,
      client_started: 0,
      client_died: 0,
    });
    const ctx = r.XRecordCreateContext(x.dpy, 0, [RECORD_ALL_CLIENTS], 1, [range], 1);
    n.XFree(range);
    n.XSync(x.dpy, 0);
    let rec: PointerDeliveries | null = null;
    const callback = koffi.register((_closure: unknown, p: Ptr) => {
      try {
        rec?.take(koffi.decode(p, r.InterceptData) as InterceptData);
      } finally {
        r.XRecordFreeData(p);
      }
    }, koffi.pointer(r.InterceptProc));
    rec = new PointerDeliveries(x, data, ctx, callback, xiOpcode, kinds);
    try {
      if (r.XRecordEnableContextAsync(data, ctx, callback, null) === 0)
        throw uiError("platform_unavailable", "RECORD could not be enabled.");
      n.XFlush(data);
      await rec.pumpUntil(() => rec?.started === true);
      return rec;
    } catch (e) {
      rec.close();
      throw e;
    }
  }

  private take(d: InterceptData): void {
    if (d.category === CATEGORY_START_OF_DATA) this.started = true;
    else if (d.category === CATEGORY_END_OF_DATA) this.ended = true;
    else if (d.category === CATEGORY_FROM_SERVER && Number(d.data_len) >= 8) {
      const b = koffi.decode(d.data, "uint8_t", 10) as number[];
      const type = (b[0] ?? 0) & 0x7f;
      const evtype = d.client_swapped ? ((b[8] ?? 0) << 8) | (b[9] ?? 0) : (b[8] ?? 0) | ((b[9] ?? 0) << 8);
      const counted =
        (type !== GENERIC_EVENT && this.kinds.core(type)) ||
        (type === GENERIC_EVENT && b[1] === this.xiOpcode && this.kinds.xi(evtype));
      if (counted) this.recipients.add(Number(d.id_base));
    }
  }

  private async pumpUntil(done: () => boolean, waitMs = RECORD_WAIT_MS): Promise<void> {
    const until = Date.now() + waitMs;
    for (;;) {
      this.x.n.xrecord.XRecordProcessReplies(this.data);
      if (done()) return;
      if (Date.now() > until) throw uiError("input_grabbed", "The pointer grab's owner could not be told.");
      await sleep(POLL_MS);
    }
  }

  /**
   * Reads the recording until some delivery went to `client` or `ms` passed (an event replayed by
   * the client whose passive grab took it first, e.g. the WM's button bindings, is delivered only
   * once that client let it go). Whether it did.
   */
  async awaitDeliveryTo(client: number, ms: number): Promise<boolean> {
    try {
      await this.pumpUntil(() => this.recipients.has(client), ms);
      return true;
    } catch {
      return false;
    }
  }

  /** Moves the pointer one pixel and back, where it is: the grabbing client gets the motion. */
  nudge(): void {
    const n = this.x.n;
    const rx = [0];
    const ry = [0];
    n.XQueryPointer(this.x.dpy, this.x.root, [0], [0], rx, ry, [0], [0], [0]);
    const px = rx[0] ?? 0;
    const py = ry[0] ?? 0;
    n.XTestFakeMotionEvent(this.x.dpy, -1, px > 0 ? px - 1 : px + 1, py, 0);
    n.XTestFakeMotionEvent(this.x.dpy, -1, px, py, 0);
    n.XSync(this.x.dpy, 0);
  }

  /**
   * Ends the recording: the resource id bases of the clients that got pointer events. Uses only
   * this process's main connection and reads the data connection, so it also runs while this
   * process holds the server grab (the server runs no other connection's requests then); `grabbed`
   * says so, and bounds the wait by RECORD_WAIT_GRABBED_MS instead of RECORD_WAIT_MS.
   */
  async finish(grabbed = false): Promise<number[]> {
    if (this.ended || this.closed) return [...this.recipients];
    this.x.n.xrecord.XRecordDisableContext(this.x.dpy, this.ctx);
    this.x.n.XSync(this.x.dpy, 0);
    this.disabled = true;
    await this.pumpUntil(() => this.ended, grabbed ? RECORD_WAIT_GRABBED_MS : RECORD_WAIT_MS);
    return [...this.recipients];
  }

  /**
   * Frees the context and closes the data connection. Never while this process holds the
   * server grab: closing a display waits for the server to answer on that connection.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const n = this.x.n;
    if (!this.disabled) n.xrecord.XRecordDisableContext(this.x.dpy, this.ctx);
    n.xrecord.XRecordFreeContext(this.x.dpy, this.ctx);
    n.XSync(this.x.dpy, 0);
    n.XCloseDisplay(this.data);
    koffi.unregister(this.callback);
  }
}

/**
 * Whether the active pointer grab belongs to process `pid`: every client that got the pointer
 * events of a one-pixel nudge during `recording` is one the X server attributes to `pid`, and
 * there was one. Ends the recording (`grabbed`: while this process holds the server grab, see
 * PointerDeliveries.finish); its owner closes it.
 */
export async function pointerGrabHeldBy(
  x: XConnection,
  pid: number,
  recording: PointerDeliveries,
  grabbed = false,
): Promise<boolean> {
  let ids: number[] = [];
  try {
    recording.nudge();
  } finally {
    ids = await recording.finish(grabbed);
  }
  if (pid <= 0 || ids.length === 0) return false;
  const pids = x.clientPids(ids);
  return ids.every((id) => pids.get(id) === pid);
}

/** pointerGrabHeldBy with a recording of its own (not under the server grab). */
export async function pointerGrabProvenFor(x: XConnection, pid: number): Promise<boolean> {
  if (pid <= 0) return false;
  const recording = await PointerDeliveries.start(x);
  try {
    return await pointerGrabHeldBy(x, pid, recording);
  } finally {
    recording.close();
  }
}
