import dbus from "dbus-next";
import { resolveProcessInstance } from "../../os/linux/proc.js";
import { uiError } from "../../shared/errors.js";
import type { Rect } from "../../shared/geometry.js";
import { type ProcessInstance, sameInstance } from "../../shared/identity.js";
import {
  type DesktopPort,
  type LiveCheck,
  type LiveProof,
  NO_PROOF,
  type WindowInfo,
} from "../../shared/platform.js";
import type { AtspiBus } from "../x11/atspiBus.js";
import { announcedDialogPids } from "./dialogPresence.js";
import type { PortalStreams } from "./portalStreams.js";
import {
  type FrameRef,
  type Listing,
  listFrames,
  sessionBusOwnerPid,
  sessionBusOwnerPids,
  waylandSession,
} from "./windows.js";

/** The portal front end and its GNOME and GTK backends, whose windows are the portal's dialogs. */
const PORTAL_NAMES = [
  "org.freedesktop.portal.Desktop",
  "org.freedesktop.impl.portal.desktop.gnome",
  "org.freedesktop.impl.portal.desktop.gtk",
];

/**
 * Discovery on a GNOME Wayland session. Windows and their process instances come from AT-SPI
 * and the kernel (windows.ts); the screen's size from mutter's DisplayConfig. What this compositor
 * does not tell a client outside gnome-shell's allow-list (where a window is, what is above it,
 * which window has the input focus) is never guessed: every effect that needs one of those
 * facts is refused in confirmLive, before anything happens (docs/wayland.md). For a window the
 * person shared through the portal (portalStreams.ts), the compositor's own pictures prove what
 * a point shows: the window stream against the monitor stream around it.
 */

/** Why pointer, key and pixel effects are refused here (no title or value in it). */
export const UNPROVABLE =
  "This Wayland compositor does not tell this program where a window is, what covers it or which window has the focus, so the effect cannot be verified and is refused.";

/** Why pointer and pixel effects on a window nobody shared are refused. */
export const NOT_SHARED =
  "The target window is not shared through the desktop portal in this session, so the effect cannot be verified and is refused.";

/** Why keys and text are refused even on a shared window. */
export const NO_FOCUS_PROOF =
  "This Wayland compositor does not tell this program which window has the keyboard focus, so keys and text are refused.";

/** The proof's path entry that carries where the window was found on the monitor. */
export function offsetTag(dx: number, dy: number): string {
  return `monitor-offset:${dx},${dy}`;
}

export class WaylandDesktop implements DesktopPort {
  readonly platform = "wayland" as const;
  /** confirmLive refuses every point and region, those past the screen included. */
  readonly liveCheckCoversScreen = true;
  /** A press is proven by the streams' pixels around its point, not by the focus. */
  readonly pointerWithoutFocus = true;
  /** The window whose region the last check cleared for a capture, and when. */
  private cleared: { hwnd: string; at: number } | null = null;
  /** The window the last point check cleared for pointer input. */
  private pointerTarget: string | null = null;
  private readonly session = waylandSession();
  private shellPid: Promise<number | null> | null = null;
  private last: Listing | null = null;
  private disposed = false;

  constructor(
    private readonly bus: () => Promise<AtspiBus>,
    readonly portals: PortalStreams,
  ) {}

  private compositorPid(): Promise<number | null> {
    if (!this.shellPid) {
      this.shellPid = sessionBusOwnerPid("org.gnome.Shell");
      // An answer of "no owner" is asked again next time (the shell may still be starting).
      void this.shellPid.then((p) => {
        if (p === null) this.shellPid = null;
      });
    }
    return this.shellPid;
  }

  /**
   * Processes whose windows are never listed, targets or inspected: the compositor (its stage is
   * a screen-sized window), the portal and its backends (their window picker is the second
   * consent gate) and our own consent dialogs (announced by PID).
   */
  private async excludedPids(): Promise<Set<number>> {
    const [shell, portals] = await Promise.all([this.compositorPid(), sessionBusOwnerPids(PORTAL_NAMES)]);
    const out = announcedDialogPids(process.env);
    for (const p of [shell, ...portals]) if (p !== null) out.add(p);
    return out;
  }

  async listing(): Promise<Listing> {
    if (this.disposed) throw uiError("platform_unavailable");
    const listing = await listFrames(await this.bus(), this.session, await this.excludedPids());
    this.last = listing;
    return listing;
  }

  /** Where the window `hwnd` of the latest listing lives on the a11y bus. */
  async frameOf(hwnd: string): Promise<FrameRef | null> {
    const listing = (this.last?.frames.has(hwnd) ? this.last : null) ?? (await this.listing());
    return listing.frames.get(hwnd) ?? null;
  }

  async listWindows(): Promise<WindowInfo[]> {
    return (await this.listing()).windows;
  }

  async getWindow(hwnd: string): Promise<WindowInfo | null> {
    return (await this.listWindows()).find((w) => w.hwnd === hwnd) ?? null;
  }

  async isInstanceAlive(instance: ProcessInstance): Promise<boolean> {
    const now = resolveProcessInstance(instance.pid, instance.session);
    return now !== null && sameInstance(now, instance);
  }

  /**
   * The bounding box of mutter's logical monitors (DisplayConfig.GetCurrentState): each one's
   * origin, and the size of its monitors' current mode (divided by the scale in the logical
   * layout mode, sides swapped for a quarter turn).
   */
  async virtualScreen(): Promise<Rect> {
    if (!process.env.DBUS_SESSION_BUS_ADDRESS) throw uiError("platform_unavailable");
    const session = dbus.sessionBus();
    session.on("error", () => {});
    try {
      const reply = await session.call(
        new dbus.Message({
          destination: "org.gnome.Mutter.DisplayConfig",
          path: "/org/gnome/Mutter/DisplayConfig",
          interface: "org.gnome.Mutter.DisplayConfig",
          member: "GetCurrentState",
        }),
      );
      const box = screenBox(reply?.body ?? []);
      if (!box) throw uiError("platform_unavailable", "The compositor reports no active monitor.");
      return box;
    } catch (e) {
      if (e instanceof dbus.DBusError)
        throw uiError("platform_unavailable", "The compositor's display configuration is unavailable.");
      throw e;
    } finally {
      session.disconnect();
    }
  }

  async health(): Promise<Record<string, string | number | boolean | null>> {
    const shell = await this.compositorPid();
    return {
      wayland_display: process.env.WAYLAND_DISPLAY ?? null,
      compositor_pid_known: shell !== null,
      window_positions: "shared windows only (window stream against monitor stream)",
      focus_known: false,
      shared_windows: this.portals.size,
      keys: "refused",
    };
  }

  async restoreWindow(): Promise<void> {
    throw uiError(
      "pattern_not_supported",
      "This Wayland compositor offers clients no way to restore a window.",
    );
  }

  async activateWindow(): Promise<void> {
    throw uiError(
      "pattern_not_supported",
      "This Wayland compositor offers clients no way to activate a window.",
    );
  }

  async closeWindow(): Promise<void> {
    throw uiError(
      "pattern_not_supported",
      "This Wayland compositor offers clients no way to close a window.",
    );
  }

  /**
   * Identity alone (the listing just made, from the bus daemon's credentials and /proc) is all a
   * semantic action needs. Keys need the focus, which this compositor does not tell: refused.
   * Points and regions need the window shared through the portal: a region is read from the
   * window stream alone (it holds nothing else); each point must be on the window's own pixels
   * and show the
   * window's pixels around it on the monitor stream, at exactly one place. Wayland has no
   * client grabs of the pointer or keyboard, so there is none to refuse.
   */
  async confirmLive(target: WindowInfo, check: LiveCheck): Promise<LiveProof> {
    if (check.focus) throw uiError("not_foreground", NO_FOCUS_PROOF);
    if (check.points.length === 0 && check.region === null) return NO_PROOF;
    const b = this.portals.get(target.hwnd);
    if (!b) throw uiError("platform_unavailable", NOT_SHARED);
    if (check.region) {
      // A frame must exist; the capture paints black whatever the stream does not cover.
      await this.portals.windowFrame(b);
      this.cleared = { hwnd: target.hwnd, at: Date.now() };
    }
    const points = [];
    for (const p of check.points) {
      const fact = await this.portals.provePoint(b, p.x, p.y);
      points.push({ x: p.x, y: p.y, path: [target.hwnd, offsetTag(fact.dx, fact.dy)], grabOwner: null });
    }
    if (points.length > 0) this.pointerTarget = target.hwnd;
    return { focus: null, points };
  }

  /** The window the last region check cleared, if it was moments ago. */
  clearedForCapture(maxAgeMs: number): string | null {
    const c = this.cleared;
    return c && Date.now() - c.at <= maxAgeMs ? c.hwnd : null;
  }

  /** The window the last point check cleared. */
  clearedForPointer(): string | null {
    return this.pointerTarget;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.last = null;
  }
}

/** The monitors' current mode sizes by connector, from GetCurrentState's monitors. */
function currentModes(monitors: unknown): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  if (!Array.isArray(monitors)) return out;
  for (const m of monitors) {
    if (!Array.isArray(m) || !Array.isArray(m[0]) || !Array.isArray(m[1])) continue;
    const connector = m[0][0];
    for (const mode of m[1]) {
      if (!Array.isArray(mode)) continue;
      const props = mode[6] as Record<string, { value?: unknown }> | undefined;
      if (
        props?.["is-current"]?.value === true &&
        typeof mode[1] === "number" &&
        typeof mode[2] === "number"
      ) {
        if (typeof connector === "string") out.set(connector, [mode[1], mode[2]]);
      }
    }
  }
  return out;
}

/** GetCurrentState's (serial, monitors, logical_monitors, properties) → the screen's box. */
export function screenBox(body: unknown[]): Rect | null {
  const modes = currentModes(body[1]);
  const props = body[3] as Record<string, { value?: unknown }> | undefined;
  // layout-mode 1 = logical (sizes divided by the scale), 2 = physical.
  const logical = props?.["layout-mode"]?.value === 1;
  let box: Rect | null = null;
  const logicals = body[2];
  if (!Array.isArray(logicals)) return null;
  for (const l of logicals) {
    if (!Array.isArray(l)) continue;
    const [x, y, scale, transform, , specs] = l as unknown[];
    if (typeof x !== "number" || typeof y !== "number" || !Array.isArray(specs)) continue;
    const spec = specs[0];
    const size = Array.isArray(spec) && typeof spec[0] === "string" ? modes.get(spec[0]) : undefined;
    if (!size) continue;
    let [w, h] = size;
    if (logical && typeof scale === "number" && scale > 0) {
      w = Math.round(w / scale);
      h = Math.round(h / scale);
    }
    if (typeof transform === "number" && transform % 2 === 1) [w, h] = [h, w];
    box = box
      ? [Math.min(box[0], x), Math.min(box[1], y), Math.max(box[2], x + w), Math.max(box[3], y + h)]
      : [x, y, x + w, y + h];
  }
  return box;
}
