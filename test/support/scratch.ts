import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Scratch folders of one test file, removed when the file ends (run-file.ts), whatever failed:
 * a policy, a built attacker, what a target wrote. Only the folders this file made, never a
 * sweep of /tmp, which another run on the same machine may be using.
 */
const made: string[] = [];

/** A new folder `$TMPDIR/uix-<prefix>-XXXXXX`, removed after the file's last test. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `uix-${prefix}-`));
  made.push(dir);
  return dir;
}

/** Removes every folder scratchDir made in this file. */
export function removeScratchDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
