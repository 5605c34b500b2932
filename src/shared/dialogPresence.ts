import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";

/**
 * The dialog presence folder: every consent dialog of ours announces its PID there while it runs
 * (an empty file named after it). Writing needs nothing but the file system, so the supervisor
 * can announce a dialog child it started; reading, which checks each PID against /proc, is the
 * platforms' (src/platforms/x11/dialog/presence.ts).
 */

const DIR_NAME = "uiinspect-mcp-dialogs";

/** The Wayland consent dialog's program: started by absolute path, checked root-owned and not writable by others. */
export const WAYLAND_DIALOG_PROGRAM = "/usr/bin/zenity";

export function presenceDir(env: Record<string, string | undefined>): string | null {
  const base = env.XDG_RUNTIME_DIR;
  return base && isAbsolute(base) ? join(base, DIR_NAME) : null;
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
