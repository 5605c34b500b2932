import { libX11 } from "../../src/os/linux/xlib.js";
import type { XConnection } from "../../src/platforms/x11/xconn.js";
import type { Platform } from "../../src/shared/platform.js";
import { startSession, type X11Session } from "./support.js";

/**
 * A private X session, a platform of the test's own on it and a raw X connection, for suites
 * that count what the X server itself knows (X-Resource's clients per PID).
 */
export interface X11Desk {
  session: X11Session;
  p: Platform;
  x: XConnection;
  /** X clients the X server counts for one process. */
  clientsOf(pid: number | undefined): number;
  close(): Promise<void>;
}

export async function openX11Desk(): Promise<X11Desk> {
  const session = startSession();
  const { createX11Platform } = await import("../../src/platforms/x11/index.js");
  const { XConnection: Conn } = await import("../../src/platforms/x11/xconn.js");
  const p = await createX11Platform({ workerKind: "other" });
  const x = Conn.open();
  return {
    session,
    p,
    x,
    clientsOf: (pid) => x.clientCountsByPid().get(pid ?? 0) ?? 0,
    async close() {
      x.close();
      await p.dispose();
      session.stop();
    },
  };
}

/** The whole X server grabbed by a connection of the test's own, as another local program would. */
export interface ServerGrab {
  /** Whether the grab is still held. */
  readonly held: boolean;
  /** Ends the grab and closes its connection (once; later calls do nothing). */
  end(): void;
}

/**
 * Grabs the X server now (XGrabServer, synced): until it ends, the server answers no other
 * client, ours included. It ends after `safetyMs` whatever the test does.
 */
export function grabServer(safetyMs: number): ServerGrab {
  const xl = libX11();
  const dpy = xl.XOpenDisplay(null) as bigint;
  if (!dpy) throw new Error("no X display to grab");
  xl.XGrabServer(dpy);
  xl.XSync(dpy, 0);
  let held = true;
  const end = () => {
    if (!held) return;
    held = false;
    clearTimeout(safety);
    xl.XUngrabServer(dpy);
    xl.XSync(dpy, 0);
    xl.XCloseDisplay(dpy);
  };
  const safety = setTimeout(end, safetyMs);
  return {
    get held() {
      return held;
    },
    end,
  };
}
