import * as w from "./ffi.js";
import { withProcess } from "./identity.js";

/**
 * Who a Windows process runs as, read from the OS: the user SID of its token and its Terminal
 * Services session, and the owner SID of a kernel object. The lease scope (lease/endpoint.ts)
 * is derived from our own; the lease broker checks every client's and the client checks the
 * pipe server's. Every handle opened here is closed in a finally block.
 */

const TOKEN_QUERY = 0x8;
const TOKEN_USER_CLASS = 1;
const TOKEN_SESSION_ID_CLASS = 12;
const SE_KERNEL_OBJECT = 6;
const OWNER_SECURITY_INFORMATION = 0x1;
// TOKEN_USER = SID_AND_ATTRIBUTES + the SID itself (at most 68 bytes): 512 is plenty.
const TOKEN_USER_BUF = 512;

export interface WindowsIdentity {
  /** The token's user SID, e.g. "S-1-5-21-…-1001". */
  sid: string;
  /** The Terminal Services session id, decimal. */
  session: string;
}

/** A pointer koffi handed back through an out parameter, unless it is NULL. */
function isPointer(p: w.Mem): boolean {
  return p !== null && p !== undefined && p !== 0 && p !== 0n;
}

function sidString(sidPtr: w.Mem): string | null {
  const str: w.Mem[] = [null];
  if (!w.ConvertSidToStringSidW(sidPtr, str) || !isPointer(str[0])) return null;
  try {
    const sid = w.koffi.decode.string16(str[0]);
    return /^S-1-[0-9-]+$/.test(sid) ? sid : null;
  } finally {
    w.LocalFree(str[0]);
  }
}

/** User SID and Terminal Services session, both read from one token of one process handle. */
function tokenIdentity(process: number): WindowsIdentity | null {
  const tok = Buffer.alloc(8);
  if (!w.OpenProcessToken(process, TOKEN_QUERY, tok)) return null;
  const token = Number(tok.readBigInt64LE(0));
  try {
    const info = Buffer.alloc(TOKEN_USER_BUF);
    const len = Buffer.alloc(4);
    if (!w.GetTokenInformation(token, TOKEN_USER_CLASS, info, TOKEN_USER_BUF, len)) return null;
    // TOKEN_USER starts with SID_AND_ATTRIBUTES { PSID Sid; DWORD Attributes }: the SID lives inside `info`.
    const sid = sidString(info.readBigUInt64LE(0));
    if (!sid) return null;
    const session = Buffer.alloc(4);
    if (!w.GetTokenInformation(token, TOKEN_SESSION_ID_CLASS, session, 4, len)) return null;
    return { sid, session: String(session.readUInt32LE(0)) };
  } finally {
    w.CloseHandle(token);
  }
}

/** The user SID and session of process `pid` from one handle, or null when it cannot be read. */
export function processIdentity(pid: number): WindowsIdentity | null {
  return withProcess(pid, tokenIdentity);
}

/** The user SID of process `pid`, or null. */
export function processUserSid(pid: number): string | null {
  return processIdentity(pid)?.sid ?? null;
}

/**
 * The owner SID of a kernel object (here: a pipe the client opened), or null. Unlike a process
 * id, an owner cannot be borrowed: only a process of that user (or an administrator) can make
 * an object owned by that user's SID.
 */
export function objectOwnerSid(handle: number): string | null {
  const owner: w.Mem[] = [null];
  const sd: w.Mem[] = [null];
  if (
    w.GetSecurityInfo(handle, SE_KERNEL_OBJECT, OWNER_SECURITY_INFORMATION, owner, null, null, null, sd) !== 0
  )
    return null;
  try {
    return isPointer(owner[0]) ? sidString(owner[0]) : null;
  } finally {
    if (isPointer(sd[0])) w.LocalFree(sd[0]);
  }
}

/** The Terminal Services session of process `pid` (decimal), or null. */
export function processSessionId(pid: number): string | null {
  const sess = Buffer.alloc(4);
  return w.ProcessIdToSessionId(pid, sess) ? String(sess.readUInt32LE(0)) : null;
}

let own: WindowsIdentity | null = null;

/** This process's own user SID and session; cached (neither changes for a process's life). */
export function currentWindowsIdentity(): WindowsIdentity {
  if (own) return own;
  // The pseudo-handle of GetCurrentProcess needs no CloseHandle.
  const sid = tokenIdentity(w.GetCurrentProcess())?.sid;
  const session = processSessionId(process.pid);
  if (!sid || !session) throw new Error("The Windows user SID or session id could not be read.");
  own = { sid, session };
  return own;
}
