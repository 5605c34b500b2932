import { randomUUID } from "node:crypto";
import { isUiError, uiError } from "../../shared/errors.js";
import type { PortalSharing, SharedStream } from "../../shared/platform.js";
import { PortalSession, type PortalStream } from "./portalSession.js";
import type { SharedSource } from "./portalStreams.js";

/**
 * The consent side's portal sessions inside a Wayland worker. The input worker opens them (the
 * portal accepts input only from the bus connection that created a session, so the injecting
 * worker must hold it) and binds each to the window the person was asked about; the capture
 * worker is handed the same streams to read frames from (a PipeWire node is read by its id) and
 * drops them when the supervisor says the session ended. Sessions are keyed by a random id, so
 * two clients' sessions never mix up. Nothing is persisted: no restore token is asked for.
 */

interface Held {
  hwnd: string;
  /** The session itself (input worker), or null for streams handed over (capture worker). */
  session: PortalSession | null;
  /** Ends a handed-over source (its frame readers stop). */
  end: () => void;
}

export function createPortalSharing(
  bind: (hwnd: string, source: PortalSession | SharedSource) => void,
  unbind: (hwnd: string) => void,
): PortalSharing {
  const held = new Map<string, Held>();

  const forget = (id: string): Held | null => {
    const h = held.get(id);
    if (!h) return null;
    held.delete(id);
    unbind(h.hwnd);
    h.end();
    return h;
  };

  return {
    async open(hwnd, timeoutMs, signal) {
      const session = await askPerson(timeoutMs, signal);
      if (!session) return { answer: "declined" };
      const id = randomUUID();
      held.set(id, { hwnd, session, end: () => undefined });
      session.onClosed(() => {
        if (held.get(id)?.session === session) forget(id);
      });
      try {
        bind(hwnd, session);
      } catch (e) {
        forget(id);
        await session.close();
        throw e;
      }
      return { answer: "allowed", session_id: id, streams: session.streams.map(toShared) };
    },

    waitEnd(id, signal) {
      const session = held.get(id)?.session;
      if (!session) return Promise.resolve("closed_by_us");
      return new Promise((resolve, reject) => {
        const onAbort = () => reject(uiError("cancelled"));
        signal.addEventListener("abort", onAbort, { once: true });
        session.onClosed((why) => {
          signal.removeEventListener("abort", onAbort);
          resolve(why);
        });
      });
    },

    share(hwnd, id, streams) {
      const { source, end } = handedOver(streams);
      bind(hwnd, source);
      held.set(id, { hwnd, session: null, end });
    },

    async close(id) {
      const h = forget(id);
      if (!h) return false;
      await h.session?.close();
      return true;
    },

    async dispose() {
      for (const id of [...held.keys()])
        await forget(id)
          ?.session?.close()
          .catch(() => undefined);
    },
  };
}

/** The portal dialog for one window and the monitor; null when the person declined it. */
async function askPerson(timeoutMs: number, signal: AbortSignal): Promise<PortalSession | null> {
  try {
    return await PortalSession.open({
      devices: { keyboard: true, pointer: true },
      sources: { window: true, monitor: true },
      timeoutMs,
      signal,
    });
  } catch (e) {
    if (isUiError(e) && e.code === "consent_denied") return null;
    throw e;
  }
}

/** Streams handed over by the input worker, as a source that is open until `end`. */
function handedOver(streams: readonly SharedStream[]): { source: SharedSource; end: () => void } {
  const listeners = new Set<() => void>();
  let open = true;
  const source: SharedSource = {
    streams: streams.map(fromShared),
    get isOpen() {
      return open;
    },
    onClosed(fn) {
      if (!open) {
        fn();
        return () => undefined;
      }
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
  };
  const end = () => {
    if (!open) return;
    open = false;
    for (const fn of [...listeners]) fn();
    listeners.clear();
  };
  return { source, end };
}

function toShared(s: PortalStream): SharedStream {
  return {
    node: s.node,
    source_type: s.sourceType,
    size: s.size ? [s.size[0], s.size[1]] : null,
    position: s.position ? [s.position[0], s.position[1]] : null,
  };
}

function fromShared(s: SharedStream): PortalStream {
  return { node: s.node, sourceType: s.source_type, size: s.size, position: s.position };
}
