import { createConnection } from "node:net";
import { Worker } from "node:worker_threads";
import { isUiError, uiError } from "../shared/errors.js";
import { checkRuntimeDir, type Env, type LeaseScope, resolveLinuxScope } from "./endpoint.js";
import { FromPipeLinkSchema, type PipeLinkWorkerData, type ToPipeLink } from "./linkMessages.js";

/**
 * One verified byte stream to this scope's lease broker, for the LeaseClient.
 *
 * Linux: a Unix socket; the endpoint's folder is checked (ours, 0700) before connecting, so
 * nobody else could have put a socket there.
 * Windows: named pipes share one machine-wide namespace, so anyone could create the pipe
 * first. The pipe is opened by a worker thread (native code stays off the supervisor thread)
 * with SECURITY_IDENTIFICATION (a server cannot act as us), and the server process's user SID
 * and session must equal the scope's before a byte is written.
 */

export interface LinkHandlers {
  data(chunk: Buffer): void;
  /** Called once, when the link ends for any reason after it was opened. */
  closed(): void;
}

export interface LeaseLink {
  write(frame: Buffer): void;
  destroy(): void;
}

export interface OpenLinkOptions {
  /** null: this process's own scope. */
  scope: LeaseScope | null;
  env: Env;
  timeoutMs: number;
}

export async function openLeaseLink(
  opts: OpenLinkOptions,
  handlers: LinkHandlers,
): Promise<{ link: LeaseLink; scope: LeaseScope }> {
  const platform = opts.scope?.platform ?? (process.platform === "win32" ? "win32" : "linux");
  if (platform === "win32") return openWindowsPipeLink(opts, handlers);
  return openUnixSocketLink(opts, handlers);
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

/** How long a closing pipe link worker may take before it is terminated. */
const WORKER_CLOSE_GRACE_MS = 2000;

function openWindowsPipeLink(
  opts: OpenLinkOptions,
  handlers: LinkHandlers,
): Promise<{ link: LeaseLink; scope: LeaseScope }> {
  return new Promise((resolve, reject) => {
    const data: PipeLinkWorkerData = {
      scope: opts.scope,
      env: { LOCALAPPDATA: opts.env.LOCALAPPDATA, USERPROFILE: opts.env.USERPROFILE },
      timeout_ms: opts.timeoutMs,
    };
    let worker: Worker;
    try {
      worker = new Worker(new URL("./native/windowsPipeLinkWorker.js", import.meta.url), {
        workerData: data,
        stdout: true,
        stderr: true,
      });
    } catch {
      reject(uiError("broker_unavailable", "The lease link could not be started."));
      return;
    }
    let state: "opening" | "open" | "ended" = "opening";
    const end = () => {
      if (state === "ended") return;
      const wasOpen = state === "open";
      state = "ended";
      clearTimeout(timer);
      if (wasOpen) handlers.closed();
      else reject(uiError("broker_unavailable"));
    };
    const post = (m: ToPipeLink) => {
      if (state !== "ended") worker.postMessage(m);
    };
    const destroy = () => {
      post({ t: "close" });
      end();
      setTimeout(() => void worker.terminate(), WORKER_CLOSE_GRACE_MS).unref();
    };
    const timer = setTimeout(() => {
      if (state !== "opening") return;
      state = "ended";
      void worker.terminate();
      reject(uiError("broker_unavailable", "The lease broker did not accept the connection in time."));
    }, opts.timeoutMs + 500);
    worker.on("message", (raw: unknown) => {
      const parsed = FromPipeLinkSchema.safeParse(raw);
      if (!parsed.success) {
        destroy();
        return;
      }
      const m = parsed.data;
      if (m.t === "open" && state === "opening") {
        state = "open";
        clearTimeout(timer);
        // An idle link must not keep the process alive (pending requests have their own timers).
        worker.unref();
        resolve({
          scope: m.scope,
          link: { write: (frame) => post({ t: "write", frame: new Uint8Array(frame) }), destroy },
        });
      } else if (m.t === "refused" && state === "opening") {
        state = "ended";
        clearTimeout(timer);
        reject(uiError("broker_unavailable", m.message));
      } else if (m.t === "data" && state === "open") {
        handlers.data(Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength));
      } else if (m.t === "closed") {
        end();
      }
    });
    worker.on("error", end);
    worker.on("exit", end);
  });
}
