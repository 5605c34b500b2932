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

const TOKEN_QUERY = 0x8;
const TOKEN_USER_CLASS = 1;
// TOKEN_USER = SID_AND_ATTRIBUTES + the SID itself (at most 68 bytes): 512 is plenty.
const TOKEN_USER_BUF = 512;

export interface WindowsIdentity {
  /** The token's user SID, e.g. "S-1-5-21-…-1001". */
  sid: string;
  /** The Terminal Services session id, decimal. */
  session: string;
}

function tokenUserSid(process: bigint): string | null {
  const tok: Ptr[] = [null];
  if (!OpenProcessToken(process, TOKEN_QUERY, tok) || !validHandle(tok[0] ?? null)) return null;
  try {
    const buf = koffi.alloc("uint8_t", TOKEN_USER_BUF);
    try {
      const len = [0];
      if (!GetTokenInformation(tok[0], TOKEN_USER_CLASS, buf, TOKEN_USER_BUF, len)) return null;
      // TOKEN_USER starts with SID_AND_ATTRIBUTES { PSID Sid; DWORD Attributes }.
      const sidPtr: Ptr = koffi.decode(buf, "void *");
      const str: Ptr[] = [null];
      if (!ConvertSidToStringSidW(sidPtr, str) || !validHandle(str[0] ?? null)) return null;
      try {
        const sid: string = koffi.decode.string16(str[0]);
        return /^S-1-[0-9-]+$/.test(sid) ? sid : null;
      } finally {
        LocalFree(str[0]);
      }
    } finally {
      koffi.free(buf);
    }
  } finally {
    CloseHandle(tok[0]);
  }
}

/** The user SID of process `pid`, or null when it cannot be opened or read. */
export function processUserSid(pid: number): string | null {
  const proc: Ptr = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
  if (!validHandle(proc)) return null;
  try {
    return tokenUserSid(proc);
  } finally {
    CloseHandle(proc);
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
  const sid = tokenUserSid(GetCurrentProcess() as bigint);
  const session = processSessionId(process.pid);
  if (!sid || !session) throw new Error("The Windows user SID or session id could not be read.");
  own = { sid, session };
  return own;
}
