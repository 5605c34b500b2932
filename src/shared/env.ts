/**
 * Tuning variables read inside workers (platform code). Pure: no logging, no throwing. A value
 * that is unset, blank, malformed or out of range gives the documented default, so a typo can
 * never turn a timeout into NaN (setTimeout would fire at once) and never stops a worker from
 * starting. The supervisor's own settings are strict instead (src/supervisor/config.ts).
 */

import type { ChoiceSetting, IntSetting } from "./settings.js";

export type Env = Record<string, string | undefined>;

/** A whole decimal number in [min, max] (surrounding blanks allowed); anything else is `def`. */
export function intEnv(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined) return def;
  const s = raw.trim();
  if (!/^\d{1,15}$/.test(s)) return def;
  const n = Number(s);
  return n >= min && n <= max ? n : def;
}

/** One of `values` (trimmed, case-insensitive); anything else is `def`. */
export function choiceEnv<T extends string>(env: Env, name: string, values: readonly T[], def: T): T {
  const raw = env[name];
  if (raw === undefined) return def;
  const v = raw.trim().toLowerCase();
  return (values as readonly string[]).includes(v) ? (v as T) : def;
}

/** intEnv with the range and default of a settings-table entry (src/shared/settings.ts). */
export function intSetting(env: Env, s: IntSetting): number {
  return intEnv(env, s.env, s.default, s.min, s.max);
}

/** choiceEnv with the words and default of a settings-table entry. */
export function choiceSetting<T extends string>(env: Env, s: ChoiceSetting<T>): T {
  return choiceEnv(env, s.env, s.values, s.default);
}
