import { uiError } from "../../shared/errors.js";
import type { Workers } from "../supervisor.js";
import type { PortalAnswer, PortalEnd, PortalPort, PortalSession } from "./portalGate.js";

/**
 * The second consent gate's port on GNOME: an xdg-desktop-portal RemoteDesktop session with one
 * window and one monitor source, keyboard and pointer, opened by the input worker (the portal
 * takes input only from the bus connection that created a session) and bound there to the
 * window the person was asked about; its streams are handed to the capture worker. The
 * PortalGate bounds the dialog by the consent timeout and closes it when it gives up; the
 * worker's own deadline is only a backstop after that. No restore token is asked for.
 */

/** How much later than the gate's own deadline the session gives up by itself. */
const BACKSTOP_MS = 5000;
/** The longest one wait for a session's end may last; a session still open then is ended. */
const WAIT_END_MS = 24 * 3600_000;

export function createWorkerPortalPort(workers: Workers, timeoutMs: number): PortalPort {
  const closeBoth = (id: string) => {
    for (const w of [workers.capture, workers.input])
      void w.call("portal.close", { session_id: id }, { deadlineMs: 10_000 }).catch(() => undefined);
  };
  return {
    mechanism: "xdg-desktop-portal RemoteDesktop: one window and one monitor, pointer and keyboard",
    async open(req, signal): Promise<PortalAnswer> {
      const r = await workers.input.call(
        "portal.open",
        { hwnd: req.hwnd, timeout_ms: timeoutMs + BACKSTOP_MS },
        { deadlineMs: timeoutMs + 2 * BACKSTOP_MS, signal },
      );
      if (r.answer === "declined") return { answer: "declined" };
      const id = r.session_id;
      try {
        await workers.capture.call(
          "portal.share",
          { hwnd: req.hwnd, session_id: id, streams: r.streams },
          { deadlineMs: 10_000 },
        );
      } catch {
        closeBoth(id);
        throw uiError("platform_unavailable", "The shared window could not be handed to the capture worker.");
      }
      let ended = false;
      const session: PortalSession = {
        close: () => {
          ended = true;
          closeBoth(id);
        },
        onEnd: (listener: (why: PortalEnd) => void) => {
          workers.input.call("portal.wait_end", { session_id: id }, { deadlineMs: WAIT_END_MS }).then(
            ({ why }) => {
              if (ended || why === "closed_by_us") return;
              ended = true;
              closeBoth(id);
              listener(why === "bus_lost" ? "bus_lost" : "closed");
            },
            () => {
              // The input worker is gone (its bus connection, and so the session, with it) or
              // the wait outlived its bound: either way the session is over.
              if (ended) return;
              ended = true;
              closeBoth(id);
              listener("bus_lost");
            },
          );
        },
      };
      return { answer: "allowed", session };
    },
  };
}
