import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { processExited, startTicks } from "../os/linux/proc.js";
import type { HeldEntry, KeyboardStateEntry } from "../shared/pressLedger.js";
import type { RemapJournal } from "./guardian.js";

type Remap = Extract<HeldEntry, { kind: "remap" }>;
type Repeat = Extract<HeldEntry, { kind: "repeat" }>;

const FileSchema = z.object({
  pid: z.number().int().positive(),
  start_ticks: z.number().int().nonnegative().nullable(),
  remaps: z.array(
    z.object({ code: z.number().int().min(0).max(255), keysym: z.number().int().min(0).max(0x1ffffff) }),
  ),
  /** Keycodes whose auto-repeat a hold turned off (absent in files of older guardians). */
  repeats: z.array(z.number().int().min(0).max(255)).default([]),
});

/**
 * Our private state folder: $XDG_RUNTIME_DIR/uiinspect-mcp, else one under the temp folder named
 * for our uid. Used only when it is a real folder we own that nobody else can write (a folder
 * another user planted is never trusted); null otherwise.
 */
export function stateDir(env: NodeJS.ProcessEnv = process.env): string | null {
  const uid = typeof process.getuid === "function" ? process.getuid() : null;
  if (uid === null) return null;
  const base = env.XDG_RUNTIME_DIR?.trim() ? env.XDG_RUNTIME_DIR.trim() : tmpdir();
  const dir = join(base, env.XDG_RUNTIME_DIR?.trim() ? "uiinspect-mcp" : `uiinspect-mcp-${uid}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) return null;
    return dir;
  } catch {
    return null;
  }
}

const scopeName = (scope: string) => scope.replace(/[^A-Za-z0-9._-]/g, "_");

/**
 * The spare keycodes this guardian has remapped right now, and the keycodes whose auto-repeat a
 * hold turned off, one small file per guardian (`remaps-<display>-<pid>.json`), rewritten
 * atomically on every change and removed when empty. A later guardian on the same display
 * repairs what one whose process is gone left changed.
 */
export class FileRemapJournal implements RemapJournal {
  private readonly path: string;

  constructor(dir: string, scope: string) {
    this.path = join(dir, `remaps-${scopeName(scope)}-${process.pid}.json`);
  }

  write(changes: readonly KeyboardStateEntry[]): void {
    const remaps = changes.filter((c): c is Remap => c.kind === "remap");
    const repeats = changes.filter((c): c is Repeat => c.kind === "repeat");
    if (changes.length === 0) {
      try {
        unlinkSync(this.path);
      } catch {
        // nothing to remove
      }
      return;
    }
    const body = {
      pid: process.pid,
      start_ticks: startTicks(process.pid),
      remaps: remaps.map((r) => ({ code: r.code, keysym: r.keysym })),
      repeats: repeats.map((r) => r.code),
    };
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, JSON.stringify(body), { mode: 0o600 });
    renameSync(tmp, this.path);
  }

  /**
   * The remaps and turned-off auto-repeats left by guardians of this display whose process is
   * gone (a pid reused by another process has another start time), and a function that forgets
   * them once repaired.
   */
  static leftovers(dir: string, scope: string): { remaps: Remap[]; repeats: Repeat[]; forget(): void } {
    const prefix = `remaps-${scopeName(scope)}-`;
    const files: string[] = [];
    const remaps: Remap[] = [];
    const repeats: Repeat[] = [];
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      names = [];
    }
    for (const name of names) {
      if (!name.startsWith(prefix) || !name.endsWith(".json")) continue;
      const path = join(dir, name);
      try {
        const parsed = FileSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
        if (!parsed.success) continue;
        const { pid, start_ticks } = parsed.data;
        const alive = !processExited(pid) && (start_ticks === null || startTicks(pid) === start_ticks);
        if (alive) continue;
        files.push(path);
        for (const r of parsed.data.remaps) remaps.push({ kind: "remap", code: r.code, keysym: r.keysym });
        for (const code of parsed.data.repeats) repeats.push({ kind: "repeat", code });
      } catch {
        // unreadable: not ours to judge
      }
    }
    return {
      remaps,
      repeats,
      forget: () => {
        for (const f of files) {
          try {
            unlinkSync(f);
          } catch {
            // already gone
          }
        }
      },
    };
  }
}
