import { Worker } from "node:worker_threads";
import { isUiError, uiError } from "../shared/errors.js";
import type { LeaseScope } from "./endpoint.js";
import { type FromPipeLink, FromPipeLinkSchema, type ToPipeLink } from "./linkMessages.js";
import type { LeaseLink, LinkHandlers, LinkOpener, OpenLinkOptions } from "./linkPort.js";

/**
 * The LeaseClient's Windows link: one worker (native/windowsPipeLinkWorker.ts) for the
 * client's life, started at prepare() or first use, reused across reconnects so its start-up
 * (koffi, zod, a reader thread) is paid once. Native code never runs on the calling thread.
 */

/** Longest the link worker may take to start (module loading; seconds under Wine). */
const BOOT_TIMEOUT_MS = 20_000;
/** How long the worker may take to close its pipe and exit before it is terminated. */
const SHUTDOWN_GRACE_MS = 3000;

interface Pending {
  conn: number;
  handlers: LinkHandlers;
  state: "opening" | "open" | "ended";
  resolve: (v: { link: LeaseLink; scope: LeaseScope }) => void;
  reject: (e: unknown) => void;
  timer: NodeJS.Timeout | null;
}

export class WindowsPipeLinkHost implements LinkOpener {
  private worker: Worker | null = null;
  private booting: Promise<Worker> | null = null;
  private current: Pending | null = null;
  private seq = 0;
  private disposed = false;

  prepare(): void {
    this.boot().catch(() => {});
  }

  async open(opts: OpenLinkOptions, handlers: LinkHandlers): Promise<{ link: LeaseLink; scope: LeaseScope }> {
    // The request's own deadline covers a link still starting (prepare() usually started it long ago).
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), opts.timeoutMs);
    });
    try {
      const r = await Promise.race([this.boot(), late]);
      if (r === "late") throw uiError("broker_unavailable", "The lease link is still starting.");
    } catch (e) {
      throw isUiError(e) ? e : uiError("broker_unavailable", "The lease link could not be started.");
    } finally {
      clearTimeout(timer);
    }
    this.end(this.current);
    return new Promise((resolve, reject) => {
      const conn = ++this.seq;
      const p: Pending = { conn, handlers, state: "opening", resolve, reject, timer: null };
      this.current = p;
      // The worker enforces the deadline itself; this only covers a worker that stops answering.
      p.timer = setTimeout(() => {
        if (p.state !== "opening") return;
        this.post({ t: "close", conn });
        p.state = "ended";
        reject(uiError("broker_unavailable", "The lease broker did not accept the connection in time."));
      }, opts.timeoutMs + 1000);
      this.post({
        t: "connect",
        conn,
        scope: opts.scope,
        env: { LOCALAPPDATA: opts.env.LOCALAPPDATA, USERPROFILE: opts.env.USERPROFILE },
        timeout_ms: opts.timeoutMs,
      });
    });
  }

  /**
   * Closes the connection and stops the worker. The worker closes the pipe itself: handles are
   * process-wide, so terminating the thread would leave the connection open until process exit.
   * Bounded: a booting worker ≤ 20 s, then ≤ 3 s grace before it is terminated.
   */
  async dispose(): Promise<void> {
    this.disposed = true;
    this.end(this.current);
    const w = this.worker ?? (await this.booting?.catch(() => null)) ?? null;
    this.worker = null;
    this.booting = null;
    if (!w) return;
    // Referenced while it shuts down: an idle link is unref'd, and a caller awaiting this with
    // nothing else pending (the manager CLI between its probe and its request) would otherwise
    // see the process exit in the middle, silently, with code 0.
    w.ref();
    const exited = new Promise<void>((resolve) => w.once("exit", () => resolve()));
    w.postMessage({ t: "shutdown" } satisfies ToPipeLink);
    let graceTimer: NodeJS.Timeout | undefined;
    const grace = new Promise<"late">((resolve) => {
      graceTimer = setTimeout(() => resolve("late"), SHUTDOWN_GRACE_MS);
    });
    try {
      if ((await Promise.race([exited, grace])) === "late") await w.terminate();
    } finally {
      clearTimeout(graceTimer);
    }
  }

  private post(m: ToPipeLink): void {
    this.worker?.postMessage(m);
  }

  /** Ends a connection from this side (no `closed` callback: the caller already knows). */
  private end(p: Pending | null): void {
    if (!p || p.state === "ended") return;
    if (p.timer) clearTimeout(p.timer);
    if (p.state === "opening") p.reject(uiError("broker_unavailable"));
    p.state = "ended";
    this.post({ t: "close", conn: p.conn });
  }

  /** The worker's word on the current connection: opened, refused, data, closed. */
  private onConnectionMessage(m: Exclude<FromPipeLink, { t: "ready" }>): void {
    const p = this.current;
    if (!p || p.conn !== m.conn) return;
    if (m.t === "open" && p.state === "opening") {
      if (p.timer) clearTimeout(p.timer);
      p.state = "open";
      const conn = p.conn;
      p.resolve({
        scope: m.scope,
        link: {
          write: (frame) => {
            if (p.state === "open") this.post({ t: "write", conn, frame: new Uint8Array(frame) });
          },
          destroy: () => this.end(p),
        },
      });
    } else if (m.t === "refused" && p.state === "opening") {
      if (p.timer) clearTimeout(p.timer);
      p.state = "ended";
      p.reject(uiError("broker_unavailable", m.message));
    } else if (m.t === "data" && p.state === "open") {
      p.handlers.data(Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength));
    } else if (m.t === "closed") {
      this.closed(p);
    }
  }

  /** The connection ended from the other side (or with the worker): a pending open fails. */
  private closed(p: Pending): void {
    const wasOpen = p.state === "open";
    if (p.timer) clearTimeout(p.timer);
    if (p.state === "opening") p.reject(uiError("broker_unavailable"));
    p.state = "ended";
    if (wasOpen) p.handlers.closed();
  }

  private boot(): Promise<Worker> {
    if (this.disposed) return Promise.reject(new Error("disposed"));
    if (this.worker) return Promise.resolve(this.worker);
    if (this.booting) return this.booting;
    const booting = new Promise<Worker>((resolve, reject) => {
      let w: Worker;
      try {
        w = new Worker(new URL("./native/windowsPipeLinkWorker.js", import.meta.url), {
          stdout: true,
          stderr: true,
        });
      } catch (e) {
        reject(e);
        return;
      }
      // An idle link must not keep the process alive (pending requests have their own timers).
      w.unref();
      let ready = false;
      const timer = setTimeout(() => {
        if (ready) return;
        void w.terminate();
        reject(new Error("boot timeout"));
      }, BOOT_TIMEOUT_MS);
      w.on("message", (raw: unknown) => {
        const parsed = FromPipeLinkSchema.safeParse(raw);
        if (!parsed.success) return;
        const m = parsed.data;
        if (m.t === "ready") {
          if (ready) return;
          ready = true;
          clearTimeout(timer);
          if (this.disposed) {
            void w.terminate();
            reject(new Error("disposed"));
            return;
          }
          this.worker = w;
          resolve(w);
          return;
        }
        this.onConnectionMessage(m);
      });
      const gone = () => {
        clearTimeout(timer);
        if (!ready) reject(new Error("link worker exited"));
        if (this.worker === w) this.worker = null;
        if (this.booting === booting) this.booting = null;
        const p = this.current;
        if (p && p.state !== "ended") this.closed(p);
      };
      w.on("error", gone);
      w.on("exit", gone);
    });
    this.booting = booting;
    booting.catch(() => {
      if (this.booting === booting) this.booting = null;
    });
    return booting;
  }
}
