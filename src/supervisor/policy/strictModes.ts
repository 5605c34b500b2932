import { lstatSync, readlinkSync, type Stats } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { escapeControls } from "../../shared/echo.js";

/**
 * StrictModes for the policy file (as sshd has for authorized_keys): the operator's ceiling is
 * only as trustworthy as the file and every folder on the way to it. Each must be owned by the
 * server's user or root and not writable by group or others; a world-writable folder is accepted
 * only with the sticky bit (as /tmp), and then the entry in it must be owned by the server's user
 * or root, since nobody else can then rename or replace it. Symlinks are followed by hand, so the
 * folder of every link on the way is checked too: no link may lead through a writable place.
 * The answer names the file or folder and the bit, for doctor and validate-policy.
 *
 * POSIX only: on Windows the file's ACL decides, which mode bits do not describe (see
 * docs/security.md).
 */

export type StrictModesResult =
  | { ok: true; file: { dev: number; ino: number } }
  /** Found something unsafe: the reasons name each file or folder and the bit. */
  | { ok: false; insecure: true; reasons: string[] }
  /** The path cannot be walked (missing, not a folder, a link loop): the open will say why. */
  | { ok: false; insecure: false };

const MAX_SYMLINKS = 40;
const S_ISVTX = 0o1000;

function mode(st: Stats): string {
  return (st.mode & 0o7777).toString(8).padStart(4, "0");
}

function writableBits(st: Stats): string | null {
  const g = (st.mode & 0o020) !== 0;
  const o = (st.mode & 0o002) !== 0;
  if (g && o) return "group and others";
  if (g) return "group";
  if (o) return "others";
  return null;
}

/** A path as one shell word, so the printed fix can be pasted as it is. */
function shellWord(p: string): string {
  const safe = escapeControls(p);
  return /^[A-Za-z0-9_./+,:@%-]+$/.test(safe) ? safe : `'${safe.replaceAll("'", "'\\''")}'`;
}

export function checkPolicyPath(path: string, euid = process.geteuid?.() ?? 0): StrictModesResult {
  const trusted = (uid: number) => uid === euid || uid === 0;
  const who = `this user (uid ${euid}) or root`;
  const at = (p: string) => escapeControls(p);
  const problems: string[] = [];

  /** A folder the walk passes through; returns whether entries in it need a trusted owner. */
  const checkDir = (dir: string, st: Stats): boolean => {
    if (!trusted(st.uid)) problems.push(`${at(dir)}: folder owned by uid ${st.uid}, not by ${who}`);
    const bits = writableBits(st);
    if (bits === null) return false;
    if ((st.mode & S_ISVTX) !== 0 && trusted(st.uid)) return true;
    problems.push(
      `${at(dir)}: folder writable by ${bits} (mode ${mode(st)}); fix: chmod go-w ${shellWord(dir)}`,
    );
    return false;
  };

  const todo = resolve(path)
    .split("/")
    .filter((c) => c !== "");
  let cur = "/";
  let sticky = checkDir("/", lstatSync("/"));
  let links = 0;
  for (;;) {
    const name = todo.shift();
    if (name === undefined) break;
    if (name === "..") {
      // `cur` is a real folder, so its parent is lexical; it was checked on the way down.
      cur = resolve(cur, "..");
      const st = lstatSync(cur);
      sticky = writableBits(st) !== null && (st.mode & S_ISVTX) !== 0;
      continue;
    }
    if (name === ".") continue;
    const next = cur === "/" ? `/${name}` : `${cur}/${name}`;
    let st: Stats;
    try {
      st = lstatSync(next);
    } catch {
      return { ok: false, insecure: false };
    }
    if (sticky && !trusted(st.uid))
      problems.push(`${at(next)}: owned by uid ${st.uid} in a shared sticky folder, not by ${who}`);
    if (st.isSymbolicLink()) {
      if (++links > MAX_SYMLINKS) return { ok: false, insecure: false };
      const target = readlinkSync(next);
      todo.unshift(...target.split("/").filter((c) => c !== ""));
      if (isAbsolute(target)) {
        cur = "/";
        sticky = checkDir("/", lstatSync("/"));
      }
      continue;
    }
    if (todo.length > 0) {
      if (!st.isDirectory()) return { ok: false, insecure: false };
      sticky = checkDir(next, st);
      cur = next;
      continue;
    }
    // The file itself.
    if (!trusted(st.uid)) problems.push(`${at(next)}: owned by uid ${st.uid}, not by ${who}`);
    const bits = writableBits(st);
    if (bits !== null)
      problems.push(
        `${at(next)}: writable by ${bits} (mode ${mode(st)}); fix: chmod go-w ${shellWord(next)}`,
      );
    if (problems.length > 0) return { ok: false, insecure: true, reasons: problems };
    return { ok: true, file: { dev: st.dev, ino: st.ino } };
  }
  // The path names "/" itself.
  return { ok: false, insecure: false };
}
