import { isMainThread, type MessagePort, parentPort, workerData } from "node:worker_threads";
import { dialogGate } from "../shared/dialogGate.js";
import { UiError, type UiErrorBody, uiError } from "../shared/errors.js";
import type { Platform } from "../shared/platform.js";
import type { PressLedger } from "../shared/pressLedger.js";
import {
  OPS,
  type OpName,
  type SupervisorToWorker,
  SupervisorToWorkerSchema,
  type WorkerInit,
  WorkerInitSchema,
  type WorkerToSupervisor,
} from "../shared/protocol.js";
import type { HandlerContext, HandlerTable } from "./handlers.js";

/** How a worker talks to its supervisor: a MessagePort (thread) or the IPC channel (process). */
export interface Channel {
  send(msg: WorkerToSupervisor, transfer?: ArrayBuffer[]): void;
  onMessage(listener: (msg: unknown) => void): void;
}

function threadChannel(port: MessagePort): Channel {
  return {
    send: (msg, transfer) => {
      try {
        port.postMessage(msg, transfer ?? []);
      } catch {
        // Some buffers cannot be transferred (one over native memory an addon owns): copy instead.
        port.postMessage(msg);
      }
    },
    onMessage: (listener) => port.on("message", listener),
  };
}

function processChannel(): Channel {
  return {
    send: (msg) => process.send?.(msg),
    onMessage: (listener) => process.on("message", listener),
  };
}

function errorBody(e: unknown, signal: AbortSignal): UiErrorBody {
  if (e instanceof UiError) return e.toBody();
  if (signal.aborted && signal.reason instanceof UiError) return signal.reason.toBody();
  // Raw provider exceptions never cross: they may carry UI text.
  return uiError("platform_unavailable", "The platform call failed.").toBody();
}

/** Collects the ArrayBuffers of Uint8Array fields so large results move instead of copying. */
function transferables(result: unknown): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  collect(result, out, 1);
  return out;
}

/** The Uint8Array fields of `value`, and of its object fields down to `depth` (capture.window's shot). */
function collect(value: unknown, out: ArrayBuffer[], depth: number): void {
  if (!value || typeof value !== "object" || Array.isArray(value)) return;
  for (const v of Object.values(value)) {
    if (v instanceof Uint8Array) {
      if (v.byteOffset === 0 && v.byteLength === v.buffer.byteLength && v.buffer instanceof ArrayBuffer)
        out.push(v.buffer);
    } else if (depth > 0) collect(v, out, depth - 1);
  }
}

/** What a running dispatcher offers its host: an inline endpoint stops it when it is torn down. */
export interface ServedWorker {
  /** Requests still being handled (their handlers release in finally). */
  readonly inflight: number;
  /** Aborts every request in flight; later messages are dropped. */
  stop(): void;
  readonly platform: Platform | null;
}

export interface ServeOptions {
  /** Thread and inline workers: the supervisor's DialogGate cell (processes get dialog_state). */
  dialogFlag?: unknown;
  /** Thread and process workers: malloc_trim on `trim_malloc` (inline workers run on the
   * supervisor's thread, which loads no native code, and have none). */
  trimMalloc?: () => void;
}

/**
 * The worker side of the protocol: parses every message, runs the handler with an
 * AbortSignal (cancel or deadline), and answers once per request. The channel is a MessagePort
 * (thread), the IPC channel (process) or an in-memory pair (inline, src/workers/inline.ts).
 */
export async function serveWorker(
  channel: Channel,
  rawInit: unknown,
  handlers: HandlerTable,
  opts: ServeOptions = {},
): Promise<ServedWorker> {
  if (opts.dialogFlag instanceof SharedArrayBuffer) dialogGate.attach(opts.dialogFlag);
  const init: WorkerInit = WorkerInitSchema.parse(rawInit);
  const { platform, unavailable } = await startPlatform(init);
  const inflight = new Map<number, AbortController>();
  let stopped = false;
  const faultFile = process.env.UIINSPECT_TEST_INPUT_FAULT_FILE;
  if (init.kind === "input" && faultFile) {
    const { armFaultInjection } = await import("./input/faultInjection.js");
    armFaultInjection(faultFile);
  }
  const served: Served = { init, handlers, platform, unavailable };

  channel.onMessage((raw) => {
    if (stopped) return;
    const parsed = SupervisorToWorkerSchema.safeParse(raw);
    if (!parsed.success) return; // Only the supervisor holds this channel; garbage is dropped.
    const msg = parsed.data;
    if (msg.type !== "request") {
      control(msg, inflight, opts);
      return;
    }
    const controller = new AbortController();
    inflight.set(msg.id, controller);
    const deadline = Date.now() + msg.deadline_ms;
    const timer = setTimeout(() => controller.abort(uiError("worker_timeout")), msg.deadline_ms);
    const reply = (m: WorkerToSupervisor, transfer?: ArrayBuffer[]) => {
      clearTimeout(timer);
      inflight.delete(msg.id);
      channel.send(m, transfer);
    };
    void (async () => {
      try {
        const result = await runRequest(served, msg, controller.signal, deadline);
        reply({ type: "response", id: msg.id, ok: true, result }, transferables(result));
      } catch (e) {
        reply({ type: "response", id: msg.id, ok: false, error: errorBody(e, controller.signal) });
      }
    })();
  });
  announceReady(channel, platform);
  return {
    get inflight() {
      return inflight.size;
    },
    stop: () => {
      stopped = true;
      for (const c of inflight.values()) c.abort(uiError("cancelled"));
    },
    platform,
  };
}

/** What a request runs against: the worker's kind, its handlers and its platform (or why none). */
interface Served {
  init: WorkerInit;
  handlers: HandlerTable;
  platform: Platform | null;
  unavailable: UiError;
}

/**
 * A backend that cannot start (no display, no COM) still answers: every request fails with
 * platform_unavailable instead of the worker dying in a restart loop. Our own refusal (fixed
 * text, e.g. the missing variable named) is kept to answer with; anything else is replaced by a
 * generic one.
 */
async function startPlatform(init: WorkerInit): Promise<{ platform: Platform | null; unavailable: UiError }> {
  try {
    return { platform: await loadPlatform(init), unavailable: uiError("platform_unavailable") };
  } catch (e) {
    const own = e instanceof UiError && e.code === "platform_unavailable";
    return { platform: null, unavailable: own ? e : uiError("platform_unavailable") };
  }
}

/** One request: a known operation of this worker with valid arguments, then its handler's result. */
async function runRequest(
  served: Served,
  msg: Extract<SupervisorToWorker, { type: "request" }>,
  signal: AbortSignal,
  deadline: number,
): Promise<unknown> {
  if (!(msg.op in OPS)) throw uiError("invalid_argument", "Unknown worker operation.");
  const op = msg.op as OpName;
  const def = OPS[op];
  if (def.worker !== "any" && def.worker !== served.init.kind)
    throw uiError("invalid_argument", "Wrong worker.");
  const handler = served.handlers[op] as GenericHandler | undefined;
  if (!handler && op !== "ping") throw uiError("invalid_argument", "Operation not served by this worker.");
  const args = def.args.safeParse(msg.args);
  if (!args.success) throw uiError("invalid_argument", "Worker arguments are invalid.");
  if (op === "ping") return { pong: true, pid: process.pid };
  if (!served.platform) throw served.unavailable;
  const ctx: HandlerContext = { signal, deadline, init: served.init, platform: served.platform };
  return (handler as GenericHandler)(args.data, ctx);
}

/** Ready, with the native descriptors the worker holds; shared segments are announced as they come. */
function announceReady(channel: Channel, platform: Platform | null): void {
  platform?.onSharedSegments?.((segments) => channel.send({ type: "native_segments", segments }));
  const nativeFds = platform?.nativeFds?.() ?? [];
  channel.send({
    type: "ready",
    pid: process.pid,
    ...(nativeFds.length > 0 ? { native_fds: nativeFds } : {}),
  });
}

/** The supervisor's messages that are not requests: the dialog count, a trim, a cancel. */
function control(
  msg: Exclude<SupervisorToWorker, { type: "request" }>,
  inflight: ReadonlyMap<number, AbortController>,
  opts: ServeOptions,
): void {
  switch (msg.type) {
    case "dialog_state":
      dialogGate.setOpen(msg.open);
      return;
    case "trim_malloc":
      opts.trimMalloc?.();
      return;
    case "cancel":
      inflight.get(msg.id)?.abort(uiError(msg.reason === "deadline" ? "worker_timeout" : "cancelled"));
      return;
  }
}

/** A worker thread's or forked child's entry: finds its channel, then serves it. */
export async function runWorker(handlers: HandlerTable): Promise<void> {
  let channel: Channel;
  let rawInit: unknown;
  let dialogFlag: unknown;
  if (!isMainThread && parentPort) {
    const data = workerData as { init: unknown; port: MessagePort; dialogFlag?: unknown };
    channel = threadChannel(data.port);
    rawInit = data.init;
    dialogFlag = data.dialogFlag;
  } else if (process.send) {
    channel = processChannel();
    rawInit = JSON.parse(process.env.UIINSPECT_WORKER_INIT ?? "null");
  } else {
    throw new Error("runWorker must run in a worker thread or a forked child process");
  }
  // The malloc tuning lives here, off the supervisor's thread: the first worker thread caps the
  // arenas as it starts, before the others exist (src/shared/mallocArenas.ts).
  const { limitMallocArenas, trimMalloc } = await import("../os/linux/malloc.js");
  limitMallocArenas();
  trimMalloc();
  const served = await serveWorker(channel, rawInit, handlers, { dialogFlag, trimMalloc });
  if (isMainThread) {
    // Process isolation: the server is gone (its IPC channel closed): stop every gesture (each releases in its
    // finally) and leave; the guardian has released the rest already.
    process.on("disconnect", () => {
      served.stop();
      setTimeout(() => process.exit(0), 500).unref();
      const check = setInterval(() => {
        if (served.inflight === 0) process.exit(0);
      }, 10);
      check.unref();
    });
  }
}

type GenericHandler = (args: unknown, ctx: HandlerContext) => Promise<unknown>;

/** Refuses every press: a worker that lost its guardian presses nothing. */
const REFUSING_LEDGER: PressLedger = {
  hold: async () => {
    throw uiError("platform_unavailable", "The input guardian is unavailable.");
  },
  release: () => undefined,
};

/**
 * The platform, with the input port recording every press in the guardian first when the
 * supervisor gave this worker one (input workers). A guardian that cannot be reached means no
 * input at all, never input that nothing could release after a crash.
 */
async function loadPlatform(init: WorkerInit): Promise<Platform> {
  const { loadPlatform: load } = await import("../platforms/load.js");
  if (!init.guardian) return load(init);
  const { GuardianLink } = await import("../guardian/link.js");
  const { withLedger } = await import("./input/ledgered.js");
  const ledger: PressLedger = await GuardianLink.connect(init.guardian).catch(() => REFUSING_LEDGER);
  const platform = await load(init, ledger);
  return { ...platform, input: withLedger(platform.input, ledger) };
}
