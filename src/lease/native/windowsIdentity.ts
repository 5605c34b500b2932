import koffi from "koffi";
import {
  CloseHandle,
  GetCurrentProcess,
  LocalFree,
  OpenProcess,
  PROCESS_QUERY_LIMITED_INFORMATION,
  ProcessIdToSessionId,
  type Ptr,
  validHandle,
} from "./kernel32.js";

/**
 * Who a Windows process is, read from the OS through koffi: the user SID of its token and its
 * Terminal Services session. The lease scope (endpoint.ts) is derived from our own; the broker
 * checks every client's and the client checks the pipe server's. Loaded only by the broker,
 * the manager CLI and the lease link worker, never by the supervisor thread.
 */

const adv = koffi.load("advapi32.dll");

const OpenProcessToken = adv.func(
  "int __stdcall OpenProcessToken(void *h, uint32_t access, _Out_ void **token)",
);
const GetTokenInformation = adv.func(
  "int __stdcall GetTokenInformation(void *token, int cls, void *buf, uint32_t len, _Out_ uint32_t *ret)",
);
const ConvertSidToStringSidW = adv.func("int __stdcall ConvertSidToStringSidW(void *sid, _Out_ void **str)");
const GetSecurityInfo = adv.func(
  "uint32_t __stdcall GetSecurityInfo(void *h, int type, uint32_t info, _Out_ void **owner, void *group, void *dacl, void *sacl, _Out_ void **sd)",
);

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

function sidString(sidPtr: Ptr): string | null {
  const str: Ptr[] = [null];
  if (!ConvertSidToStringSidW(sidPtr, str) || !validHandle(str[0] ?? null)) return null;
  try {
    const sid: string = koffi.decode.string16(str[0]);
    return /^S-1-[0-9-]+$/.test(sid) ? sid : null;
  } finally {
    LocalFree(str[0]);
  }
}

/** User SID and Terminal Services session, both read from one token of one process handle. */
function tokenIdentity(process: bigint): WindowsIdentity | null {
  const tok: Ptr[] = [null];
  if (!OpenProcessToken(process, TOKEN_QUERY, tok) || !validHandle(tok[0] ?? null)) return null;
  try {
    const buf = koffi.alloc("uint8_t", TOKEN_USER_BUF);
    try {
      const len = [0];
      if (!GetTokenInformation(tok[0], TOKEN_USER_CLASS, buf, TOKEN_USER_BUF, len)) return null;
      // TOKEN_USER starts with SID_AND_ATTRIBUTES { PSID Sid; DWORD Attributes }.
      const sid = sidString(koffi.decode(buf, "void *"));
      if (!sid) return null;
      if (!GetTokenInformation(tok[0], TOKEN_SESSION_ID_CLASS, buf, 4, len)) return null;
      return { sid, session: String(koffi.decode(buf, "uint32_t")) };
    } finally {
      koffi.free(buf);
    }
  } finally {
    CloseHandle(tok[0]);
  }
}

/** The user SID and session of process `pid` from one handle, or null when it cannot be read. */
export function processIdentity(pid: number): WindowsIdentity | null {
  const proc: Ptr = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
  if (!validHandle(proc)) return null;
  try {
    return tokenIdentity(proc);
  } finally {
    CloseHandle(proc);
  }
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
export function objectOwnerSid(handle: bigint): string | null {
  const owner: Ptr[] = [null];
  const sd: Ptr[] = [null];
  if (
    GetSecurityInfo(handle, SE_KERNEL_OBJECT, OWNER_SECURITY_INFORMATION, owner, null, null, null, sd) !== 0
  )
    return null;
  try {
    return validHandle(owner[0] ?? null) ? sidString(owner[0] ?? null) : null;
  } finally {
    if (validHandle(sd[0] ?? null)) LocalFree(sd[0]);
  }
}

/** The Terminal Services session of process `pid` (decimal), or null. */
export function processSessionId(pid: number): string | null {
  const sess = [0];
  return ProcessIdToSessionId(pid, sess) ? String(sess[0]) : null;
}

let own: WindowsIdentity | null = null;

/** This process's own user SID and session; cached (neither changes for a process's life). */
export function currentWindowsIdentity(): WindowsIdentity {
  if (own) return own;
  // The pseudo-handle of GetCurrentProcess needs no CloseHandle.
  const sid = tokenIdentity(GetCurrentProcess() as bigint)?.sid;
  const session = processSessionId(process.pid);
  if (!sid || !session) throw new Error("The Windows user SID or session id could not be read.");
  own = { sid, session };
  return own;
}
