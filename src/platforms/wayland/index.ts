import { libc } from "../../os/linux/libc.js";
import { setClockTicks } from "../../os/linux/proc.js";
import { uiError } from "../../shared/errors.js";
import type { Rect } from "../../shared/geometry.js";
import {
  type A11ySession,
  type AccessibilityPort,
  type CapturePort,
  type FrameTarget,
  frameFits,
  type InputPort,
  type LiveProof,
  type MouseButton,
  type Platform,
  type RawImage,
  type WindowInfo,
} from "../../shared/platform.js";
import { AtspiBus } from "../x11/atspiBus.js";
import { AtspiSession } from "../x11/atspiSession.js";
import { NO_FOCUS_PROOF, NOT_SHARED, offsetTag, WaylandDesktop } from "./desktop.js";
import { createPortalSharing } from "./portalHolder.js";
import type { PortalSession } from "./portalSession.js";
import { PortalStreams, type SharedSource } from "./portalStreams.js";

/** A capture must follow its region check by at most this long. */
const CLEARED_MAX_AGE_MS = 2000;

/** The Wayland platform, with where portal sessions are handed to it. */
export interface WaylandPlatform extends Platform {
  /**
   * Binds a started portal session (a window stream, ideally with a monitor stream) to the
   * window `hwnd` the person was asked about: from then on, until the session closes, that
   * window's pixels may be read and pointer input proven and sent through the session.
   */
  bindPortalSession(hwnd: string, session: PortalSession | SharedSource): void;
  unbindPortalSession(hwnd: string): void;
}

/**
 * The Wayland platform (GNOME) for one worker: windows, process identity, accessibility trees
 * and semantic actions over AT-SPI, as on X11. Screenshots and pointer input only for a window
 * the person shared through the desktop portal (bindPortalSession): its stream is the capture,
 * and a press is sent through the session after the window stream and the monitor stream show
 * the same pixels around its point. Keys and text are refused: this compositor does not tell a
 * client outside gnome-shell's allow-list which window has the focus (docs/wayland.md).
 */
export async function createWaylandPlatform(_opts: {
  workerKind: "capture" | "input" | "uia" | "other";
}): Promise<WaylandPlatform> {
  if (!process.env.WAYLAND_DISPLAY) throw uiError("platform_unavailable", "No Wayland display is set.");
  // /proc start times are in clock ticks (sysconf _SC_CLK_TCK = 2).
  setClockTicks(Number(libc().sysconf(2)));
  const atspi = lazyAtspiBus();
  const portals = new PortalStreams();
  const desktop = new WaylandDesktop(atspi.bus, portals);
  let disposed = false;
  const isDisposed = () => disposed;
  const sharing = createPortalSharing(
    (hwnd, source) => {
      if (disposed) throw uiError("platform_unavailable");
      portals.bind(hwnd, source);
    },
    (hwnd) => portals.unbind(hwnd),
  );
  return {
    desktop,
    capture: waylandCapture(desktop, portals),
    input: waylandInput(desktop, portals),
    accessibility: waylandAccessibility(desktop, atspi.bus, isDisposed),
    portals: sharing,
    bindPortalSession: (hwnd, session) => {
      if (disposed) throw uiError("platform_unavailable");
      portals.bind(hwnd, session);
    },
    unbindPortalSession: (hwnd) => portals.unbind(hwnd),
    dispose: async () => {
      if (disposed) return;
      disposed = true;
      await sharing.dispose();
      portals.dispose();
      await desktop.dispose();
      await atspi.close();
    },
  };
}

/** The a11y bus, connected at its first use; a failed connection is tried again next time. */
function lazyAtspiBus(): { bus: () => Promise<AtspiBus>; close: () => Promise<void> } {
  let busPromise: Promise<AtspiBus> | null = null;
  const bus = (): Promise<AtspiBus> => {
    if (!busPromise) {
      busPromise = AtspiBus.connect();
      busPromise.catch(() => {
        busPromise = null;
      });
    }
    return busPromise;
  };
  const close = async () => {
    const p = busPromise;
    busPromise = null;
    await p?.then((b) => b.disconnect()).catch(() => {});
  };
  return { bus, close };
}

function waylandCapture(desktop: WaylandDesktop, portals: PortalStreams): CapturePort {
  return {
    // The rect is window coordinates (the listing puts every window at the origin). Only the
    // window stream is read, so the image holds that window's pixels and nothing else.
    captureScreen: async (rect: Rect, into?: FrameTarget): Promise<RawImage> => {
      const hwnd = desktop.clearedForCapture(CLEARED_MAX_AGE_MS);
      // With several shared windows in one worker a rect alone could not say whose it is.
      const b = portals.only();
      if (!hwnd || !b || b.hwnd !== hwnd) throw uiError("platform_unavailable", NOT_SHARED);
      const { frame, box } = await portals.windowFrame(b);
      return cropRgb(frame, box, rect, into);
    },
  };
}

/** Pointer input through the shared window's portal session; keys and text are refused. */
function waylandInput(desktop: WaylandDesktop, portals: PortalStreams): InputPort {
  // Pointer: where the last move put it (window coordinates) and whether a button is down.
  let at: { hwnd: string; x: number; y: number } | null = null;
  const bound = (hwnd: string | null) => {
    const b = hwnd ? portals.get(hwnd) : null;
    if (!b?.session) throw uiError("platform_unavailable", NOT_SHARED);
    return { ...b, session: b.session };
  };
  const noKeys = (): Promise<never> => Promise.reject(uiError("not_foreground", NO_FOCUS_PROOF));
  return {
    moveTo: async (x: number, y: number) => {
      const hwnd = desktop.clearedForPointer();
      const b = bound(hwnd);
      const { box } = await portals.windowFrame(b);
      // Outside the window's own pixels the compositor would place the pointer elsewhere.
      if (x < box[0] || y < box[1] || x >= box[2] || y >= box[3])
        throw uiError("out_of_bounds", "The point is not on the shared window's own pixels.");
      await b.session.pointerMotionAbsolute(b.windowStream, x, y);
      at = { hwnd: b.hwnd, x, y };
    },
    buttonDown: async (button: MouseButton, proof?: LiveProof | null) => {
      // A press is only ever sent where a check just proved the window is shown, and only
      // while the frames still show it at the same place (checked again right now).
      const here = at;
      if (!here || !proof) throw uiError("platform_unavailable", NOT_SHARED);
      const proven = proof.points.find((p) => p.x === here.x && p.y === here.y && p.path[0] === here.hwnd);
      if (!proven) throw uiError("occluded", "The press is not where the check proved the window is shown.");
      const b = bound(here.hwnd);
      const now = await portals.provePoint(b, here.x, here.y);
      if (proven.path[1] !== offsetTag(now.dx, now.dy))
        throw uiError("target_changed", "The target window moved on the screen.");
      try {
        await b.session.pointerButton(button, true);
      } catch (e) {
        await b.session.pointerButton(button, false).catch(() => {});
        throw e;
      }
      return null;
    },
    buttonUp: async (button: MouseButton) => {
      const b = bound(at?.hwnd ?? null);
      await b.session.pointerButton(button, false);
    },
    wheel: async (notches: number) => {
      const b = bound(at?.hwnd ?? null);
      // Ours: positive = away from the user; the portal's discrete steps: positive = down.
      await b.session.pointerAxisDiscrete(-notches);
    },
    keyDown: noKeys,
    keyUp: noKeys,
    typeText: noKeys,
  };
}

/** AT-SPI sessions on a window whose frame's application is the window's process, as the bus says. */
function waylandAccessibility(
  desktop: WaylandDesktop,
  bus: () => Promise<AtspiBus>,
  isDisposed: () => boolean,
): AccessibilityPort {
  return {
    openSession: async (window: WindowInfo): Promise<A11ySession> => {
      if (isDisposed()) throw uiError("platform_unavailable");
      if (!window.instance) throw uiError("target_changed");
      const frame = await desktop.frameOf(window.hwnd);
      if (!frame) throw uiError("target_gone");
      const b = await bus();
      // The frame's application must be the window's process, as the bus daemon says now.
      if ((await b.pidOf(frame.app.bus)) !== window.instance.pid) throw uiError("target_changed");
      await b.linkPeer(frame.app.bus, window.instance.pid);
      return new AtspiSession(b, { bus: frame.bus, path: frame.path, parent: null }, true, [frame.app]);
    },
  };
}

/**
 * The rect (window coordinates, the stream picture's own) of a window-stream frame as packed
 * RGB: anything outside the window's opaque box, or not fully opaque, is black.
 */
export function cropRgb(
  frame: { width: number; height: number; rgba: Uint8Array },
  box: readonly [number, number, number, number],
  rect: Rect,
  into?: FrameTarget,
): RawImage {
  const w = rect[2] - rect[0];
  const h = rect[3] - rect[1];
  const use = into && frameFits(into, w, h) ? into : null;
  const stride = use ? use.stride : w * 3;
  const data = use ? use.data : new Uint8Array(w * h * 3);
  const src = frame.rgba;
  for (let y = 0; y < h; y++) {
    const fy = rect[1] + y;
    const row = y * stride;
    for (let x = 0; x < w; x++) {
      const fx = rect[0] + x;
      const o = row + x * 3;
      if (fx < box[0] || fy < box[1] || fx >= box[2] || fy >= box[3]) {
        data[o] = 0;
        data[o + 1] = 0;
        data[o + 2] = 0;
        continue;
      }
      const i = (fy * frame.width + fx) * 4;
      const opaque = src[i + 3] === 255;
      data[o] = opaque ? src[i] : 0;
      data[o + 1] = opaque ? src[i + 1] : 0;
      data[o + 2] = opaque ? src[i + 2] : 0;
    }
  }
  return use
    ? { width: w, height: h, channels: 3, data, stride }
    : { width: w, height: h, channels: 3, data };
}
