import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { exePath, processExited } from "../../os/linux/proc.js";
import { WAYLAND_DIALOG_PROGRAM } from "../../supervisor/consent/dialogInfo.js";
import { presenceDir } from "../x11/dialog/presence.js";

/**
 * Our Wayland consent dialog (a zenity process this server started) is announced while it runs
 * with an empty file named after its PID in the dialog presence folder shared with X11
 * ($XDG_RUNTIME_DIR/uiinspect-mcp-dialogs). The Wayland desktop leaves every announced live
 * process that runs the dialog program out of its listing, so no uiinspect server of this user
 * ever lists, targets or inspects it. A file can only hide a window from us, never admit one; a
 * stale file (its process gone) is removed.
 */

/** Announces a dialog child of ours; the returned function takes it back. */
export function announceChild(env: Record<string, string | undefined>, pid: number): () => void {
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

/** The PIDs of announced live dialog processes (the dialog program, as /proc says). */
export function announcedDialogPids(env: Record<string, string | undefined>): Set<number> {
  const out = new Set<number>();
  const dir = presenceDir(env);
  if (!dir) return out;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 0 || String(pid) !== name) continue;
    if (processExited(pid)) {
      rmSync(join(dir, name), { force: true });
      continue;
    }
    if (exePath(pid) === WAYLAND_DIALOG_PROGRAM) out.add(pid);
  }
  return out;
}
