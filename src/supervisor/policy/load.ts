import { quoteClientValue } from "../../shared/echo.js";
import { isWindowsStylePath, normalizeExecutablePath } from "../../shared/identity.js";
import { type IntSetting, SETTINGS } from "../../shared/settings.js";
import { checkSetting, type Env, readText } from "../../shared/settingsReader.js";
import { readPolicyFile } from "./parse.js";
import { BUILTIN_PROTECTED, CAPABILITIES, type Capability, isCapability, type PolicyFile } from "./schema.js";

type PolicyRect = [number, number, number, number];

export interface PolicyLimits {
  max_png_bytes: number;
  max_actions_per_minute: number;
  max_text_chars_per_minute: number;
  max_screenshot_pixels_per_minute: number;
}

/** The operator's ceiling, whichever source it came from. Only this shape leaves the policy module. */
export interface EffectivePolicy {
  source: "env" | "file";
  policy_id: string | null;
  expires_at: Date | null;
  title_patterns: string[];
  /**
   * Normalized (normalizeExecutablePath). A window needs one of these AND a matching title; an
   * empty list (env mode without DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS) admits no window.
   */
  process_paths: string[];
  allowed_actions: ReadonlySet<Capability>;
  /**
   * False only in env mode without DESKTOP_AUTOMATION_ALLOWED_ACTIONS: then no tool but
   * health_check is authorized (docs/spec.md §4), discovery included.
   */
  actions_configured: boolean;
  /** The operator's folder of coordinate profiles (absolute), or null: profile tools are refused. */
  profiles_dir: string | null;
  /** Built-in protected set ∪ the file's protected_actions. */
  protected_actions: ReadonlySet<Capability>;
  safe_regions: { name: string; rect: PolicyRect; description?: string }[];
  /** Window-relative rects; masks given by region_name are resolved to that region's rect. */
  screenshot_masks: PolicyRect[];
  limits: PolicyLimits;
  /** DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS=true; honoured in env mode only. */
  allow_unrestricted_screenshots: boolean;
}

export type PolicyErrorCode =
  | "policy_conflict"
  | "policy_invalid"
  | "policy_unreadable"
  | "policy_insecure"
  | "policy_expired";

/** Which policy source(s) the operator configured ("file+env" only as a conflict). */
export type ConfiguredSource = "env" | "file" | "file+env";

export type PolicyState =
  | { status: "none" }
  | { status: "error"; code: PolicyErrorCode; reasons: string[]; source: ConfiguredSource }
  | { status: "ok"; policy: EffectivePolicy };

/** The policy's variables, named by the settings table (src/shared/settings.ts). */
export const ENV = {
  titles: SETTINGS.allowedTitles.env,
  processPaths: SETTINGS.allowedProcessPaths.env,
  actions: SETTINGS.allowedActions.env,
  file: SETTINGS.policyFile.env,
  profilesDir: SETTINGS.profilesDir.env,
  unrestrictedScreenshots: SETTINGS.allowUnrestrictedScreenshots.env,
  maxActions: SETTINGS.maxActionsPerMinute.env,
  maxTextChars: SETTINGS.maxTextCharsPerMinute.env,
  maxScreenshotPixels: SETTINGS.maxScreenshotPixelsPerMinute.env,
} as const;

export const DEFAULT_LIMITS: Readonly<PolicyLimits> = {
  max_png_bytes: 8 * 1024 * 1024,
  max_actions_per_minute: SETTINGS.maxActionsPerMinute.default,
  max_text_chars_per_minute: SETTINGS.maxTextCharsPerMinute.default,
  max_screenshot_pixels_per_minute: SETTINGS.maxScreenshotPixelsPerMinute.default,
};

function splitList(value: string, sep: string): string[] {
  return value
    .split(sep)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

const error = (code: PolicyErrorCode, reasons: string[], source: ConfiguredSource): PolicyState => ({
  status: "error",
  code,
  reasons,
  source,
});

/**
 * Builds the policy from the environment (docs/spec.md §4). Sources are never merged: a policy file
 * together with any DESKTOP_AUTOMATION_ALLOWED_* variable is policy_conflict, so no operator
 * setting is ever silently ignored. Nothing here does I/O except reading the policy file.
 */
export function loadPolicy(env: Env, now: () => Date): PolicyState {
  const file = readText(env, SETTINGS.policyFile);
  const envPolicyVars = [SETTINGS.allowedTitles, SETTINGS.allowedProcessPaths, SETTINGS.allowedActions]
    .filter((s) => readText(env, s) !== null)
    .map((s) => s.env);
  if (file !== null && envPolicyVars.length > 0) {
    return error(
      "policy_conflict",
      envPolicyVars.map((n) => `${n} is set together with ${ENV.file}; use exactly one policy source`),
      "file+env",
    );
  }
  // The env policy exists iff DESKTOP_AUTOMATION_ALLOWED_TITLES is set; without any source there is no policy.
  if (file === null && readText(env, SETTINGS.allowedTitles) === null) return { status: "none" };
  const limits = envLimits(env);
  if (file === null) return fromEnv(env, limits);
  if (!limits.ok) return error("policy_invalid", limits.reasons, "file");
  const profilesDir = envProfilesDir(env);
  if (!profilesDir.ok) return error("policy_invalid", profilesDir.reasons, "file");
  return policyStatusAt(fromFile(file, limits.value, profilesDir.value), now);
}

/**
 * Expiry must be re-checked on every use since time passes: an ok policy whose expires_at has
 * been reached becomes policy_expired. An unusable clock reading fails closed.
 */
export function policyStatusAt(state: PolicyState, now: () => Date): PolicyState {
  if (state.status !== "ok" || state.policy.expires_at === null) return state;
  const t = now().getTime();
  if (Number.isFinite(t) && t < state.policy.expires_at.getTime()) return state;
  return error(
    "policy_expired",
    [`expires_at: the policy expired at ${state.policy.expires_at.toISOString()}`],
    state.policy.source,
  );
}

type Checked<T> = { ok: true; value: T } | { ok: false; reasons: string[] };

/** A limit from the environment through the settings table, or the built-in default when unset. */
function envLimit(env: Env, s: IntSetting): Checked<number> {
  const r = checkSetting(env, s);
  return r.ok ? { ok: true, value: r.value ?? s.default } : { ok: false, reasons: [r.reason] };
}

/**
 * Limits from the environment over the built-in defaults. They apply in both modes; in file mode
 * each field the file's `limits` sets overrides them (the file is the more specific statement of
 * the operator's intent), and fields it leaves out keep these values.
 */
function envLimits(env: Env): Checked<PolicyLimits> {
  const actions = envLimit(env, SETTINGS.maxActionsPerMinute);
  const text = envLimit(env, SETTINGS.maxTextCharsPerMinute);
  const pixels = envLimit(env, SETTINGS.maxScreenshotPixelsPerMinute);
  if (!actions.ok || !text.ok || !pixels.ok) {
    return { ok: false, reasons: [actions, text, pixels].flatMap((c) => (c.ok ? [] : c.reasons)) };
  }
  return {
    ok: true,
    value: {
      max_png_bytes: DEFAULT_LIMITS.max_png_bytes,
      max_actions_per_minute: actions.value,
      max_text_chars_per_minute: text.value,
      max_screenshot_pixels_per_minute: pixels.value,
    },
  };
}

/**
 * DESKTOP_AUTOMATION_PROFILES_DIR: the profiles folder in env mode, and in file mode when the
 * file names none (like the limits: the file is the more specific statement). Must be absolute.
 */
function envProfilesDir(env: Env): Checked<string | null> {
  const raw = readText(env, SETTINGS.profilesDir)?.trim();
  if (raw === undefined) return { ok: true, value: null };
  if (!isWindowsStylePath(raw) && !raw.startsWith("/"))
    return { ok: false, reasons: [`${ENV.profilesDir}: must be a full (absolute) path`] };
  return { ok: true, value: raw };
}

function fromEnv(env: Env, limits: Checked<PolicyLimits>): PolicyState {
  const reasons: string[] = limits.ok ? [] : [...limits.reasons];
  const profilesDir = envProfilesDir(env);
  if (!profilesDir.ok) reasons.push(...profilesDir.reasons);

  const titles = splitList(readText(env, SETTINGS.allowedTitles) ?? "", ",");
  if (titles.length === 0) reasons.push(`${ENV.titles}: contains no title pattern`);

  const paths = splitList(readText(env, SETTINGS.allowedProcessPaths) ?? "", ";");
  for (const p of paths) {
    if (!isWindowsStylePath(p) && !p.startsWith("/")) {
      reasons.push(`${ENV.processPaths}: ${quoteClientValue(p)} is not a full (absolute) path`);
    }
  }

  // Unset means no actions at all, and no tool but health_check (docs/spec.md §4).
  const actionsValue = readText(env, SETTINGS.allowedActions);
  const allowed = new Set<Capability>();
  for (const name of splitList(actionsValue ?? "", ",")) {
    if (isCapability(name)) allowed.add(name);
    else
      reasons.push(
        `${ENV.actions}: unknown action ${quoteClientValue(name)} (known: ${CAPABILITIES.join(", ")})`,
      );
  }

  const unrestricted = checkSetting(env, SETTINGS.allowUnrestrictedScreenshots);
  if (!unrestricted.ok) reasons.push(unrestricted.reason);

  if (!limits.ok || !profilesDir.ok || reasons.length > 0) return error("policy_invalid", reasons, "env");
  return {
    status: "ok",
    policy: {
      source: "env",
      policy_id: null,
      expires_at: null,
      title_patterns: titles,
      process_paths: [...new Set(paths.map(normalizeExecutablePath))],
      allowed_actions: allowed,
      actions_configured: actionsValue !== null,
      profiles_dir: profilesDir.value,
      protected_actions: new Set(BUILTIN_PROTECTED),
      safe_regions: [],
      screenshot_masks: [],
      limits: limits.value,
      allow_unrestricted_screenshots: unrestricted.ok && unrestricted.value === "true",
    },
  };
}

function fromFile(path: string, envDefaults: PolicyLimits, envProfiles: string | null): PolicyState {
  const read = readPolicyFile(path);
  if (!read.ok) return error(read.code, read.reasons, "file");
  return { status: "ok", policy: effectiveFromFile(read.policy, envDefaults, envProfiles) };
}

/** A validated policy file as the effective policy. Exported for validate-policy's summary. */
export function effectiveFromFile(
  p: PolicyFile,
  envDefaults: PolicyLimits = DEFAULT_LIMITS,
  envProfiles: string | null = null,
): EffectivePolicy {
  const regions = (p.safe_regions ?? []).map((r) => ({
    name: r.name,
    rect: [...r.rect] as PolicyRect,
    ...(r.description !== undefined ? { description: r.description } : {}),
  }));
  const byName = new Map(regions.map((r) => [r.name, r.rect]));
  const masks: PolicyRect[] = [];
  for (const m of p.screenshot_masks ?? []) {
    // The schema guarantees region_name names a region.
    const rect = "rect" in m ? m.rect : byName.get(m.region_name);
    if (rect) masks.push([...rect] as PolicyRect);
  }
  return {
    source: "file",
    policy_id: p.policy_id,
    expires_at: p.expires_at !== undefined ? new Date(p.expires_at) : null,
    title_patterns: [...p.application.title_patterns],
    process_paths: [normalizeExecutablePath(p.application.executable_path)],
    allowed_actions: new Set(p.allowed_actions),
    actions_configured: true,
    profiles_dir: p.profiles_dir ?? envProfiles,
    protected_actions: new Set([...BUILTIN_PROTECTED, ...(p.protected_actions ?? [])]),
    safe_regions: regions,
    screenshot_masks: masks,
    limits: { ...envDefaults, ...p.limits },
    allow_unrestricted_screenshots: false,
  };
}
