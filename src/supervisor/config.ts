import { resolve } from "node:path";
import type { PlatformName } from "../shared/platform.js";
import { type ChoiceSetting, type IntSetting, SETTINGS } from "../shared/settings.js";
import type { Isolation } from "./workerHost.js";

type Env = Record<string, string | undefined>;

/** Everything the supervisor reads from the environment, read once at start-up. */
export interface ServerConfig {
  /** null = no backend for this OS (everything touching a window is platform_unavailable). */
  platform: PlatformName | null;
  fakeDesktop: string | null;
  consentTimeoutMs: number;
  grantTtlMs: number;
  treeDeadlineMs: number;
  isolation: Isolation;
  focusMode: "passive" | "activate";
  textMode: "sendinput" | "wm_char";
  auditFile: string | null;
  lease: "off" | "broker";
  logLevel: string;
  /** Per-request worker deadline for ordinary calls. */
  workerDeadlineMs: number;
  /** A grant's uia worker idle this long is retired (0 = never). */
  uiaIdleRetireMs: number;
}

export class ConfigError extends Error {}

/** Range and default from the settings table (src/shared/settings.ts); a bad value is a ConfigError. */
function int(env: Env, s: IntSetting): number {
  const raw = env[s.env];
  if (raw === undefined || raw === "") return s.default;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${s.env} must be an integer`);
  const n = Number(raw.trim());
  if (n < s.min || n > s.max) throw new ConfigError(`${s.env} must be between ${s.min} and ${s.max}`);
  return n;
}

function oneOf<T extends string>(env: Env, s: ChoiceSetting<T>): T {
  const raw = env[s.env];
  if (raw === undefined || raw === "") return s.default;
  const v = raw.trim().toLowerCase();
  if (!(s.values as readonly string[]).includes(v))
    throw new ConfigError(`${s.env} must be one of ${s.values.join(", ")}`);
  return v as T;
}

export function platformFor(env: Env, os: NodeJS.Platform = process.platform): PlatformName | null {
  const forced = env[SETTINGS.platform.env]?.trim().toLowerCase();
  if (forced === "fake" || forced === "x11" || forced === "win32") return forced;
  if (forced) throw new ConfigError(`${SETTINGS.platform.env} must be fake, x11 or win32`);
  // A real backend never falls back to the simulated desktop.
  if (os === "win32") return "win32";
  if (os === "linux" || os === "freebsd" || os === "openbsd") return "x11";
  return null;
}

export function loadConfig(env: Env = process.env): ServerConfig {
  const platform = platformFor(env);
  const fake = env[SETTINGS.fakeDesktop.env]?.trim();
  const audit = env[SETTINGS.auditFile.env]?.trim();
  return {
    platform,
    fakeDesktop: platform === "fake" && fake ? resolve(fake) : null,
    consentTimeoutMs: int(env, SETTINGS.consentTimeoutMs),
    grantTtlMs: int(env, SETTINGS.grantTtlMs),
    treeDeadlineMs: int(env, SETTINGS.treeDeadlineMs),
    isolation: oneOf(env, SETTINGS.isolation),
    focusMode: oneOf(env, SETTINGS.focusMode),
    textMode: oneOf(env, SETTINGS.textMode),
    auditFile: audit ? resolve(audit) : null,
    lease: oneOf(env, SETTINGS.lease),
    logLevel: oneOf(env, SETTINGS.logLevel),
    workerDeadlineMs: int(env, SETTINGS.workerDeadlineMs),
    uiaIdleRetireMs: int(env, SETTINGS.uiaIdleRetireMs),
  };
}
