import { uiError } from "../../shared/errors.js";
import { normalizeExecutablePath, type ProcessInstance } from "../../shared/identity.js";
import * as w from "./ffi.js";

/**
 * Process identity on Win32: (pid, creation time, normalized image path, session id), the one
 * resolver the backend and the lease broker (lease/native/windows.ts) share.
 * Every handle opened here is closed in a finally block.
 */

const PROCESS_QUERY_LIMITED_INFORMATION = 0x1000;
const TOKEN_QUERY = 0x0008;
const TokenIntegrityLevel = 25;
const TH32CS_SNAPPROCESS = 0x2;
const INVALID_HANDLE_VALUE = -1;
const STILL_ACTIVE = 259;

/** 100-ns intervals between 1601-01-01 and 1970-01-01. */
const EPOCH_DIFF_100NS = 116444736000000000n;

export function filetimeToIso(buf: Buffer): string {
  const ft = buf.readBigUInt64LE(0);
  const ms = Number((ft - EPOCH_DIFF_100NS) / 10000n);
  return new Date(ms).toISOString();
}

/** Runs `body` on a limited-query handle of `pid` (closed after), or null when it cannot be opened. */
export function withProcess<T>(pid: number, body: (h: number) => T): T | null {
  const h = w.OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
  if (!h) return null;
  try {
    return body(h);
  } finally {
    w.CloseHandle(h);
  }
}

function imagePath(h: number): string | null {
  const buf = Buffer.alloc(32768 * 2);
  const size = Buffer.alloc(4);
  size.writeUInt32LE(32768, 0);
  if (!w.QueryFullProcessImageNameW(h, 0, buf, size)) return null;
  return w.utf16(buf, size.readUInt32LE(0));
}

/** Creation time of a process that still runs, or null. */
function creationTime(h: number): string | null {
  const c = Buffer.alloc(8);
  const e = Buffer.alloc(8);
  const k = Buffer.alloc(8);
  const u = Buffer.alloc(8);
  if (!w.GetProcessTimes(h, c, e, k, u)) return null;
  // An exited process whose handle is still open somewhere has an exit time: no instance.
  if (e.readBigUInt64LE(0) !== 0n) return null;
  return filetimeToIso(c);
}

function sessionOf(pid: number): string | null {
  const s = Buffer.alloc(4);
  if (!w.ProcessIdToSessionId(pid, s)) return null;
  return String(s.readUInt32LE(0));
}

/**
 * Facts that never change for one process instance, cached by (pid, creation time): a reused
 * pid has another creation time, so it misses the cache. Each lookup still opens the process
 * and reads its creation time (cheap); path, session and integrity are read once.
 */
interface Known {
  instance: ProcessInstance;
  integrity: number | null;
}
const known = new Map<string, Known>();
const KNOWN_MAX = 512;

function lookup(pid: number): Known | null {
  if (pid <= 0) return null;
  return withProcess(pid, (h) => {
    const start = creationTime(h);
    if (start === null) return null;
    const key = `${pid}|${start}`;
    const hit = known.get(key);
    if (hit) return hit;
    const path = imagePath(h);
    const session = sessionOf(pid);
    if (path === null || session === null) return null;
    const k: Known = {
      instance: { pid, start_time: start, exe_path: normalizeExecutablePath(path), session },
      integrity: integrityLevel(h),
    };
    if (known.size >= KNOWN_MAX) known.clear();
    known.set(key, k);
    return k;
  });
}

/** The exact instance behind a pid, or null when it cannot be opened (gone, or protected). */
export function resolveInstance(pid: number): ProcessInstance | null {
  const k = lookup(pid);
  return k ? { ...k.instance } : null;
}

export function isAlive(instance: ProcessInstance): boolean {
  const alive = withProcess(instance.pid, (h) => {
    const code = Buffer.alloc(4);
    if (w.GetExitCodeProcess(h, code) && code.readUInt32LE(0) !== STILL_ACTIVE) return false;
    return true;
  });
  if (!alive) return false;
  const now = resolveInstance(instance.pid);
  return (
    now !== null &&
    now.start_time === instance.start_time &&
    now.exe_path === normalizeExecutablePath(instance.exe_path) &&
    now.session === instance.session
  );
}

/**
 * Mandatory integrity level RID of a process token (0x2000 medium, 0x3000 high, 0x4000 system),
 * or null when the token cannot be read (treated by callers as "unknown": refused for targets).
 */
export function integrityLevel(processHandle: number): number | null {
  const tok = Buffer.alloc(8);
  if (!w.OpenProcessToken(processHandle, TOKEN_QUERY, tok)) return null;
  const token = Number(tok.readBigInt64LE(0));
  try {
    const info = Buffer.alloc(256);
    const len = Buffer.alloc(4);
    if (!w.GetTokenInformation(token, TokenIntegrityLevel, info, info.length, len)) return null;
    // TOKEN_MANDATORY_LABEL { SID_AND_ATTRIBUTES { PSID Sid; DWORD Attributes } }: the SID lives inside `info`.
    const sid = info.readBigUInt64LE(0);
    const countPtr = w.GetSidSubAuthorityCount(sid);
    if (!countPtr) return null;
    const count = w.koffi.decode(countPtr, "uint8_t") as number;
    if (count < 1) return null;
    const ridPtr = w.GetSidSubAuthority(sid, count - 1);
    if (!ridPtr) return null;
    return w.koffi.decode(ridPtr, "uint32_t") as number;
  } finally {
    w.CloseHandle(token);
  }
}

let ownIntegrity: number | null | undefined;
export function ourIntegrity(): number | null {
  if (ownIntegrity === undefined) ownIntegrity = integrityLevel(w.GetCurrentProcess());
  return ownIntegrity;
}

/** Integrity of another process; null when its token cannot be opened with limited rights. */
export function processIntegrity(pid: number): number | null {
  return lookup(pid)?.integrity ?? null;
}

/**
 * The pid of our parent process, from a Toolhelp snapshot. Only trusted when the parent's
 * creation time precedes ours (otherwise the recorded parent pid was reused by someone else).
 */
export function parentPid(): number | null {
  const self = w.GetCurrentProcessId();
  const snap = w.CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  if (!snap || snap === INVALID_HANDLE_VALUE) return null;
  let parent: number | null = null;
  try {
    // PROCESSENTRY32W (x64): dwSize@0, th32ProcessID@8, th32ParentProcessID@32, size 568.
    const entry = Buffer.alloc(568);
    entry.writeUInt32LE(568, 0);
    let ok = w.Process32FirstW(snap, entry);
    while (ok) {
      if (entry.readUInt32LE(8) === self) {
        parent = entry.readUInt32LE(32);
        break;
      }
      ok = w.Process32NextW(snap, entry);
    }
  } finally {
    w.CloseHandle(snap);
  }
  if (parent === null || parent === 0) return null;
  const mine = resolveInstance(self);
  const theirs = resolveInstance(parent);
  if (mine && theirs && theirs.start_time > mine.start_time) return null;
  return parent;
}

/**
 * Pids that are never targets: our own process and the MCP host that started us. A worker
 * running as a separate process (UIINSPECT_WORKER_ISOLATION=process) also gets the server's
 * and the host's pids from its environment (UIINSPECT_SERVER_PID, UIINSPECT_HOST_PID); those
 * can only add refusals, never remove one.
 */
export interface SelfGuard {
  self: number;
  parent: number | null;
  others: number[];
}

export function selfGuard(env: NodeJS.ProcessEnv = process.env): SelfGuard {
  const others = [env.UIINSPECT_SERVER_PID, env.UIINSPECT_HOST_PID]
    .map((v) => (v && /^\d+$/.test(v) ? Number(v) : 0))
    .filter((n) => n > 0);
  return { self: w.GetCurrentProcessId(), parent: parentPid(), others };
}

/**
 * Why a pid can never be a target, or null if it may be. Higher integrity than ours is
 * refused because UIPI would silently drop our input and UIA calls would half-work.
 */
export function refusal(pid: number, guard: SelfGuard): string | null {
  if (pid === guard.self) return "self";
  if (guard.parent !== null && pid === guard.parent) return "parent";
  if (guard.others.includes(pid)) return "parent";
  const mine = ourIntegrity();
  // Our own level unknown (the platform has no mandatory labels): nothing to compare against.
  if (mine === null) return null;
  const theirs = processIntegrity(pid);
  // Theirs unreadable while ours is known: typically an elevated or protected process. Refused.
  if (theirs === null || theirs > mine) return "integrity";
  return null;
}

/**
 * The instance behind a window's pid when it may be a target, else null (one process lookup:
 * self/parent guard, integrity, identity).
 */
export function targetableInstance(pid: number, guard: SelfGuard): ProcessInstance | null {
  if (pid === guard.self || pid === guard.parent || guard.others.includes(pid)) return null;
  const k = lookup(pid);
  if (!k) return null;
  const mine = ourIntegrity();
  if (mine !== null && (k.integrity === null || k.integrity > mine)) return null;
  return { ...k.instance };
}

export function assertTargetable(pid: number, guard: SelfGuard): void {
  const why = refusal(pid, guard);
  if (why === "integrity")
    throw uiError("target_not_allowed", "The target runs at a higher integrity level than the server.");
  if (why !== null)
    throw uiError("target_not_allowed", "The server's own process and its host are never targets.");
}

/** The process and thread that created a window (GetWindowThreadProcessId). */
export function windowPid(hwnd: number): { pid: number; tid: number } {
  const b = Buffer.alloc(4);
  const tid = w.GetWindowThreadProcessId(hwnd, b);
  return { pid: b.readUInt32LE(0), tid };
}
