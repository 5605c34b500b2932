import { readFileSync } from "node:fs";

/** Fields of a /proc/<pid>/stat line (proc(5)), by their number there (counted from 1). */
export const STAT = { ppid: 4, nice: 19, policy: 41 } as const;

/** A /proc stat file's text, or null when the task or process went away between listing and reading. */
export function readStat(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** Field `n` of a stat line, counted after the parenthesised name (which may hold spaces). */
export function statField(stat: string, n: number): number {
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[n - 3]);
}
