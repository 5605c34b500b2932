import { uiError } from "../shared/errors.js";
import { type Env, type LeaseScope, resolveLinuxScope, windowsScope } from "./endpoint.js";

/**
 * This process's Windows scope. Loads koffi (the token's SID, ProcessIdToSessionId): call it
 * from the broker, the manager or a worker, never from the supervisor thread.
 */
export async function resolveWindowsScope(env: Env = process.env): Promise<LeaseScope> {
  let identity: { sid: string; session: string };
  try {
    const { currentWindowsIdentity } = await import("../os/win32/account.js");
    identity = currentWindowsIdentity();
  } catch {
    throw uiError("broker_unavailable", "The Windows user SID or session id could not be determined.");
  }
  return windowsScope(identity, env);
}

/** The scope of this process (Windows: native code, see resolveWindowsScope). */
export async function resolveScope(env: Env = process.env): Promise<LeaseScope> {
  if (process.platform === "win32") return resolveWindowsScope(env);
  if (process.platform === "linux") return resolveLinuxScope(env);
  throw uiError("broker_unavailable", "The lease broker supports Linux and Windows only.");
}
