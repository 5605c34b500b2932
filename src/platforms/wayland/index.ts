import { libc } from "../../os/linux/libc.js";
import { setClockTicks } from "../../os/linux/proc.js";
import { uiError } from "../../shared/errors.js";
import type {
  A11ySession,
  AccessibilityPort,
  CapturePort,
  InputPort,
  Platform,
  WindowInfo,
} from "../../shared/platform.js";
import { AtspiBus } from "../x11/atspiBus.js";
import { AtspiSession } from "../x11/atspiSession.js";
import { UNPROVABLE, WaylandDesktop } from "./desktop.js";

/**
 * The Wayland platform (GNOME) for one worker: windows, process identity, accessibility trees
 * and semantic actions over AT-SPI, as on X11. Screenshots and pointer or key input are refused:
 * on this compositor a client outside gnome-shell's allow-list cannot learn where a window is,
 * what covers it or which window has the focus, and mutter's own screen-cast and remote-desktop
 * APIs accept any program of the user without asking anyone (docs/wayland.md, measured by
 * test/wayland/attacks.test.ts), so no effect of those kinds could be verified.
 */
export async function createWaylandPlatform(_opts: {
  workerKind: "capture" | "input" | "uia" | "other";
}): Promise<Platform> {
  if (!process.env.WAYLAND_DISPLAY) throw uiError("platform_unavailable", "No Wayland display is set.");
  // /proc start times are in clock ticks (sysconf _SC_CLK_TCK = 2).
  setClockTicks(Number(libc().sysconf(2)));
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
  const desktop = new WaylandDesktop(bus);
  let disposed = false;

  const refuse = (): Promise<never> => Promise.reject(uiError("platform_unavailable", UNPROVABLE));
  const capture: CapturePort = { captureScreen: refuse };
  const input: InputPort = {
    moveTo: refuse,
    buttonDown: refuse,
    buttonUp: refuse,
    wheel: refuse,
    keyDown: refuse,
    keyUp: refuse,
    typeText: refuse,
  };
  const accessibility: AccessibilityPort = {
    openSession: async (window: WindowInfo): Promise<A11ySession> => {
      if (disposed) throw uiError("platform_unavailable");
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
  return {
    desktop,
    capture,
    input,
    accessibility,
    dispose: async () => {
      if (disposed) return;
      disposed = true;
      await desktop.dispose();
      const p = busPromise;
      busPromise = null;
      await p?.then((b) => b.disconnect()).catch(() => {});
    },
  };
}
