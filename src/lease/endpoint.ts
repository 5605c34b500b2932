import { createHash } from "node:crypto";
import { lstatSync } from "node:fs";
import { homedir } from "node:os";
import { join, win32 } from "node:path";
import { uiError } from "../shared/errors.js";

/**
 * Where the lease broker of one scope (one user in one interactive sign-in session) listens.
 *
 * Linux: a Unix socket `uiinspect-lease-<hash>.sock` in $XDG_RUNTIME_DIR, next to the lock
 * file `uiinspect-lease-<hash>.lock` the broker holds with flock(LOCK_EX) for its whole life.
 * The runtime directory must be a real directory owned by this uid with mode 0700, else
 * nothing is created there and nothing is connected to.
 * Windows: a named pipe `\\.\pipe\uiinspect-lease-<hash>`; the per-scope marker is the named
 * mutex `Local\uiinspect-lease-<hash>`.
 *
 * hash = first 32 hex of SHA-256("uiinspect-lease\0<platform>\0<uid or SID>\0<session id>").
 * This module is pure Node; this process's own scope is resolved in ./scope.ts (native on Windows).
 */

export interface LeaseScope {
  platform: "linux" | "win32";
  /** Linux uid (decimal) or Windows user SID. */
  user: string;
  /** Linux: "display:<DISPLAY>" or "xdg:<XDG_SESSION_ID>"; Windows: "ts:<session id>". */
  session_id: string;
  /** The session string a ProcessInstance in this scope carries (identity.ts `session`). */
  instance_session: string;
  /** 32 hex. */
  hash: string;
  /** Socket path (Linux) or pipe name (Windows). */
  endpoint: string;
  /** Linux lock file; Windows mutex name. */
  marker: string;
  /** Linux: the checked runtime directory; Windows: null. */
  runtime_dir: string | null;
  /** The broker's audit file. */
  audit_path: string;
}

export type Env = Record<string, string | undefined>;

export function scopeHash(platform: string, user: string, sessionId: string): string {
  return createHash("sha256")
    .update(`uiinspect-lease\u0000${platform}\u0000${user}\u0000${sessionId}`)
    .digest("hex")
    .slice(0, 32);
}

/**
 * The `session` a Linux/X11 ProcessInstance carries: "<DISPLAY>:<uid>" ("display:uid" of
 * identity.ts), e.g. ":0:1000". The x11 platform must produce exactly this string.
 */
export function linuxInstanceSession(display: string, uid: number): string {
  return `${display}:${uid}`;
}

/** Refuses (broker_unavailable) unless `dir` is a real directory owned by `uid` with mode 0700. */
export function checkRuntimeDir(dir: string, uid: number): void {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(dir);
  } catch {
    throw uiError("broker_unavailable", "XDG_RUNTIME_DIR does not exist.");
  }
  if (!st.isDirectory()) throw uiError("broker_unavailable", "XDG_RUNTIME_DIR is not a directory.");
  if (st.uid !== uid) throw uiError("broker_unavailable", "XDG_RUNTIME_DIR is not owned by this user.");
  if ((st.mode & 0o777) !== 0o700) throw uiError("broker_unavailable", "XDG_RUNTIME_DIR is not mode 0700.");
}

export function linuxAuditPath(env: Env): string {
  const state = env.XDG_STATE_HOME?.startsWith("/")
    ? env.XDG_STATE_HOME
    : join(env.HOME || homedir(), ".local", "state");
  return join(state, "uiinspect-mcp", "audit", "unattended-approval.jsonl");
}

export function windowsAuditPath(env: Env): string {
  const base = env.LOCALAPPDATA || win32.join(env.USERPROFILE || homedir(), "AppData", "Local");
  return win32.join(base, "UIInspect.MCP", "audit", "unattended-approval.jsonl");
}

/** Linux scope from the environment; throws broker_unavailable when there is no usable session. */
export function resolveLinuxScope(
  env: Env = process.env,
  uid: number = process.getuid?.() ?? -1,
): LeaseScope {
  if (uid < 0) throw uiError("broker_unavailable", "The user id is unknown.");
  const display = env.DISPLAY?.trim();
  const xdgSession = env.XDG_SESSION_ID?.trim();
  let sessionId: string;
  if (display) sessionId = `display:${display}`;
  else if (xdgSession) sessionId = `xdg:${xdgSession}`;
  else
    throw uiError("broker_unavailable", "No interactive session: neither DISPLAY nor XDG_SESSION_ID is set.");
  const runtimeDir = env.XDG_RUNTIME_DIR?.trim();
  if (!runtimeDir?.startsWith("/")) throw uiError("broker_unavailable", "XDG_RUNTIME_DIR is not set.");
  checkRuntimeDir(runtimeDir, uid);
  const hash = scopeHash("linux", String(uid), sessionId);
  const endpoint = join(runtimeDir, `uiinspect-lease-${hash}.sock`);
  if (Buffer.byteLength(endpoint) > 107) throw uiError("broker_unavailable", "XDG_RUNTIME_DIR is too long.");
  return {
    platform: "linux",
    user: String(uid),
    session_id: sessionId,
    instance_session: linuxInstanceSession(display ?? "", uid),
    hash,
    endpoint,
    marker: join(runtimeDir, `uiinspect-lease-${hash}.lock`),
    runtime_dir: runtimeDir,
    audit_path: linuxAuditPath(env),
  };
}

/**
 * The Windows scope of a user SID and Terminal Services session. Pure: the identity itself is
 * read natively (os/win32/account.ts) by whoever may load native code.
 */
export function windowsScope(identity: { sid: string; session: string }, env: Env = process.env): LeaseScope {
  const { sid, session } = identity;
  if (!/^S-1-[0-9-]+$/.test(sid) || !/^\d+$/.test(session))
    throw uiError("broker_unavailable", "The Windows user SID or session id is malformed.");
  const sessionId = `ts:${session}`;
  const hash = scopeHash("win32", sid, sessionId);
  return {
    platform: "win32",
    user: sid,
    session_id: sessionId,
    instance_session: session,
    hash,
    endpoint: `\\\\.\\pipe\\uiinspect-lease-${hash}`,
    marker: `Local\\uiinspect-lease-${hash}`,
    runtime_dir: null,
    audit_path: windowsAuditPath(env),
  };
}
