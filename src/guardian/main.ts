import { rmSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { dirname } from "node:path";
import { SETTINGS } from "../shared/settings.js";
import { readText } from "../shared/settingsReader.js";
import { decodeEntry } from "./entries.js";
import { Guardian, type Releaser, type RemapJournal } from "./guardian.js";
import { ENV, readLines, SOURCE_PATTERN, TOKEN_PATTERN } from "./wire.js";

/**
 * The release guardian: a tiny process beside the server (no MCP, no policy, one platform
 * connection). Input workers record every press and remap here before emitting it; whatever
 * ends a worker or the server, the guardian lets go of what is still held and puts the keymap
 * back. It lives exactly as long as the server's pipe to it (its stdin) and ignores signals
 * meant for the server's process group, so it outlives a SIGKILL of the server.
 */

/** However the releases go, the guardian is gone this long after its pipe closed. */
const EXIT_BOUND_MS = 2000;
/** A worker must say hello this soon after connecting. */
const HELLO_TIMEOUT_MS = 5000;
/** After the pipe closed, the workers' connections are awaited this long before the second pass. */
const WORKERS_GONE_MS = 1000;

/** Resolves once every socket in `open` has closed, or after `boundMs`. */
function allClosed(open: Set<Socket>, boundMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, boundMs);
    timer.unref();
    const check = () => {
      if (open.size > 0) return;
      clearTimeout(timer);
      resolve();
    };
    for (const sock of open) sock.once("close", () => setImmediate(check));
    check();
  });
}

async function makeReleaser(platform: string): Promise<{ releaser: Releaser; journal: RemapJournal | null }> {
  if (platform === "x11") {
    const { X11Releaser } = await import("./x11Releaser.js");
    const { FileRemapJournal, stateDir } = await import("./journal.js");
    const releaser = new X11Releaser();
    const dir = stateDir();
    const scope = `x11-${process.env.DISPLAY ?? ""}`;
    if (dir === null) return { releaser, journal: null };
    // Remaps and auto-repeats left by a run that died with its guardian: repaired before anything else.
    const left = FileRemapJournal.leftovers(dir, scope);
    for (const r of [...left.remaps, ...left.repeats]) {
      try {
        if (r.kind === "remap") releaser.restoreRemap(r.code, r.keysym);
        else releaser.restoreRepeat(r.code);
      } catch {
        // one failed restore does not stop the others
      }
    }
    left.forget();
    return { releaser, journal: new FileRemapJournal(dir, scope) };
  }
  if (platform === "win32") {
    const { Win32Releaser } = await import("./win32Releaser.js");
    return { releaser: new Win32Releaser(), journal: null };
  }
  if (platform === "wayland") {
    // The Wayland backend presses nothing (its input port refuses every key and button), so
    // there is never anything of ours to let go of.
    return { releaser: { release: async () => {}, close: () => {} }, journal: null };
  }
  if (platform === "fake") {
    const path = readText(process.env, SETTINGS.fakeDesktop);
    if (!path) throw new Error("no scenario");
    const { FakeReleaser } = await import("./fakeReleaser.js");
    return { releaser: new FakeReleaser(path), journal: null };
  }
  throw new Error("unknown platform");
}

function serveWorker(guardian: Guardian, token: string, sock: Socket, open: Set<Socket>): void {
  let source: string | null = null;
  open.add(sock);
  const hello = setTimeout(() => sock.destroy(), HELLO_TIMEOUT_MS);
  const say = (line: string) => {
    if (!sock.destroyed) sock.write(`${line}\n`);
  };
  sock.on("error", () => undefined);
  sock.on("close", () => {
    open.delete(sock);
    clearTimeout(hello);
    // The worker's end closed: it died or finished; anything it still held is released.
    if (source !== null) void guardian.releaseSource(source);
  });
  readLines(
    sock,
    (f) => {
      if (source === null) {
        if (f[0] === "hello" && f[1] === token && f[2] !== undefined && SOURCE_PATTERN.test(f[2]) && !f[3]) {
          clearTimeout(hello);
          source = f[2];
          say("hi");
        } else sock.destroy();
        return;
      }
      const entry = decodeEntry(f.slice(1));
      if (entry === null || (f[0] !== "+" && f[0] !== "-")) {
        sock.destroy();
        return;
      }
      if (f[0] === "+") say(guardian.hold(source, [entry]) ? "ok" : "no");
      else guardian.released(source, [entry]);
    },
    () => sock.destroy(),
  );
}

async function main(): Promise<void> {
  const socketPath = process.env[ENV.socket] ?? "";
  const token = process.env[ENV.token] ?? "";
  const platform = process.env[ENV.platform] ?? "";
  if (!socketPath || !TOKEN_PATTERN.test(token)) process.exit(2);
  // The server's signals are not ours: we end when its pipe does (after releasing).
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(sig, () => undefined);
  process.stdout.on("error", () => undefined);
  const say = (line: string) => {
    if (process.stdout.writable) process.stdout.write(`${line}\n`);
  };

  const { releaser, journal } = await makeReleaser(platform);
  const guardian = new Guardian(releaser, journal);
  const workers = new Set<Socket>();
  const server = createServer((sock) => serveWorker(guardian, token, sock, workers));
  let ending = false;
  const end = () => {
    if (ending) return;
    ending = true;
    setTimeout(() => process.exit(0), EXIT_BOUND_MS).unref();
    server.close();
    // Release now, then again once the workers are gone: one told "ok" just before the pipe
    // closed may make its change after the first pass (workers die with the server).
    const released = guardian
      .shutdown()
      .then(() => allClosed(workers, WORKERS_GONE_MS))
      .then(() => guardian.settle());
    void released.finally(() => {
      releaser.close();
      if (process.platform !== "win32") rmSync(dirname(socketPath), { recursive: true, force: true });
      process.exit(0);
    });
  };
  process.stdin.on("end", end);
  process.stdin.on("close", end);
  process.stdin.on("error", end);
  readLines(
    process.stdin,
    (f) => {
      if (f[0] === "x" && f[1] !== undefined && SOURCE_PATTERN.test(f[1]) && !f[2]) {
        const src = f[1];
        void guardian.releaseSource(src).then(() => say(`x ${src}`));
      } else if (f[0] === "a" && f.length === 1) void guardian.releaseAll().then(() => say("a"));
    },
    () => undefined,
  );
  server.on("error", () => end());
  server.listen(socketPath, () => say("ready"));
}

main().catch(() => process.exit(1));
