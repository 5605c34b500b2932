import { chmodSync, closeSync, lstatSync, openSync, unlinkSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { peerCred, socketFd } from "../os/linux/peerCred.js";
import { checkRuntimeDir, type LeaseScope } from "./endpoint.js";
import { clockTicksPerSecond, tryLockExclusive } from "./native/linux.js";
import {
  type AcceptFn,
  AlreadyRunningError,
  type BrokerTransport,
  MAX_PENDING_OUTPUT,
  type RefusalReason,
  type ScopeMarker,
} from "./transport.js";

export { clockTicksPerSecond };

/** flock(LOCK_EX|LOCK_NB) on the scope's lock file, held open until release (or process exit). */
export function acquireLinuxMarker(scope: LeaseScope, uid: number): ScopeMarker {
  if (!scope.runtime_dir) throw new Error("no runtime dir");
  checkRuntimeDir(scope.runtime_dir, uid);
  const fd = openSync(scope.marker, "a", 0o600);
  if (!tryLockExclusive(fd)) {
    closeSync(fd);
    throw new AlreadyRunningError();
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      closeSync(fd);
    },
  };
}

/**
 * Listens on the scope's Unix socket (0600, in the checked 0700 runtime dir). Every accepted
 * connection's SO_PEERCRED uid must equal ours; otherwise it is closed before any byte is read.
 * Call only while holding the scope marker: a leftover socket file is then stale and replaced.
 */
export async function listenLinux(
  scope: LeaseScope,
  uid: number,
  accept: AcceptFn,
  refused: (reason: RefusalReason, peer: { pid?: number; uid?: number }) => void,
): Promise<BrokerTransport> {
  const path = scope.endpoint;
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
  } catch {
    // Nothing there.
  }
  const sockets = new Set<Socket>();
  const server = createServer({ allowHalfOpen: false, pauseOnConnect: true }, (socket) => {
    const cred = peerCred(socketFd(socket));
    if (!cred) {
      refused("peer_unknown", {});
      socket.destroy();
      return;
    }
    if (cred.uid !== uid) {
      refused("other_user", { pid: cred.pid, uid: cred.uid });
      socket.destroy();
      return;
    }
    sockets.add(socket);
    const handlers = accept(
      { pid: cred.pid > 0 ? cred.pid : null },
      {
        write: (frame) => {
          if (socket.destroyed) return;
          socket.write(frame);
          if (socket.writableLength > MAX_PENDING_OUTPUT) socket.destroy();
        },
        close: () => socket.destroy(),
      },
    );
    socket.on("data", (chunk: Buffer) => handlers.data(chunk));
    socket.on("error", () => socket.destroy());
    socket.on("close", () => {
      sockets.delete(socket);
      handlers.closed();
    });
    socket.resume();
  });
  server.maxConnections = 512;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      resolve();
    });
  });
  chmodSync(path, 0o600);
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => {
          try {
            unlinkSync(path);
          } catch {
            // Already gone.
          }
          resolve();
        });
      }),
  };
}
