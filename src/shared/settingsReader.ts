import { uiError } from "./errors.js";
import {
  type ChoiceSetting,
  type IntSetting,
  parseSettingValue,
  type Setting,
  type SettingFault,
  type SettingValue,
  settingStrictness,
  type TextSetting,
} from "./settings.js";

/**
 * The one reader of the settings table (src/shared/settings.ts): every setting is read from the
 * environment here, parsed by parseSettingValue and, when bad, refused in the words and with
 * the error of its strictness. Pure (the environment is passed in), importable from every thread.
 */

export type Env = Record<string, string | undefined>;

/** A bad value of a setting whose strictness is "exit": the server does not start (exit 2). */
export class ConfigError extends Error {}

/** A setting as read: its value (null = unset), or why the value that is set was refused. */
export type SettingRead<T> = { ok: true; value: T | null } | { ok: false; reason: string };

/**
 * The set value, or undefined when unset. Blanks are unset, but for the whole numbers and words
 * of an "exit" setting only "" is: there blanks are a typo the operator is told about.
 */
function setValue(env: Env, s: Setting): string | undefined {
  const raw = env[s.env];
  if (raw === undefined || raw === "") return undefined;
  const blanksAreBad = settingStrictness(s) === "exit" && s.kind !== "text";
  return blanksAreBad || raw.trim() !== "" ? raw : undefined;
}

/** Why a set value is refused, in the words its reader has always used (never the value). */
export function settingProblem(s: Setting, fault: SettingFault): string {
  const strictness = settingStrictness(s);
  if (s.kind === "text") return `${s.env} must not be empty`;
  if (strictness === "policy_invalid") {
    if (s.kind === "choice") return `${s.env}: must be ${s.values.join(" or ")}`;
    return s.min === 1 && s.max === Number.MAX_SAFE_INTEGER
      ? `${s.env}: must be a positive whole number`
      : `${s.env}: must be a whole number from ${s.min} to ${s.max}`;
  }
  if (s.kind === "choice") return `${s.env} must be one of ${s.values.join(", ")}`;
  if (strictness === "invalid_argument") return `${s.env} must be an integer between ${s.min} and ${s.max}.`;
  return fault === "not_integer"
    ? `${s.env} must be an integer`
    : `${s.env} must be between ${s.min} and ${s.max}`;
}

/** The value of `s` in `env` (null when unset), or the reason it is refused; never throws. */
export function checkSetting<S extends Setting>(env: Env, s: S): SettingRead<SettingValue<S>> {
  const raw = setValue(env, s);
  if (raw === undefined) return { ok: true, value: null };
  const parsed = parseSettingValue(s, raw);
  return parsed.ok
    ? { ok: true, value: parsed.value }
    : { ok: false, reason: settingProblem(s, parsed.fault) };
}

/** The refusal of a bad value, as the setting's strictness says. */
function refuse(s: Setting, reason: string): never {
  switch (settingStrictness(s)) {
    case "invalid_argument":
      throw uiError("invalid_argument", reason);
    case "policy_invalid":
      throw uiError("policy_invalid", reason);
    default:
      throw new ConfigError(reason);
  }
}

/**
 * A whole number or a word: the default when unset; a bad value throws as its strictness says
 * (ConfigError, or UiError invalid_argument / policy_invalid), or gives the default when the
 * strictness is "default".
 */
export function readSetting<S extends IntSetting | ChoiceSetting>(env: Env, s: S): SettingValue<S> {
  const r = checkSetting(env, s);
  if (!r.ok) {
    if (settingStrictness(s) === "default") return s.default as SettingValue<S>;
    refuse(s, r.reason);
  }
  return (r.value ?? s.default) as SettingValue<S>;
}

/**
 * Lenient: the value, or the default when unset or bad, whatever the setting's strictness. For
 * the readers that must never fail on a typo the server itself refuses at start-up (the logger
 * as it loads, the lease broker and manager a person runs).
 */
export function readSettingOrDefault<S extends IntSetting | ChoiceSetting>(env: Env, s: S): SettingValue<S> {
  const r = checkSetting(env, s);
  return (r.ok && r.value !== null ? r.value : s.default) as SettingValue<S>;
}

/** Text as written (a path, a list), or null when unset or blank. */
export function readText(env: Env, s: TextSetting): string | null {
  const r = checkSetting(env, s);
  return r.ok ? r.value : null;
}

/**
 * Whether a "0"/"1" switch is on: exactly "1", nothing looser. For the unsafe test switch, where
 * " 1" or "yes" must leave the guard on (a typo never weakens a security check).
 */
export function switchIsOn(env: Env, s: ChoiceSetting<"0" | "1">): boolean {
  return env[s.env] === "1";
}
