import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { processExited } from "../../../os/linux/proc.js";
import { announcePid } from "../../../shared/dialogPresence.js";
import { isOwnDialogProcess } from "../ownDialogs.js";

export { announcePid, presenceDir } from "../../../shared/dialogPresence.js";

/**
 * Every dialog of ours (whoever started it: this server, another uiinspect server of this user,
 * or the lease broker) announces itself while it runs with an empty file named after its PID in
 * $XDG_RUNTIME_DIR/uiinspect-mcp-dialogs. The X11 input worker refuses every event while such a
 * file names a live dialog process of ours (checked by /proc, never trusted from the file), so
 * our own input cannot reach a lease dialog the broker shows either. The files can only make us
 * refuse input: a stale one (its process gone) is ignored and removed.
 */

/** Marks this (dialog) process as showing a dialog; the returned function unmarks it. */
export function announceDialog(env: Record<string, string | undefined>): () => void {
  return announcePid(env, process.pid);
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
