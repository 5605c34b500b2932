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
