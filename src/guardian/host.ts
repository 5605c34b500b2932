import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { inheritedNodeOptions } from "../lease/brokerNodeOptions.js";
import type { PlatformName } from "../shared/platform.js";
import type { GuardianAddress } from "./link.js";
import { ENV, readLines, SOURCE_PATTERN } from "./wire.js";

/** How long the guardian may take to say it listens. */
const READY_TIMEOUT_MS = 10_000;

export interface GuardianLogger {
  warn(fields: Record<string, unknown>, event: string): void;
  error(fields: Record<string, unknown>, event: string): void;
}

/** A fresh 0700 folder for the socket: under $XDG_RUNTIME_DIR when usable, else the temp folder. */
function privateDir(env: NodeJS.ProcessEnv): string | null {
  for (const base of [env.XDG_RUNTIME_DIR?.trim(), tmpdir()]) {
    if (!base) continue;
    try {
      return mkdtempSync(join(base, "uixg-"));
    } catch {
      // next candidate
    }
  }
  return null;
}

/** What a worker host needs of the guardian (a narrow face, replaceable in tests). */
export interface ReleaseAgent {
  /** Resolves true once the guardian listens, false when it could not start. */
  ready(): Promise<boolean>;
  /** Where a worker with this source name records its presses; null without a guardian. */
  addressFor(source: string): GuardianAddress | null;
  /** Releases what that source still holds; resolves when done or after `boundMs`. */
  releaseSource(source: string, boundMs: number): Promise<void>;
}

/**
 * The supervisor's side of the release guardian (src/guardian/main.ts): spawns it in its own
 * process group (a signal to the server's group does not reach it), keeps its stdin open for as
 * long as the server lives, and asks it to release a dead worker's presses. When this process
 * dies however it dies, the guardian's stdin closes and it releases everything.
 */
/** The guardian's V8 mode (see its spawn). */
export const GUARDIAN_V8_FLAG = "--lite-mode";

export class GuardianHost implements ReleaseAgent {
  private readonly child: ChildProcess | null;
  private readonly socket: string;
  private readonly token = randomBytes(16).toString("hex");
  private readonly dir: string | null;
  private readonly readyP: Promise<boolean>;
  private readonly answers = new Map<string, Array<() => void>>();
  private alive = false;

  constructor(platform: PlatformName, logger: GuardianLogger, env: NodeJS.ProcessEnv = process.env) {
    const entry = fileURLToPath(new URL("./main.js", import.meta.url));
    const windows = process.platform === "win32";
    this.dir = windows ? null : privateDir(env);
    this.socket = windows
      ? `\\\\.\\pipe\\uiinspect-guardian-${this.token.slice(0, 16)}`
      : join(this.dir ?? "", "g.sock");
    if (!existsSync(entry) || (!windows && this.dir === null)) {
      this.child = null;
      this.readyP = Promise.resolve(false);
      logger.error({ reason: "missing" }, "guardian_unavailable");
      return;
    }
    // Module hooks carry over (a loader the server needed, the guardian needs too); an inspector never does.
    // --lite-mode: the guardian runs a few lines per press, and without V8's optimizing
    // compilers it is 51 MB resident instead of 59 (it counts toward the server's memory).
    const child = spawn(
      process.execPath,
      [GUARDIAN_V8_FLAG, ...inheritedNodeOptions(process.execArgv), entry],
      {
        stdio: ["pipe", "pipe", "ignore"],
        detached: process.platform !== "win32",
        windowsHide: true,
        env: {
          ...env,
          [ENV.socket]: this.socket,
          [ENV.token]: this.token,
          [ENV.platform]: platform,
        },
      },
    );
    this.child = child;
    child.stdin?.on("error", () => undefined);
    this.readyP = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        logger.error({ reason: "timeout" }, "guardian_unavailable");
        resolve(false);
      }, READY_TIMEOUT_MS);
      child.once("exit", (code) => {
        clearTimeout(timer);
        if (!this.alive) logger.error({ reason: "exited", code }, "guardian_unavailable");
        else logger.error({ code }, "guardian_exited");
        this.alive = false;
        for (const list of this.answers.values()) for (const a of list.splice(0)) a();
        resolve(false);
      });
      child.once("error", () => undefined);
      if (child.stdout)
        readLines(
          child.stdout,
          (f) => {
            if (f[0] === "ready" && !this.alive) {
              clearTimeout(timer);
              this.alive = true;
              resolve(true);
              return;
            }
            const key = f[0] === "a" ? "a" : `x ${f[1] ?? ""}`;
            this.answers.get(key)?.shift()?.();
          },
          () => undefined,
        );
    });
  }

  ready(): Promise<boolean> {
    return this.readyP;
  }

  addressFor(source: string): GuardianAddress | null {
    if (!this.alive || !SOURCE_PATTERN.test(source)) return null;
    return { socket: this.socket, token: this.token, source };
  }

  releaseSource(source: string, boundMs: number): Promise<void> {
    return this.ask(`x ${source}`, boundMs);
  }

  releaseAll(boundMs: number): Promise<void> {
    return this.ask("a", boundMs);
  }

  /** Releases everything (bounded), then closes the guardian's pipe so it exits. */
  async close(boundMs: number): Promise<void> {
    await this.releaseAll(boundMs);
    this.alive = false;
    try {
      this.child?.stdin?.end();
    } catch {
      // already closed
    }
    this.child?.stdout?.destroy();
    this.child?.unref();
    if (this.dir !== null) rmSync(this.dir, { recursive: true, force: true });
  }

  private ask(line: string, boundMs: number): Promise<void> {
    const stdin = this.child?.stdin;
    if (!this.alive || !stdin?.writable) return Promise.resolve();
    const list = this.answers.get(line) ?? [];
    this.answers.set(line, list);
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        // Late answers must not be taken for a later question's.
        const i = list.indexOf(done);
        if (i >= 0) list.splice(i, 1);
        done();
      }, boundMs);
      list.push(done);
      stdin.write(`${line}\n`);
    });
  }
}
