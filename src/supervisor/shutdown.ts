import type { Readable, Writable } from "node:stream";

/** Whatever ends the server, its shutdown is over this soon (the host is never held up). */
export const SHUTDOWN_BOUND_MS = 1000;

export type ShutdownCause =
  | "SIGTERM"
  | "SIGINT"
  | "SIGHUP"
  | "stdin_closed"
  | "stdout_closed"
  | "connection_closed"
  | "uncaught_error";

export interface ShutdownLogger {
  debug(fields: Record<string, unknown>, event: string): void;
  error(fields: Record<string, unknown>, event: string): void;
}

export interface ShutdownOptions {
  /**
   * Cancels in-flight input (each gesture releases in its finally), stops the workers, has the
   * guardian release what is left, closes the MCP server. Raced against the bound.
   */
  close(): Promise<void>;
  logger: ShutdownLogger;
  stdin?: Readable;
  stdout?: Writable;
  proc?: NodeJS.Process;
  boundMs?: number;
}

export interface Shutdown {
  /** Resolves with the exit code once the shutdown is over (0 orderly, 1 after an uncaught error). */
  done: Promise<number>;
  /** Starts the shutdown now (the MCP connection closed). */
  begin(cause: ShutdownCause): void;
}

/**
 * The serve verb's single way out. Every orderly end (SIGTERM, SIGINT, SIGHUP, stdin EOF, stdout
 * closed (EPIPE), the connection closed) and an uncaught error in the supervisor all run the same
 * bounded close; closing stdin or stdout is an orderly shutdown (exit 0, no stack trace). Causes
 * are logged by name only, never an exception's text.
 */
export function installShutdown(opts: ShutdownOptions): Shutdown {
  const proc = opts.proc ?? process;
  const stdin = opts.stdin ?? proc.stdin;
  const stdout = opts.stdout ?? proc.stdout;
  const bound = opts.boundMs ?? SHUTDOWN_BOUND_MS;
  let started = false;
  let resolveDone!: (code: number) => void;
  const done = new Promise<number>((r) => {
    resolveDone = r;
  });

  const begin = (cause: ShutdownCause) => {
    if (started) return;
    started = true;
    const code = cause === "uncaught_error" ? 1 : 0;
    // Debug: a normal end (the client closed stdin) must not show as an error line in clients.
    opts.logger.debug({ cause }, "server_stopping");
    const timer = setTimeout(() => {
      opts.logger.error({ cause, bound_ms: bound }, "shutdown_bound_reached");
      resolveDone(code);
    }, bound);
    opts.close().then(
      () => {
        clearTimeout(timer);
        resolveDone(code);
      },
      () => {
        clearTimeout(timer);
        resolveDone(code);
      },
    );
  };

  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) proc.on(sig, () => begin(sig));
  stdin.on("end", () => begin("stdin_closed"));
  stdin.on("close", () => begin("stdin_closed"));
  stdin.on("error", () => begin("stdin_closed"));
  // A client that closed our stdout (EPIPE) is gone: an orderly end, not a crash.
  stdout.on("error", () => begin("stdout_closed"));
  stdout.on("close", () => begin("stdout_closed"));
  proc.on("uncaughtException", (e: unknown) => {
    opts.logger.error({ kind: e instanceof Error ? e.name : typeof e }, "uncaught_error");
    begin("uncaught_error");
  });
  proc.on("unhandledRejection", (e: unknown) => {
    opts.logger.error({ kind: e instanceof Error ? e.name : typeof e }, "uncaught_error");
    begin("uncaught_error");
  });
  return { done, begin };
}
