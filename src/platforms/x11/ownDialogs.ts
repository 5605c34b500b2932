import { readFileSync, realpathSync } from "node:fs";
import { exePath } from "../../os/linux/proc.js";
import type { WindowInfo } from "../../shared/platform.js";
import { dialogEntryPath } from "./dialog/spawn.js";

/**
 * Our own consent and lease dialogs (shown by this server or by the lease broker) are never
 * listed, never targets and never inspected. They are recognised by the process that
 * owns the window, as the X server reports it (X-Resource client PID) and /proc describes it:
 * node's own executable running our own dialog entry file. Never by title. A process that
 * imitates that command line only hides itself from us, which can only refuse, never allow.
 */

let entry: string | null = null;
let node: string | null = null;

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

export function isOwnDialogProcess(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  entry ??= real(dialogEntryPath());
  node ??= real(process.execPath);
  // The executable first: most windows belong to other programs, whose arguments we never resolve.
  if (exePath(pid) !== node) return false;
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\u0000");
  } catch {
    return false;
  }
  return argv[1] !== undefined && real(argv[1]) === entry;
}

/**
 * A dialog of ours stays in the list only as something that covers other windows: no title, no
 * class, no instance, so discovery leaves it out and a call naming its hwnd is target_not_allowed.
 */
export function concealOwnDialogs(windows: WindowInfo[]): WindowInfo[] {
  return windows.map((w) =>
    w.pid > 0 && isOwnDialogProcess(w.pid) ? { ...w, title: "", window_class: "", instance: null } : w,
  );
}
