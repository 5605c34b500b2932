import { isUiError } from "../../shared/errors.js";
import type {
  PortalSession as GateSession,
  PortalAnswer,
  PortalPort,
} from "../../supervisor/consent/portalGate.js";
import { PortalSession } from "./portalSession.js";

/**
 * The second consent gate's port on GNOME: one xdg-desktop-portal RemoteDesktop session with one
 * window source, keyboard and pointer (the person picks the window in xdg-desktop-portal-gnome's
 * dialog and allows control). No restore token is asked for: every session starts with the
 * person's dialog. The PortalGate bounds the picker with the consent timeout and closes it when
 * it gives up; the session's own deadline is only a backstop after that.
 */

/** How much later than the gate's own deadline the session gives up by itself. */
const BACKSTOP_MS = 5000;

export interface WaylandGateSession extends GateSession {
  /** The portal session the grant was given under (input and window streams go through it). */
  readonly portal: PortalSession;
}

export function createWaylandPortalPort(
  env: Record<string, string | undefined>,
  timeoutMs: number,
): PortalPort {
  return {
    mechanism: "xdg-desktop-portal RemoteDesktop with one window source (the compositor's dialog)",
    async open(_req, signal): Promise<PortalAnswer> {
      if (!env.DBUS_SESSION_BUS_ADDRESS) throw new Error("no session bus");
      let portal: PortalSession;
      try {
        portal = await PortalSession.open({
          devices: { keyboard: true, pointer: true },
          sources: { window: true, monitor: false },
          timeoutMs: timeoutMs + BACKSTOP_MS,
          signal,
        });
      } catch (e) {
        if (isUiError(e) && e.code === "consent_denied") return { answer: "declined" };
        throw e;
      }
      const session: WaylandGateSession = {
        portal,
        close: () => {
          void portal.close();
        },
        onEnd: (listener) => {
          portal.onClosed((why) => {
            if (why === "closed_by_us") return;
            listener(why === "bus_lost" ? "bus_lost" : "closed");
          });
        },
      };
      return { answer: "allowed", session };
    },
  };
}
