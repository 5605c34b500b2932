import { Worker } from "node:worker_threads";
import koffi from "koffi";
import { processUserSid } from "../../os/win32/account.js";
import * as w from "../../os/win32/ffi.js";
import { resolveInstance } from "../../os/win32/identity.js";
import { uiError } from "../../shared/errors.js";
import type { ProcessInstance } from "../../shared/identity.js";
import { SETTINGS } from "../../shared/settings.js";
import { switchIsOn } from "../../shared/settingsReader.js";
import type { LeaseDialog, LeaseDialogAnswer, LeaseDialogContent } from "../dialogPort.js";
import type { LeaseScope } from "../endpoint.js";
import type { InstanceResolver } from "../instance.js";
import {
  type AcceptFn,
  AlreadyRunningError,
  type BrokerTransport,
  type ConnectionHandlers,
  MAX_PENDING_OUTPUT,
  type RefusalReason,
  type ScopeMarker,
} from "../transport.js";
import {
  armOverlapped,
  createManualEvent,
  ERROR_IO_INCOMPLETE,
  ERROR_IO_PENDING,
  FILE_FLAG_OVERLAPPED,
  settleCancelled,
  validHandle,
  WAIT_OBJECT_0,
  WAIT_TIMEOUT,
} from "./overlapped.js";

/**
 * The Windows side of the lease broker, through koffi (loaded by the broker process only):
 * - the per-scope marker: the named mutex `Local\uiinspect-lease-<hash>`, owned for life;
 * - the endpoint: a named pipe created with FILE_FLAG_FIRST_PIPE_INSTANCE (a squatter makes
 *   the broker refuse to start), PIPE_REJECT_REMOTE_CLIENTS and a protected DACL granting
 *   access to the user's SID only; every connected client's PID (w.GetNamedPipeClientProcessId)
 *   is opened and its token's user SID must equal ours, else the connection is closed;
 * - overlapped I/O on every instance, one koffi async WaitForMultipleObjects at a time
 *   (at most 62 connections at once: MAXIMUM_WAIT_OBJECTS less the wake event and the
 *   listening instance);
 * - process instances through the backend's own resolver (os/win32/identity.ts), and
 *   the MessageBox lease dialog (on its own guarded thread: windowsDialogThread.ts).
 * Every binding is os/win32/ffi.ts's; this module keeps only the pipe and mutex logic.
 *
 * Run under Wine 8 with the Windows node.exe by test/win32/lease.mjs (mutex, pipe + DACL, peer
 * SID check, overlapped I/O, MessageBox, instance resolver). Not verifiable there: Wine ignores
 * FILE_FLAG_FIRST_PIPE_INSTANCE and has a single user (no other-user refusal). See docs/lease.md.
 */

const PIPE_ACCESS_DUPLEX = 0x3;
const FILE_FLAG_FIRST_PIPE_INSTANCE = 0x00080000;
const PIPE_REJECT_REMOTE_CLIENTS = 0x8;
const PIPE_UNLIMITED_INSTANCES = 255;
const ERROR_PIPE_CONNECTED = 535;
const WAIT_ABANDONED = 0x80;
const MAX_WAIT = 64;
const BUF_SIZE = 64 * 1024;
/** How often pending writes are polled while any is outstanding (ms). */
const WRITE_POLL_MS = 20;

export function acquireWindowsMarker(scope: LeaseScope): ScopeMarker {
  const h = w.CreateMutexW(null, 0, scope.marker);
  if (!validHandle(h)) throw uiError("broker_unavailable", "The broker's scope mutex cannot be created.");
  const r: number = w.WaitForSingleObject(h, 0);
  if (r === WAIT_TIMEOUT) {
    w.CloseHandle(h);
    throw new AlreadyRunningError();
  }
  if (r !== WAIT_OBJECT_0 && r !== WAIT_ABANDONED) {
    w.CloseHandle(h);
    throw uiError("broker_unavailable", "The broker's scope mutex cannot be taken.");
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      w.ReleaseMutex(h);
      w.CloseHandle(h);
    },
  };
}

interface Waitable {
  event: number;
  onSignal(): void;
}

interface Instance {
  h: number;
  ov: w.Mem;
  event: number;
  buf: w.Mem;
  state: "connecting" | "reading" | "closed";
  handlers: ConnectionHandlers | null;
  /** Frames not yet handed to WriteFile, and their total size with the one in flight. */
  queued: Buffer[];
  queuedBytes: number;
  /** The overlapped write in flight (its memory lives until it completes or the pipe is buried). */
  writing: { ov: w.Mem; mem: w.Mem; len: number } | null;
  writeEvent: number;
  /** An operation the kernel had not finished when the pipe was buried: keep its memory. */
  inFlight: boolean;
}

/** One broker's named pipe: its instances, their overlapped I/O and the one wait loop over them. */
class PipeServer {
  private readonly waitables = new Map<number, Waitable>();
  private readonly graveyard: Instance[] = [];
  private readonly instances = new Set<Instance>();
  private readonly pendingWrites = new Set<Instance>();
  private first = true;
  private stopping = false;
  private listening: Instance | null = null;
  private loopDone: () => void = () => {};
  private readonly loopFinished = new Promise<void>((r) => {
    this.loopDone = r;
  });

  constructor(
    private readonly scope: LeaseScope,
    private readonly accept: AcceptFn,
    private readonly refused: (reason: RefusalReason, peer: { pid?: number }) => void,
    private readonly sa: { nLength: number; lpSecurityDescriptor: w.Mem; bInheritHandle: number },
    private readonly wake: number,
  ) {}

  private bury(inst: Instance): void {
    if (inst.state === "closed") return;
    inst.state = "closed";
    this.instances.delete(inst);
    this.waitables.delete(inst.event);
    this.pendingWrites.delete(inst);
    inst.queued = [];
    w.CancelIoEx(inst.h, null);
    // The kernel must be done with the OVERLAPPEDs and buffers before the graveyard frees them;
    // what is still in flight after a bounded wait is never freed (a small, rare leak).
    inst.inFlight =
      !settleCancelled(inst.h, inst.ov, inst.event) ||
      (inst.writing !== null && !settleCancelled(inst.h, inst.writing.ov, inst.writeEvent));
    w.DisconnectNamedPipe(inst.h);
    w.CloseHandle(inst.h);
    this.graveyard.push(inst);
    w.SetEvent(this.wake);
    inst.handlers?.closed();
  }

  private startRead(inst: Instance): void {
    armOverlapped(inst.ov, inst.event);
    const ok: number = w.ReadFile(inst.h, inst.buf, BUF_SIZE, null, inst.ov);
    if (!ok && w.GetLastError() !== ERROR_IO_PENDING) {
      this.bury(inst);
      return;
    }
    this.waitables.set(inst.event, { event: inst.event, onSignal: () => this.onRead(inst) });
  }

  private onRead(inst: Instance): void {
    const n = [0];
    if (!w.GetOverlappedResult(inst.h, inst.ov, n, 0) || n[0] === 0) {
      this.bury(inst);
      return;
    }
    const chunk = Buffer.from(new Uint8Array(koffi.view(inst.buf, n[0] ?? 0)));
    inst.handlers?.data(chunk);
    if (inst.state === "reading") this.startRead(inst);
  }

  private finishWrite(inst: Instance): void {
    const done = inst.writing;
    if (!done) return;
    inst.writing = null;
    this.pendingWrites.delete(inst);
    inst.queuedBytes -= done.len;
    koffi.free(done.mem);
    koffi.free(done.ov);
  }

  // Never waits: a write that does not complete at once stays in flight and is polled by the
  // loop, so a client that stops reading cannot stall answers to everyone else.
  private pump(inst: Instance): void {
    while (inst.state === "reading" && !inst.writing && inst.queued.length > 0) {
      const [head] = inst.queued;
      const frame = inst.queued.length === 1 && head ? head : Buffer.concat(inst.queued);
      inst.queued = [];
      const mem = koffi.alloc("uint8_t", frame.length);
      const ov = koffi.alloc(w.OVERLAPPED, 1);
      koffi.encode(mem, "uint8_t", Array.from(frame), frame.length);
      armOverlapped(ov, inst.writeEvent);
      inst.writing = { ov, mem, len: frame.length };
      const ok: number = w.WriteFile(inst.h, mem, frame.length, null, ov);
      if (!ok && w.GetLastError() !== ERROR_IO_PENDING) {
        this.bury(inst);
        return;
      }
      this.pollWrite(inst);
      if (inst.writing) {
        this.pendingWrites.add(inst);
        w.SetEvent(this.wake);
      }
    }
  }

  private pollWrite(inst: Instance): void {
    const pending = inst.writing;
    if (!pending) return;
    const n = [0];
    if (w.GetOverlappedResult(inst.h, pending.ov, n, 0)) {
      this.finishWrite(inst);
      this.pump(inst);
    } else if (w.GetLastError() !== ERROR_IO_INCOMPLETE) {
      this.bury(inst);
    }
  }

  private write(inst: Instance, frame: Buffer): void {
    if (inst.state !== "reading") return;
    inst.queued.push(frame);
    inst.queuedBytes += frame.length;
    if (inst.queuedBytes > MAX_PENDING_OUTPUT) {
      this.bury(inst);
      return;
    }
    this.pump(inst);
  }

  private onConnected(inst: Instance): void {
    this.waitables.delete(inst.event);
    this.listening = null;
    const pidOut = [0];
    const pid = w.GetNamedPipeClientProcessId(inst.h, pidOut) ? (pidOut[0] ?? 0) : 0;
    const sid = pid > 0 ? processUserSid(pid) : null;
    if (sid === null) {
      this.refused("peer_unknown", { pid: pid || undefined });
      this.bury(inst);
    } else if (sid !== this.scope.user) {
      this.refused("other_user", { pid });
      this.bury(inst);
    } else {
      inst.state = "reading";
      inst.handlers = this.accept(
        { pid },
        { write: (f) => this.write(inst, f), close: () => this.bury(inst) },
      );
      this.startRead(inst);
    }
    this.listenNext();
  }

  listenNext(): void {
    if (this.stopping || this.listening || this.waitables.size >= MAX_WAIT - 2) return;
    const flags =
      PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED | (this.first ? FILE_FLAG_FIRST_PIPE_INSTANCE : 0);
    const h = w.CreateNamedPipeW(
      this.scope.endpoint,
      flags,
      PIPE_REJECT_REMOTE_CLIENTS,
      PIPE_UNLIMITED_INSTANCES,
      BUF_SIZE,
      BUF_SIZE,
      0,
      this.sa,
    );
    if (!validHandle(h)) {
      if (this.first)
        throw uiError("broker_unavailable", "The lease pipe exists already (another process holds it).");
      return;
    }
    this.first = false;
    let event: number;
    let writeEvent: number;
    try {
      event = createManualEvent();
      writeEvent = createManualEvent();
    } catch {
      // Out of handles: try again at the next turn of the loop.
      w.CloseHandle(h);
      return;
    }
    const inst: Instance = {
      h,
      ov: koffi.alloc(w.OVERLAPPED, 1),
      event,
      buf: koffi.alloc("uint8_t", BUF_SIZE),
      state: "connecting",
      handlers: null,
      queued: [],
      queuedBytes: 0,
      writing: null,
      writeEvent,
      inFlight: false,
    };
    armOverlapped(inst.ov, event);
    this.instances.add(inst);
    this.listening = inst;
    const ok: number = w.ConnectNamedPipe(h, inst.ov);
    const err = ok ? 0 : (w.GetLastError() as number);
    if (!ok && err === ERROR_PIPE_CONNECTED) {
      this.onConnected(inst);
      return;
    }
    if (!ok && err !== ERROR_IO_PENDING) {
      this.listening = null;
      this.bury(inst);
      return;
    }
    this.waitables.set(inst.event, { event: inst.event, onSignal: () => this.onConnected(inst) });
    w.SetEvent(this.wake);
  }

  loop(): void {
    for (const g of this.graveyard.splice(0)) {
      w.CloseHandle(g.event);
      w.CloseHandle(g.writeEvent);
      if (g.inFlight) continue;
      koffi.free(g.ov);
      koffi.free(g.buf);
      if (g.writing) {
        koffi.free(g.writing.mem);
        koffi.free(g.writing.ov);
        g.writing = null;
      }
    }
    if (this.stopping) {
      this.loopDone();
      return;
    }
    // Listen again once a slot is free: after a full house (MAX_WAIT - 2 connections) nothing
    // else would create the next instance, and the broker would never accept again.
    this.listenNext();
    w.ResetEvent(this.wake);
    for (const inst of [...this.pendingWrites]) this.pollWrite(inst);
    const list = [...this.waitables.values()];
    const handles = [this.wake, ...list.map((x) => x.event)];
    const waitMs = this.pendingWrites.size > 0 ? WRITE_POLL_MS : 1000;
    w.waitForMultipleObjectsAsync(handles, waitMs, (err: unknown, r: number) => {
      if (!err && r >= WAIT_OBJECT_0 + 1 && r < WAIT_OBJECT_0 + handles.length) {
        const signalled = list[r - 1];
        if (signalled && this.waitables.get(signalled.event) === signalled) signalled.onSignal();
      }
      this.loop();
    });
  }

  async close(): Promise<void> {
    this.stopping = true;
    for (const inst of [...this.instances]) this.bury(inst);
    w.SetEvent(this.wake);
    await this.loopFinished;
    w.CloseHandle(this.wake);
  }
}

export async function listenWindowsPipe(
  scope: LeaseScope,
  accept: AcceptFn,
  refused: (reason: RefusalReason, peer: { pid?: number }) => void,
): Promise<BrokerTransport> {
  const sdOut: w.Mem[] = [null];
  // Owned by the user and open to the user only; clients check the owner (see the link worker).
  if (
    !w.ConvertStringSecurityDescriptorToSecurityDescriptorW(
      `O:${scope.user}D:P(A;;GA;;;${scope.user})`,
      1,
      sdOut,
      null,
    )
  ) {
    throw uiError("broker_unavailable", "The pipe's security descriptor cannot be built.");
  }
  const sa = {
    nLength: koffi.sizeof(w.SECURITY_ATTRIBUTES),
    lpSecurityDescriptor: sdOut[0],
    bInheritHandle: 0,
  };
  let wake: number;
  try {
    wake = createManualEvent();
  } catch {
    throw uiError("broker_unavailable", "An event cannot be created.");
  }
  const server = new PipeServer(scope, accept, refused, sa, wake);
  server.listenNext();
  server.loop();
  return {
    close: async () => {
      await server.close();
      w.LocalFree(sdOut[0]);
    },
  };
}

/**
 * The backend's resolver (os/win32/identity.ts: creation time, normalized image path,
 * session; an exited process has none), in this broker's scope: a process of another session
 * keeps that session marked, so sameInstance refuses it whatever the caller claims.
 */
export function windowsInstanceResolver(session: string): InstanceResolver {
  return async (pid: number): Promise<ProcessInstance | null> => {
    const live = resolveInstance(pid);
    if (!live) return null;
    return live.session === session ? live : { ...live, session: `other:${live.session}` };
  };
}

const IDNO = 7;
const WM_COMMAND = 0x111;
const CLOSE_RETRY_MS = 100;
const CLOSE_GIVE_UP_MS = 5000;

/** The visible windows titled `title` that thread `tid` owns (never another program's look-alike). */
function threadWindowsTitled(tid: number, title: string): number[] {
  const out: number[] = [];
  let after = 0;
  for (let i = 0; i < 64; i++) {
    after = w.FindWindowExW(0, after, null, title);
    if (!after) break;
    if (w.GetWindowThreadProcessId(after, null) === tid) out.push(after);
  }
  return out;
}

type FromDialogThread = { type: "thread"; tid: number } | { type: "answer"; answer: LeaseDialogAnswer };

/** Checked by hand: the broker does not load zod for two message shapes from its own thread. */
function parseThreadMessage(raw: unknown): FromDialogThread | null {
  if (typeof raw !== "object" || raw === null) return null;
  const m = raw as Record<string, unknown>;
  if (m.type === "thread" && typeof m.tid === "number" && Number.isInteger(m.tid))
    return { type: "thread", tid: m.tid };
  if (m.type === "answer" && (m.answer === "approve" || m.answer === "deny"))
    return { type: "answer", answer: m.answer };
  return null;
}

/**
 * MessageBoxW (Yes/No, No the default) on its own worker_thread (windowsDialogThread.ts),
 * guarded like the consent dialog (platforms/win32/dialogGuard.ts): injected input aimed at it
 * is swallowed unless UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT=1, and Yes stays disabled (input
 * swallowed) for the security delay after it shows. On abort it is closed with IDNO, found by
 * its thread; a box we closed is never an approval.
 */
export class WindowsMessageBoxDialog implements LeaseDialog {
  readonly kind = "messagebox";

  constructor(private readonly env: Record<string, string | undefined> = process.env) {}

  prompt(content: LeaseDialogContent, signal: AbortSignal): Promise<LeaseDialogAnswer> {
    return new Promise<LeaseDialogAnswer>((resolve, reject) => {
      if (signal.aborted) {
        reject(uiError("consent_timeout"));
        return;
      }
      const worker = new Worker(new URL("./windowsDialogThread.js", import.meta.url), {
        workerData: {
          text: `${content.text}\n\nYes = Allow, No = Deny.`,
          title: content.title,
          allowInjected: switchIsOn(this.env, SETTINGS.unsafeAllowXtestConsent),
        },
      });
      let tid = 0;
      let settled = false;
      let aborted = false;
      let closing: NodeJS.Timeout | null = null;
      let giveUp: NodeJS.Timeout | null = null;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        if (closing) clearInterval(closing);
        if (giveUp) clearTimeout(giveUp);
        signal.removeEventListener("abort", onAbort);
        fn();
        void worker.terminate();
      };
      const closeBox = () => {
        if (!tid) return;
        for (const hwnd of threadWindowsTitled(tid, content.title)) w.PostMessageW(hwnd, WM_COMMAND, IDNO, 0);
      };
      const onAbort = () => {
        aborted = true;
        // Retried: the box may not be shown yet, or miss the first post while it settles.
        closeBox();
        closing = setInterval(closeBox, CLOSE_RETRY_MS);
        giveUp = setTimeout(() => finish(() => reject(uiError("consent_timeout"))), CLOSE_GIVE_UP_MS);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      worker.on("message", (raw: unknown) => {
        const m = parseThreadMessage(raw);
        if (!m) return;
        if (m.type === "thread") {
          tid = m.tid;
          if (aborted) closeBox();
          return;
        }
        const answer = m.answer;
        finish(() => (aborted ? reject(uiError("consent_timeout")) : resolve(answer)));
      });
      // A thread that fails or ends without an answer is a denial (fail closed).
      worker.on("error", () =>
        finish(() => (aborted ? reject(uiError("consent_timeout")) : resolve("deny"))),
      );
      worker.on("exit", () => finish(() => (aborted ? reject(uiError("consent_timeout")) : resolve("deny"))));
    });
  }
}
