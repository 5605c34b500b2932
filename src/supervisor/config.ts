import { resolve } from "node:path";
import type { PlatformName } from "../shared/platform.js";
import { parseSettingValue, SETTINGS } from "../shared/settings.js";
import { ConfigError, type Env, readSetting, readText } from "../shared/settingsReader.js";
import type { Isolation } from "./hosting/workerHost.js";

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
  /** Frames per second a frame stream or a visual wait samples. */
  visualSampleRate: number;
  /** Process-wide bytes of PNG frames frame streams may keep. */
  streamMemoryBytes: number;
  /** Bytes of answers queued for stdout past which the stdio server stops reading requests. */
  stdoutQueueBytes: number;
}

export { ConfigError };

export function platformFor(env: Env, os: NodeJS.Platform = process.platform): PlatformName | null {
  const raw = env[SETTINGS.platform.env];
  if (raw !== undefined && raw.trim() !== "") {
    const forced = parseSettingValue(SETTINGS.platform, raw);
    if (forced.ok) return forced.value;
    throw new ConfigError(`${SETTINGS.platform.env} must be fake, x11, wayland or win32`);
  }
  // A real backend never falls back to the simulated desktop.
  if (os === "win32") return "win32";
  if (os === "linux" || os === "freebsd" || os === "openbsd") {
    // A Wayland session with no X server for us (no Xwayland DISPLAY): the Wayland backend. With
    // DISPLAY set the X11 backend stays the choice, as before.
    const wayland = env.WAYLAND_DISPLAY?.trim();
    const display = env.DISPLAY?.trim();
    return wayland && !display ? "wayland" : "x11";
  }
  return null;
}

export function loadConfig(env: Env = process.env): ServerConfig {
  const platform = platformFor(env);
  const fake = readText(env, SETTINGS.fakeDesktop)?.trim();
  const audit = readText(env, SETTINGS.auditFile)?.trim();
  return {
    platform,
    fakeDesktop: platform === "fake" && fake ? resolve(fake) : null,
    consentTimeoutMs: readSetting(env, SETTINGS.consentTimeoutMs),
    grantTtlMs: readSetting(env, SETTINGS.grantTtlMs),
    treeDeadlineMs: readSetting(env, SETTINGS.treeDeadlineMs),
    isolation: readSetting(env, SETTINGS.isolation),
    focusMode: readSetting(env, SETTINGS.focusMode),
    textMode: readSetting(env, SETTINGS.textMode),
    auditFile: audit ? resolve(audit) : null,
    lease: readSetting(env, SETTINGS.lease),
    logLevel: readSetting(env, SETTINGS.logLevel),
    workerDeadlineMs: readSetting(env, SETTINGS.workerDeadlineMs),
    uiaIdleRetireMs: readSetting(env, SETTINGS.uiaIdleRetireMs),
    visualSampleRate: readSetting(env, SETTINGS.visualSampleRate),
    streamMemoryBytes: readSetting(env, SETTINGS.streamMemoryBytes),
    stdoutQueueBytes: readSetting(env, SETTINGS.stdoutQueueBytes),
  };
}
