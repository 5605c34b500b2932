import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import type { ReleaseAgent } from "../../guardian/host.js";
import type { DialogGate } from "../../shared/dialogGate.js";
import { UiError, uiError } from "../../shared/errors.js";
import { mallocArenaEnv } from "../../shared/mallocArenas.js";
import type { SharedSegment } from "../../shared/platform.js";
import {
  OPS,
  type OpArgs,
  type OpName,
  type OpResult,
  type SupervisorToWorker,
  type WorkerInit,
  type WorkerKind,
  WorkerToSupervisorSchema,
} from "../../shared/protocol.js";
import { workerProcessHeapFlags } from "../heap.js";
import type { Logger } from "../log.js";
import { adoptNativeFds, closeNativeFds, type NativeFd } from "./nativeFds.js";
import { leaveOrphanSegments, takeOrphanSegments } from "./nativeSegments.js";
import { carriesTrees, parseTreeResult } from "./treeResults.js";

/**
 * V8 grows a busy isolate's young generation up to 3 × 16 MiB semi-spaces and keeps it; with
 * one isolate per worker (capture, input, one uia per grant) that is most of a soak's resident
 * growth. Workers allocate short-lived objects only (frames are external memory), so small
 * semi-spaces cost a few more scavenges and no throughput measurable in bench/ (docs/benchmarks.md).
 */
const WORKER_SEMI_SPACE_MB = 2;
const WORKER_YOUNG_GENERATION_MB = 3 * WORKER_SEMI_SPACE_MB;

/**
 * Where a worker runs. `inline` (the in-process test harness only, never a setting a user can
 * choose) runs the dispatcher on this thread behind the same messages (src/workers/inline.ts).
 */
export type Isolation = "thread" | "process" | "inline";

export interface WorkerHostOptions {
  init: WorkerInit;
  isolation: Isolation;
  logger: Logger;
  /** Extra time after the deadline's cancel before a silent worker is declared hung. */
  graceMs?: number;
  /** Restart backoff: first delay and cap. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** How long a starting worker may take to say it is ready. */
  startTimeoutMs?: number;
  /** Extra environment for process-isolated workers. */
  env?: Record<string, string>;
  /** The input worker's view of our open dialogs (shared memory, or dialog_state messages). */
  dialogGate?: DialogGate;
  /**
   * Input workers: the release guardian. Each worker records its presses there; when one ends,
   * what it still held is released before the next worker serves anything.
   */
  guardian?: ReleaseAgent;
}

/** How long a dead worker's release may hold up its replacement (the guardian answers in ms). */
const RELEASE_BOUND_MS = 1000;
/** At shutdown, how long in-flight calls get to finish their release-in-finally after the cancel. */
const CLOSE_CANCEL_GRACE_MS = 500;

/** The channels of this process's running thread workers, of every host (for trim_malloc). */
const liveThreadPorts = new Set<MessagePort>();

export interface CallOptions {
  /** Past it the worker is asked to cancel, and one still silent a grace second on is torn down. */
  deadlineMs: number;
  /**
   * How long this caller waits, when shorter than the deadline: then the call fails with
   * worker_timeout and the worker is asked to cancel, but it is not torn down. A worker that is
   * slow for all (every X request waits behind another program's grab of the X server) is not
   * hung, and tearing it down would fail every call in flight there.
   */
  waitMs?: number;
  signal?: AbortSignal;
}

interface Pending {
  op: OpName;
  resolve(v: unknown): void;
  reject(e: UiError): void;
  deadlineTimer: NodeJS.Timeout;
  waitTimer?: NodeJS.Timeout;
  graceTimer?: NodeJS.Timeout;
  detach(): void;
}

/** One running worker (thread or child process) behind a uniform face. */
interface Endpoint {
  send(msg: SupervisorToWorker): void;
  kill(): Promise<void>;
  /** Thread workers: the native descriptors its ready message reported, closed when it ends. */
  adoptNativeFds?(fds: readonly number[]): void;
  /** Thread workers: the shared-memory segments it has attached now, left to the next one. */
  adoptSegments?(segments: readonly SharedSegment[]): void;
}

export interface WorkerStats {
  kind: WorkerKind;
  state: "stopped" | "starting" | "ready" | "backoff";
  restarts: number;
  crashes: number;
  timeouts: number;
  inflight: number;
  isolation: Isolation;
}

/**
 * Supervisor side of one worker kind: deadlines, cancellation, crash and hang
 * detection, restart with backoff. When a worker dies or hangs, every request it
 * held fails with a stable code and only that worker is replaced.
 */
export class WorkerHost {
  readonly kind: WorkerKind;
  private readonly opts: WorkerHostOptions;
  private endpoint: Endpoint | null = null;
  private generation = 0;
  private state: WorkerStats["state"] = "stopped";
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private consecutiveFailures = 0;
  private nextStartAt = 0;
  private restarts = 0;
  private crashes = 0;
  private timeouts = 0;
  private closed = false;
  private readonly readyWaiters = new Set<(ok: boolean) => void>();
  /** Why the current endpoint is being torn down (decides the code its requests get). */
  private teardownReason: "worker_timeout" | "worker_crashed" | null = null;
  private readonly exitListeners: Array<(reason: "worker_timeout" | "worker_crashed") => void> = [];
  /** The guardian source name of the current worker (null without a guardian). */
  private source: string | null = null;
  /** The release of the last dead worker's presses; the next worker starts after it. */
  private releasing: Promise<void> = Promise.resolve();
  /** Answers still expected after a shutdown cancel. */
  private readonly drainWaiters = new Set<() => void>();

  constructor(opts: WorkerHostOptions) {
    this.kind = opts.init.kind;
    this.opts = opts;
    // A thread reads the shared cell itself; a child process is told every change.
    if (opts.isolation === "process")
      opts.dialogGate?.onChange((open) => this.safeSend({ type: "dialog_state", open }));
  }

  /** Notified whenever this worker is torn down (sessions it held are gone). */
  onTeardown(listener: (reason: "worker_timeout" | "worker_crashed") => void): void {
    this.exitListeners.push(listener);
  }

  stats(): WorkerStats {
    return {
      kind: this.kind,
      state: this.state,
      restarts: this.restarts,
      crashes: this.crashes,
      timeouts: this.timeouts,
      inflight: this.pending.size,
      isolation: this.opts.isolation,
    };
  }

  async call<K extends OpName>(op: K, args: OpArgs<K>, opts: CallOptions): Promise<OpResult<K>> {
    if (this.closed) throw uiError("platform_unavailable", "The server is shutting down.");
    if (opts.signal?.aborted) throw uiError("cancelled");
    // A caller's wait covers a worker's start-up too (XOpenDisplay waits out a grab as well).
    const waitEnds =
      opts.waitMs !== undefined && opts.waitMs < opts.deadlineMs ? Date.now() + opts.waitMs : null;
    await this.startedWithin(opts.signal, waitEnds);
    const endpoint = this.endpoint;
    if (!endpoint) throw uiError("worker_crashed");
    const id = this.nextId++;
    return new Promise<OpResult<K>>((resolve, reject) => {
      const onAbort = () => {
        const p = this.pending.get(id);
        if (!p) return;
        this.finish(id);
        this.safeSend({ type: "cancel", id, reason: "client" });
        reject(uiError("cancelled"));
      };
      const deadlineTimer = setTimeout(() => {
        const p = this.pending.get(id);
        if (!p) return;
        // Ask politely first (the worker releases keys/buttons in finally), then kill.
        this.safeSend({ type: "cancel", id, reason: "deadline" });
        p.graceTimer = setTimeout(() => {
          if (this.pending.has(id)) this.teardown("worker_timeout");
        }, this.opts.graceMs ?? 1000);
      }, opts.deadlineMs);
      const waitTimer =
        waitEnds === null
          ? undefined
          : setTimeout(
              () => {
                if (!this.finish(id)) return;
                this.safeSend({ type: "cancel", id, reason: "deadline" });
                reject(notInTime());
              },
              Math.max(0, waitEnds - Date.now()),
            );
      this.pending.set(id, {
        op,
        resolve: (v) => resolve(v as OpResult<K>),
        reject,
        deadlineTimer,
        ...(waitTimer ? { waitTimer } : {}),
        detach: () => opts.signal?.removeEventListener("abort", onAbort),
      });
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      this.safeSend({ type: "request", id, op, args, deadline_ms: opts.deadlineMs });
    });
  }

  /**
   * ensureStarted, given up (worker_timeout) at `waitEnds` when the caller waits that long only;
   * the start goes on for the next caller.
   */
  private async startedWithin(signal: AbortSignal | undefined, waitEnds: number | null): Promise<void> {
    if (waitEnds === null || this.state === "ready") return this.ensureStarted(signal);
    const waited = new AbortController();
    const give = () => waited.abort();
    const timer = setTimeout(give, Math.max(0, waitEnds - Date.now()));
    signal?.addEventListener("abort", give, { once: true });
    try {
      await this.ensureStarted(waited.signal);
    } catch (e) {
      throw waited.signal.aborted && !signal?.aborted ? notInTime() : e;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", give);
    }
  }

  /** Starts the worker now rather than at the first call; resolves once it is up (or failed). */
  warm(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.ensureStarted().then(
      () => undefined,
      () => undefined,
    );
  }

  /**
   * Shutdown: every in-flight call is cancelled first and given a moment to answer (its
   * gesture releases what it pressed in finally), then the worker is stopped and the guardian
   * releases whatever it still held. Bounded: about CLOSE_CANCEL_GRACE_MS + RELEASE_BOUND_MS.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.pending.size > 0 && this.endpoint) {
      for (const id of this.pending.keys()) this.safeSend({ type: "cancel", id, reason: "client" });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, CLOSE_CANCEL_GRACE_MS);
        const check = () => {
          if (this.pending.size === 0) done();
        };
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.drainWaiters.add(check);
      });
      this.drainWaiters.clear();
    }
    this.failAll(uiError("platform_unavailable", "The server is shutting down."));
    const ep = this.endpoint;
    const source = this.source;
    this.endpoint = null;
    this.source = null;
    this.generation += 1;
    this.state = "stopped";
    if (ep) await ep.kill();
    if (source !== null && this.opts.guardian)
      await this.opts.guardian.releaseSource(source, RELEASE_BOUND_MS);
  }

  private safeSend(msg: SupervisorToWorker): void {
    try {
      this.endpoint?.send(msg);
    } catch {
      this.teardown("worker_crashed");
    }
  }

  private finish(id: number): Pending | undefined {
    const p = this.pending.get(id);
    if (!p) return undefined;
    clearTimeout(p.deadlineTimer);
    if (p.waitTimer) clearTimeout(p.waitTimer);
    if (p.graceTimer) clearTimeout(p.graceTimer);
    p.detach();
    this.pending.delete(id);
    return p;
  }

  private failAll(err: UiError): void {
    for (const id of [...this.pending.keys()]) this.finish(id)?.reject(err);
  }

  /** Resolves once a worker is ready, so request deadlines never include start-up. */
  private async ensureStarted(signal?: AbortSignal): Promise<void> {
    if (this.state === "ready") return;
    if (this.state === "starting") return this.waitReady(signal);
    const wait = this.nextStartAt - Date.now();
    if (wait > 0) {
      this.state = "backoff";
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, wait);
        signal?.addEventListener(
          "abort",
          () => {
            clearTimeout(t);
            reject(uiError("cancelled"));
          },
          { once: true },
        );
      });
      const now = this.state as WorkerStats["state"]; // another caller may have started it meanwhile
      if (now === "ready") return;
      if (now === "starting") return this.waitReady(signal);
    }
    this.state = "starting";
    // Nothing is served before the last worker's presses are released and the guardian listens.
    await this.releasing;
    const guarded = (await this.opts.guardian?.ready()) ?? false;
    if (this.closed) {
      this.state = "stopped";
      for (const w of [...this.readyWaiters]) w(false);
      throw uiError("platform_unavailable", "The server is shutting down.");
    }
    this.start(guarded);
    return this.waitReady(signal);
  }

  private waitReady(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        // A worker that cannot even start in time is as good as crashed.
        this.teardown("worker_crashed");
        reject(uiError("worker_crashed", "The platform worker did not start."));
      }, this.opts.startTimeoutMs ?? 30_000);
      const onAbort = () => {
        cleanup();
        reject(uiError("cancelled"));
      };
      const waiter = (ok: boolean) => {
        cleanup();
        if (ok) resolve();
        else reject(uiError("worker_crashed"));
      };
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.readyWaiters.delete(waiter);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.readyWaiters.add(waiter);
    });
  }

  private start(guarded: boolean): void {
    const generation = ++this.generation;
    this.state = "starting";
    this.teardownReason = null;
    this.source = guarded ? `${this.kind}-${process.pid}-${generation}` : null;
    const guardian = this.source === null ? null : (this.opts.guardian?.addressFor(this.source) ?? null);
    let init: WorkerInit = guardian ? { ...this.opts.init, guardian } : this.opts.init;
    if (this.opts.isolation === "thread") {
      const orphans = takeOrphanSegments(this.kind);
      if (orphans.length > 0) init = { ...init, orphan_segments: orphans };
    }
    const onMessage = (raw: unknown) => {
      if (generation === this.generation) this.onMessage(raw);
    };
    const onExit = () => {
      if (generation === this.generation) this.onExit();
    };
    this.endpoint =
      this.opts.isolation === "process"
        ? this.forkProcess(init, onMessage, onExit)
        : this.opts.isolation === "inline"
          ? this.runInline(init, onMessage, onExit)
          : this.spawnThread(init, onMessage, onExit);
    if (this.opts.isolation === "process" && this.opts.dialogGate)
      this.safeSend({ type: "dialog_state", open: this.opts.dialogGate.open });
    if (this.restarts > 0 || this.crashes > 0 || this.timeouts > 0) this.restarts += 1;
  }

  /**
   * A thread starts from the one entry that loads the kind's modules and survives their failing
   * to load (src/workers/entry.ts); a process runs the kind's main itself (its exit closes all
   * it had open, and its command line names its kind).
   */
  private entryPath(): string {
    const entry = this.opts.isolation === "process" ? `${this.kind}/main.js` : "entry.js";
    return fileURLToPath(new URL(`../../workers/${entry}`, import.meta.url));
  }

  private spawnThread(init: WorkerInit, onMessage: (m: unknown) => void, onExit: () => void): Endpoint {
    const { port1, port2 }: { port1: MessagePort; port2: MessagePort } = new MessageChannel();
    const worker = new Worker(this.entryPath(), {
      workerData: { init, port: port2, dialogFlag: this.opts.dialogGate?.buffer },
      transferList: [port2],
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      // Never let a worker write to our stdout: it carries MCP frames.
      stdout: true,
      stderr: true,
    });
    worker.stdout.on("data", (d: Buffer) =>
      this.opts.logger.debug({ kind: this.kind, bytes: d.length }, "worker_stdout_dropped"),
    );
    worker.stderr.on("data", (d: Buffer) =>
      this.opts.logger.debug({ kind: this.kind, bytes: d.length }, "worker_stderr"),
    );
    port1.on("message", onMessage);
    liveThreadPorts.add(port1);
    worker.on("error", () => {
      /* the exit event follows and does the accounting */
    });
    // The X connections it opened in native code outlive a terminated thread (Node closes what
    // it opened itself): closed here, or every stopped worker would leave X clients behind and
    // a grab it held would stay held (src/supervisor/hosting/nativeFds.ts).
    let native: NativeFd[] = [];
    let segments: readonly SharedSegment[] = [];
    worker.on("exit", () => {
      closeNativeFds(native);
      native = [];
      // Still mapped in this process: the next worker of the kind detaches them.
      leaveOrphanSegments(this.kind, segments);
      segments = [];
      port1.close();
      liveThreadPorts.delete(port1);
      // The thread's isolate went back to malloc: a live thread worker gives it back to the
      // system (malloc_trim is process-wide); with none left, the next one to start does.
      for (const other of liveThreadPorts) {
        other.postMessage({ type: "trim_malloc" } satisfies SupervisorToWorker);
        break;
      }
      onExit();
    });
    return {
      send: (msg) => port1.postMessage(msg),
      kill: async () => {
        await worker.terminate();
      },
      adoptNativeFds: (fds) => {
        native = adoptNativeFds(fds);
      },
      adoptSegments: (s) => {
        segments = s;
      },
    };
  }

  /**
   * The dispatcher on this thread (tests). Loaded lazily so a server never imports the worker
   * modules; a kill stops the dispatcher and reports the exit on a later turn, as a thread's
   * exit event would.
   */
  private runInline(init: WorkerInit, onMessage: (m: unknown) => void, onExit: () => void): Endpoint {
    const flag = this.opts.dialogGate?.buffer;
    const worker = import("../../workers/inline.js").then((m) => m.startInlineWorker(init, flag, onMessage));
    let alive = true;
    return {
      send: (msg) => {
        if (!alive) throw new Error("stopped");
        void worker.then((w) => w.deliver(msg));
      },
      kill: async () => {
        if (!alive) return;
        alive = false;
        await (await worker).stop();
        setImmediate(onExit);
      },
    };
  }

  private forkProcess(init: WorkerInit, onMessage: (m: unknown) => void, onExit: () => void): Endpoint {
    const child: ChildProcess = fork(this.entryPath(), [], {
      serialization: "advanced",
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      env: {
        ...process.env,
        ...mallocArenaEnv(),
        ...this.opts.env,
        UIINSPECT_WORKER_INIT: JSON.stringify(init),
        UIINSPECT_SERVER_PID: String(process.pid),
        UIINSPECT_HOST_PID: String(process.ppid),
      },
      // The same heap bounds as this process's threads (src/supervisor/heap.ts): the old
      // generations' growth and the memory mode only where boundHeap set them, never over an
      // operator's own heap flags.
      execArgv: [`--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`, ...workerProcessHeapFlags()],
    });
    child.stdout?.on("data", (d: Buffer) =>
      this.opts.logger.debug({ kind: this.kind, bytes: d.length }, "worker_stdout_dropped"),
    );
    child.stderr?.on("data", (d: Buffer) =>
      this.opts.logger.debug({ kind: this.kind, bytes: d.length }, "worker_stderr"),
    );
    child.on("message", onMessage);
    child.on("error", () => {
      /* exit follows */
    });
    child.on("exit", onExit);
    return {
      send: (msg) => {
        if (!child.connected) throw new Error("disconnected");
        child.send(msg);
      },
      kill: async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        await new Promise<void>((resolve) => {
          child.once("exit", () => resolve());
          child.kill("SIGKILL");
        });
      },
    };
  }

  private onMessage(raw: unknown): void {
    const parsed = WorkerToSupervisorSchema.safeParse(raw);
    if (!parsed.success) {
      this.opts.logger.warn({ kind: this.kind }, "worker_message_rejected");
      return;
    }
    const msg = parsed.data;
    if (msg.type === "ready") {
      this.endpoint?.adoptNativeFds?.(msg.native_fds ?? []);
      this.state = "ready";
      for (const w of [...this.readyWaiters]) w(true);
      return;
    }
    if (msg.type === "native_segments") {
      this.endpoint?.adoptSegments?.(msg.segments);
      return;
    }
    if (msg.type === "log") {
      this.opts.logger[msg.level]({ kind: this.kind, ...msg.fields }, msg.event);
      return;
    }
    const p = this.finish(msg.id);
    for (const check of this.drainWaiters) check();
    if (!p) return; // cancelled or already failed
    if (!msg.ok) {
      p.reject(UiError.fromBody(msg.error));
      return;
    }
    const settle = (result: { success: true; data: unknown } | { success: false }) => {
      if (!result.success) {
        this.opts.logger.warn({ kind: this.kind, op: p.op }, "worker_result_rejected");
        p.reject(uiError("platform_unavailable", "The worker returned a malformed result."));
        return;
      }
      this.consecutiveFailures = 0;
      p.resolve(result.data);
    };
    // Trees are checked in slices, so a big walk's answer does not hold the event loop (treeResults.ts).
    if (carriesTrees(p.op))
      void parseTreeResult(p.op, msg.result).then(settle, () => settle({ success: false }));
    else settle(OPS[p.op].result.safeParse(msg.result));
  }

  private teardown(reason: "worker_timeout" | "worker_crashed"): void {
    if (this.teardownReason) return;
    this.teardownReason = reason;
    const ep = this.endpoint;
    this.opts.logger.warn({ kind: this.kind, reason }, "worker_teardown");
    if (ep) void ep.kill();
    else this.onExit();
  }

  private onExit(): void {
    const reason = this.teardownReason ?? "worker_crashed";
    // The dead worker may have died holding keys: the guardian lets go of them before the
    // next worker starts (ensureStarted waits for this).
    const source = this.source;
    this.source = null;
    if (source !== null && this.opts.guardian)
      this.releasing = this.opts.guardian.releaseSource(source, RELEASE_BOUND_MS);
    if (reason === "worker_timeout") this.timeouts += 1;
    else this.crashes += 1;
    this.endpoint = null;
    this.generation += 1; // late messages from the dead endpoint are ignored
    this.state = "stopped";
    this.failAll(uiError(reason));
    for (const w of [...this.readyWaiters]) w(false);
    this.consecutiveFailures += 1;
    const base = this.opts.backoffBaseMs ?? 100;
    const max = this.opts.backoffMaxMs ?? 5000;
    this.nextStartAt = Date.now() + Math.min(max, base * 2 ** (this.consecutiveFailures - 1));
    this.teardownReason = null;
    for (const l of this.exitListeners) l(reason);
    if (!this.closed) this.opts.logger.info({ kind: this.kind, reason }, "worker_exited");
  }
}

/** A caller's own wait ended (CallOptions.waitMs): the worker goes on. */
function notInTime(): UiError {
  return uiError("worker_timeout", "The worker did not answer in time.");
}
