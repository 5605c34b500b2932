/**
 * Lenient reading of a variable that is not in the settings table by name (a range and a
 * default given in place): a value that is unset, blank, malformed or out of range gives the
 * default, so a typo can never turn a timeout into NaN (setTimeout would fire at once). The
 * table's own settings are read by src/shared/settingsReader.ts, which these delegate to.
 */

import { readSetting } from "./settingsReader.js";

export type { Env } from "./settingsReader.js";

import type { Env } from "./settingsReader.js";

/** A whole decimal number in [min, max] (surrounding blanks allowed); anything else is `def`. */
export function intEnv(env: Env, name: string, def: number, min: number, max: number): number {
  return readSetting(env, { kind: "int", env: name, scope: "worker", default: def, min, max, doc: "" });
}

/** One of `values` (trimmed, case-insensitive); anything else is `def`. */
export function choiceEnv<T extends string>(env: Env, name: string, values: readonly T[], def: T): T {
  return readSetting(env, { kind: "choice", env: name, scope: "worker", values, default: def, doc: "" });
}
