import { exePath } from "../../os/linux/proc.js";
import { presenceDir, WAYLAND_DIALOG_PROGRAM } from "../../shared/dialogPresence.js";
import { announcedPids } from "../x11/dialog/presence.js";

/**
 * Our Wayland consent dialog (a zenity process this server started) is announced while it runs
 * with an empty file named after its PID in the dialog presence folder shared with X11
 * ($XDG_RUNTIME_DIR/uiinspect-mcp-dialogs). The Wayland desktop leaves every announced live
 * process that runs the dialog program out of its listing, so no uiinspect server of this user
 * ever lists, targets or inspects it. A file can only hide a window from us, never admit one; a
 * stale file (its process gone) is removed.
 */

/** The PIDs of announced live dialog processes (the dialog program, as /proc says). */
export function announcedDialogPids(env: Record<string, string | undefined>): Set<number> {
  const dir = presenceDir(env);
  if (!dir) return new Set();
  return new Set(announcedPids(dir, (pid) => exePath(pid) === WAYLAND_DIALOG_PROGRAM));
}
