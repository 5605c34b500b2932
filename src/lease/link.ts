import { createConnection } from "node:net";
import { isUiError, uiError } from "../shared/errors.js";
import { checkRuntimeDir, type LeaseScope, resolveLinuxScope } from "./endpoint.js";
import type { LeaseLink, LinkHandlers, LinkOpener, OpenLinkOptions } from "./linkPort.js";

export type { LeaseLink, LinkHandlers, LinkOpener, OpenLinkOptions } from "./linkPort.js";

/**
 * One verified byte stream to this scope's lease broker, for the LeaseClient.
 *
 * Linux: a Unix socket; the endpoint's folder is checked (ours, 0700) before connecting, so
 * nobody else could have put a socket there.
 * Windows (windowsPipeLink.ts): named pipes share one machine-wide namespace, so anyone could
 * create the pipe first. The pipe is opened by a worker thread (native code stays off the
 * supervisor thread) with SECURITY_IDENTIFICATION (a server cannot act as us), and the server
 * process's user SID and session must equal the scope's before a byte is written.
 */

export async function createLinkOpener(scope: LeaseScope | null): Promise<LinkOpener> {
  const platform = scope?.platform ?? (process.platform === "win32" ? "win32" : "linux");
  if (platform === "win32") {
    const { WindowsPipeLinkHost } = await import("./windowsPipeLink.js");
    return new WindowsPipeLinkHost();
  }
  return { open: openUnixSocketLink, prepare: () => {}, dispose: async () => {} };
}

function openUnixSocketLink(
  opts: OpenLinkOptions,
  handlers: LinkHandlers,
): Promise<{ link: LeaseLink; scope: LeaseScope }> {
  return new Promise((resolve, reject) => {
    let scope: LeaseScope;
    try {
      scope = opts.scope ?? resolveLinuxScope(opts.env);
      // Never talk to an endpoint in a folder someone else could have put it in.
      if (scope.runtime_dir) checkRuntimeDir(scope.runtime_dir, process.getuid?.() ?? -1);
    } catch (e) {
      reject(isUiError(e) ? e : uiError("broker_unavailable"));
      return;
    }
    const socket = createConnection(scope.endpoint);
    let open = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(uiError("broker_unavailable", "The lease broker did not accept the connection in time."));
    }, opts.timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      open = true;
      // Pending requests keep the process alive through their timers; an idle link does not.
      socket.unref();
      resolve({
        scope,
        link: {
          write: (frame) => {
            if (!socket.destroyed) socket.write(frame);
          },
          destroy: () => socket.destroy(),
        },
      });
    });
    socket.on("data", (chunk: Buffer) => handlers.data(chunk));
    socket.on("error", () => {
      clearTimeout(timer);
      reject(uiError("broker_unavailable"));
    });
    socket.on("close", () => {
      clearTimeout(timer);
      reject(uiError("broker_unavailable"));
      if (open) handlers.closed();
    });
  });
}
