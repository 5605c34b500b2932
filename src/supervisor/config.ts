import { resolve } from "node:path";
import type { PlatformName } from "../shared/platform.js";
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
}

export class ConfigError extends Error {}

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return def;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}`);
  return n;
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], def: T): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return def;
  const v = raw.trim().toLowerCase();
  if (!(values as readonly string[]).includes(v))
    throw new ConfigError(`${name} must be one of ${values.join(", ")}`);
  return v as T;
}

export function platformFor(env: Env, os: NodeJS.Platform = process.platform): PlatformName | null {
  const forced = env.UIINSPECT_PLATFORM?.trim().toLowerCase();
  if (forced === "fake" || forced === "x11" || forced === "win32") return forced;
  if (forced) throw new ConfigError("UIINSPECT_PLATFORM must be fake, x11 or win32");
  // A real backend never falls back to the simulated desktop.
  if (os === "win32") return "win32";
  if (os === "linux" || os === "freebsd" || os === "openbsd") return "x11";
  return null;
}

export function loadConfig(env: Env = process.env): ServerConfig {
  const platform = platformFor(env);
  const fake = env.UIINSPECT_FAKE_DESKTOP?.trim();
  return {
    platform,
    fakeDesktop: platform === "fake" && fake ? resolve(fake) : null,
    consentTimeoutMs: int(env, "UIINSPECT_CONSENT_TIMEOUT_MS", 60_000, 100, 600_000),
    grantTtlMs: int(env, "UIINSPECT_GRANT_TTL_MS", 300_000, 1000, 86_400_000),
    treeDeadlineMs: int(env, "UIINSPECT_TREE_DEADLINE_MS", 5000, 50, 60_000),
    isolation: oneOf(env, "UIINSPECT_WORKER_ISOLATION", ["thread", "process"] as const, "thread"),
    focusMode: oneOf(env, "DESKTOP_AUTOMATION_FOCUS_MODE", ["passive", "activate"] as const, "passive"),
    textMode: oneOf(env, "DESKTOP_AUTOMATION_TEXT_MODE", ["sendinput", "wm_char"] as const, "sendinput"),
    auditFile: env.UIINSPECT_AUDIT_FILE?.trim() ? resolve(env.UIINSPECT_AUDIT_FILE.trim()) : null,
    lease: oneOf(env, "UIINSPECT_LEASE", ["off", "broker"] as const, "off"),
    logLevel: env.UIINSPECT_LOG_LEVEL?.trim() || "info",
    workerDeadlineMs: int(env, "UIINSPECT_WORKER_DEADLINE_MS", 15_000, 500, 120_000),
  };
}
