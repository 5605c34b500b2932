import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { processExited } from "../../../os/linux/proc.js";
import { isOwnDialogProcess } from "../ownDialogs.js";

/**
 * Every dialog of ours (whoever started it: this server, another uiinspect server of this user,
 * or the lease broker) announces itself while it runs with an empty file named after its PID in
 * $XDG_RUNTIME_DIR/uiinspect-mcp-dialogs. The X11 input worker refuses every event while such a
 * file names a live dialog process of ours (checked by /proc, never trusted from the file), so
 * our own input cannot reach a lease dialog the broker shows either. The files can only make us
 * refuse input: a stale one (its process gone) is ignored and removed.
 */

const DIR_NAME = "uiinspect-mcp-dialogs";

export function presenceDir(env: Record<string, string | undefined>): string | null {
  const base = env.XDG_RUNTIME_DIR;
  return base && isAbsolute(base) ? join(base, DIR_NAME) : null;
}

/** Marks this (dialog) process as showing a dialog; the returned function unmarks it. */
export function announceDialog(env: Record<string, string | undefined>): () => void {
  return announcePid(env, process.pid);
}

/** Announces a dialog process by its PID; the returned function takes it back. */
export function announcePid(env: Record<string, string | undefined>, pid: number): () => void {
  const dir = presenceDir(env);
  if (!dir) return () => undefined;
  const file = join(dir, String(pid));
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(file, "", { mode: 0o600 });
  } catch {
    return () => undefined;
  }
  return () => rmSync(file, { force: true });
}

/**
 * The live PIDs the folder names that `accept` takes (checked by /proc, never trusted from the
 * file), up to `limit`; files of processes that are gone are removed.
 */
export function announcedPids(dir: string, accept: (pid: number) => boolean, limit = Infinity): number[] {
  const out: number[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    if (out.length >= limit) break;
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 0 || String(pid) !== name) continue;
    if (processExited(pid)) {
      rmSync(join(dir, name), { force: true });
      continue;
    }
    if (accept(pid)) out.push(pid);
  }
  return out;
}

/** Whether any live dialog process of ours is announced (a few microseconds when none is). */
export function announcedDialogOpen(dir: string): boolean {
  return announcedPids(dir, isOwnDialogProcess, 1).length > 0;
}
