/**
 * Every setting the operator can give, in one table: the environment variable, the CLI flag
 * (when there is one), the allowed range or words, the default, how strictly a bad value is
 * treated and the line of documentation. Every value is read through this table by
 * src/shared/settingsReader.ts (the supervisor's config, budgets, grant and consent lifetimes,
 * the policy's limits, the workers' tunables, the lease broker, doctor); the CLI's flags and the
 * generated tables in README.md and docs/reference.md come from here too, so code and
 * documentation cannot drift apart (test/unit/settings.test.ts).
 *
 * Pure data and pure parsing: no I/O, importable from every thread.
 */

/** Who reads a setting, and so how a bad value is treated. */
export type SettingScope =
  /** The supervisor at start-up: a bad value stops the server (exit 2, doctor says UNUSABLE). */
  | "server"
  /** Part of the environment policy: a bad value makes the policy policy_invalid. */
  | "policy"
  /** Platform code inside the workers: a bad value is ignored and the default applies. */
  | "worker";

/**
 * What a set but bad value does (the error codes and words each reader has always used):
 * - "exit": a ConfigError naming the variable; the server does not start (exit 2). Here only
 *   an empty string counts as unset: blanks are a bad value, so a typo is never silent.
 * - "invalid_argument": a UiError invalid_argument naming the variable and its range (the
 *   server does not start either).
 * - "policy_invalid": a reason of the policy's policy_invalid state.
 * - "default": ignored, the default applies (code that must never fail to start on a typo).
 */
export type SettingStrictness = "exit" | "invalid_argument" | "policy_invalid" | "default";

interface Common {
  env: string;
  /** Long CLI flag (without "--") that sets this variable for the verb; the env var is the fallback. */
  flag?: string;
  scope: SettingScope;
  /** Unset: from the scope (server → exit, policy → policy_invalid, worker → default). */
  strictness?: SettingStrictness;
  /** The default as the documentation shows it (when the raw default alone says too little). */
  defaultDoc?: string;
  doc: string;
  /**
   * "remote": a flag of `serve` only (remote mode, src/remote/options.ts reads it, flag first,
   * then the variable); the others are the settings flags every settings verb takes.
   */
  group?: "remote";
  /** For flags: the argument's name in help ("FILE", "HOST:PORT"; "N" for numbers). */
  placeholder?: string;
}

export interface IntSetting extends Common {
  kind: "int";
  default: number;
  min: number;
  max: number;
}

export interface ChoiceSetting<T extends string = string> extends Common {
  kind: "choice";
  values: readonly T[];
  default: T;
}

/** Free text (a path, a list): `null` default = unset. */
export interface TextSetting extends Common {
  kind: "text";
  default: null;
  /**
   * What the text is, so the CLI knows whether to make it absolute: a path (the default), a
   * path or an https URL, or plain words (an address, a URL, an audience).
   */
  textKind?: "path" | "pathOrUrl" | "plain";
  /** A flag that may be repeated: its values join with commas into the variable. */
  multiple?: boolean;
}

export type Setting = IntSetting | ChoiceSetting | TextSetting;

const int = (s: Omit<IntSetting, "kind">): IntSetting => ({ kind: "int", ...s });
const choice = <const T extends string>(s: Omit<ChoiceSetting<T>, "kind">): ChoiceSetting<T> => ({
  kind: "choice",
  ...s,
});
const text = (s: Omit<TextSetting, "kind" | "default">): TextSetting => ({
  kind: "text",
  default: null,
  ...s,
});

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

export const SETTINGS = {
  platform: choice({
    env: "UIINSPECT_PLATFORM",
    flag: "platform",
    scope: "server",
    values: ["x11", "win32", "wayland", "fake"],
    // The default is chosen from the OS; "x11" only stands for the type.
    default: "x11",
    defaultDoc: "from the OS",
    doc: "`x11`, `win32`, `wayland` or `fake`; unset on Linux: `wayland` when `WAYLAND_DISPLAY` is set and `DISPLAY` is not, else `x11`; a real backend never falls back to `fake`",
  }),
  fakeDesktop: text({
    env: "UIINSPECT_FAKE_DESKTOP",
    flag: "fake-desktop",
    placeholder: "FILE",
    scope: "server",
    doc: "scenario JSON of the simulated desktop (fake only; re-read on change; see docs/reference.md)",
  }),
  policyFile: text({
    env: "DESKTOP_AUTOMATION_POLICY_FILE",
    flag: "policy",
    placeholder: "FILE",
    scope: "policy",
    doc: "policy file (JSON or a narrow YAML subset, ≤ 1 MiB, `schema/policy.schema.json`)",
  }),
  allowedTitles: text({
    env: "DESKTOP_AUTOMATION_ALLOWED_TITLES",
    scope: "policy",
    doc: "env policy: comma-separated, case-insensitive title globs (`*`, `?`)",
  }),
  allowedProcessPaths: text({
    env: "DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS",
    scope: "policy",
    defaultDoc: "— (none)",
    doc: "env policy: `;`-separated absolute executable paths; a window needs an allowed title and an allowed executable, so unset admits no window",
  }),
  allowedActions: text({
    env: "DESKTOP_AUTOMATION_ALLOWED_ACTIONS",
    scope: "policy",
    defaultDoc: "— (none)",
    doc: "env policy: comma-separated capabilities; unset authorizes no tool but `health_check`",
  }),
  profilesDir: text({
    env: "DESKTOP_AUTOMATION_PROFILES_DIR",
    placeholder: "DIR",
    scope: "policy",
    doc: "the one folder coordinate profiles are read from (the policy file's `profiles_dir` wins); unset: profile tools answer `action_not_allowed`",
  }),
  allowUnrestrictedScreenshots: choice({
    env: "DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS",
    scope: "policy",
    values: ["true", "false"],
    default: "false",
    doc: "env policy only: allow crop-path screenshots",
  }),
  focusMode: choice({
    env: "DESKTOP_AUTOMATION_FOCUS_MODE",
    scope: "server",
    values: ["passive", "activate"],
    default: "passive",
    doc: "`activate` brings the target forward for up to ~2 s before input",
  }),
  textMode: choice({
    env: "DESKTOP_AUTOMATION_TEXT_MODE",
    scope: "server",
    values: ["sendinput", "wm_char"],
    default: "sendinput",
    doc: "`wm_char` posts characters to the focused control (Win32)",
  }),
  maxActionsPerMinute: int({
    env: "DESKTOP_AUTOMATION_MAX_ACTIONS_PER_MINUTE",
    scope: "policy",
    default: 120,
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    doc: "per application",
  }),
  maxTextCharsPerMinute: int({
    env: "DESKTOP_AUTOMATION_MAX_TEXT_CHARS_PER_MINUTE",
    scope: "policy",
    default: 20_000,
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    doc: "per application",
  }),
  maxScreenshotPixelsPerMinute: int({
    env: "DESKTOP_AUTOMATION_MAX_SCREENSHOT_PIXELS_PER_MINUTE",
    scope: "policy",
    default: 4 * 16 * 1024 * 1024,
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    defaultDoc: "`67108864` (4 × 16 MP)",
    doc: "per application",
  }),
  screenshotMemoryBudgetBytes: int({
    env: "DESKTOP_AUTOMATION_SCREENSHOT_MEMORY_BUDGET_BYTES",
    scope: "server",
    strictness: "invalid_argument",
    default: 128 * 1024 * 1024,
    min: 1024 * 1024,
    max: 2 * 1024 * 1024 * 1024,
    defaultDoc: "`134217728` (128 MiB)",
    doc: "process-wide image memory, 1 MiB–2 GiB, read once",
  }),
  visualSampleRate: int({
    env: "UIINSPECT_VISUAL_SAMPLE_RATE",
    scope: "server",
    default: 2,
    min: 1,
    max: 10,
    doc: "frames per second a frame stream or wait_for_visual_change samples, 1–10",
  }),
  streamMemoryBytes: int({
    env: "UIINSPECT_STREAM_MEMORY_BYTES",
    scope: "server",
    default: 64 * 1024 * 1024,
    min: 1024 * 1024,
    max: 1024 * 1024 * 1024,
    defaultDoc: "`67108864` (64 MiB)",
    doc: "process-wide cap on frames kept for frame streams (undelivered and last read PNGs), 1 MiB–1 GiB",
  }),
  stdoutQueueBytes: int({
    env: "UIINSPECT_STDOUT_QUEUE_BYTES",
    scope: "server",
    default: 16 * 1024 * 1024,
    min: 64 * 1024,
    max: 1024 * 1024 * 1024,
    defaultDoc: "`16777216` (16 MiB)",
    doc: "stdio: answers queued for a client slow to read stdout; past it no request is read until half has gone out, 64 KiB–1 GiB",
  }),
  maxDiscoveryPerMinute: int({
    env: "UIINSPECT_MAX_DISCOVERY_PER_MINUTE",
    scope: "server",
    strictness: "invalid_argument",
    default: 30,
    min: 1,
    max: 100_000,
    doc: "per client",
  }),
  maxInspectionsPerMinute: int({
    env: "UIINSPECT_MAX_INSPECTIONS_PER_MINUTE",
    scope: "server",
    strictness: "invalid_argument",
    default: 60,
    min: 1,
    max: 100_000,
    doc: "per client (tree, find, screenshots, profile checks)",
  }),
  maxClientActionsPerMinute: int({
    env: "UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE",
    scope: "server",
    strictness: "invalid_argument",
    default: 60,
    min: 1,
    max: 100_000,
    doc: "per client (every effect); why 60: README, Budgets",
  }),
  consentTimeoutMs: int({
    env: "UIINSPECT_CONSENT_TIMEOUT_MS",
    scope: "server",
    default: 60_000,
    min: 100,
    max: 600_000,
    doc: "100–600000 ms; the dialog (consent or lease) closes and fails closed after this",
  }),
  grantTtlMs: int({
    env: "UIINSPECT_GRANT_TTL_MS",
    scope: "server",
    default: 300_000,
    min: 1000,
    max: 86_400_000,
    doc: "grant lifetime, 1000–86400000 ms; renewed silently from the kept decision",
  }),
  treeDeadlineMs: int({
    env: "UIINSPECT_TREE_DEADLINE_MS",
    scope: "server",
    default: 5000,
    min: 50,
    max: 60_000,
    doc: "wall-clock cap of one tree walk, 50–60000 ms (truncates, never hangs)",
  }),
  workerDeadlineMs: int({
    env: "UIINSPECT_WORKER_DEADLINE_MS",
    scope: "server",
    default: 15_000,
    min: 500,
    max: 120_000,
    doc: "per-request worker deadline, 500–120000 ms; a silent worker is torn down",
  }),
  policyWatchMs: int({
    env: "UIINSPECT_POLICY_WATCH_MS",
    scope: "server",
    strictness: "default",
    default: 1000,
    min: 50,
    max: 60_000,
    doc: "how often the policy file is checked for a change, 50–60000 ms (a bad value gives the default)",
  }),
  uiaIdleRetireMs: int({
    env: "UIINSPECT_UIA_IDLE_RETIRE_MS",
    scope: "server",
    default: 300_000,
    min: 0,
    max: 86_400_000,
    doc: "an identity idle this long on an instance loses its automation sessions there (its refs become `element_stale`), and the instance's uia worker stops when none is left, 0–86400000 ms (0 = never)",
  }),
  isolation: choice({
    env: "UIINSPECT_WORKER_ISOLATION",
    flag: "isolation",
    scope: "server",
    values: ["thread", "process"],
    default: "thread",
    doc: "`process` hosts workers in child processes (a native crash kills only that worker)",
  }),
  auditFile: text({
    env: "UIINSPECT_AUDIT_FILE",
    flag: "audit-file",
    placeholder: "FILE",
    scope: "server",
    doc: "append-only JSONL audit sink, created 0600",
  }),
  logLevel: choice({
    env: "UIINSPECT_LOG_LEVEL",
    flag: "log-level",
    scope: "server",
    values: LOG_LEVELS,
    default: "info",
    doc: "pino level (`fatal` … `trace`, `silent`); logs go to stderr only",
  }),
  lease: choice({
    env: "UIINSPECT_LEASE",
    scope: "server",
    values: ["off", "broker"],
    default: "off",
    doc: "`broker` enables the unattended lease (see `docs/lease.md`)",
  }),
  leaseDialog: choice({
    env: "UIINSPECT_LEASE_DIALOG",
    scope: "server",
    strictness: "invalid_argument",
    values: ["x11", "messagebox"],
    default: "x11",
    defaultDoc: "`x11` / `messagebox`",
    doc: "the lease broker's trusted dialog: our own X11 window (Linux) or MessageBox (Windows)",
  }),
  atspiCallTimeoutMs: int({
    env: "UIINSPECT_ATSPI_CALL_TIMEOUT_MS",
    scope: "worker",
    default: 3000,
    min: 100,
    max: 60_000,
    doc: "X11: timeout of one AT-SPI D-Bus call (then `platform_unavailable`); 100–60000",
  }),
  x11RemapSettleMs: int({
    env: "UIINSPECT_X11_REMAP_SETTLE_MS",
    scope: "worker",
    default: 300,
    min: 10,
    max: 5000,
    doc: "X11: wait before a remapped spare keycode is restored or reused; 10–5000",
  }),
  x11TestWithoutXlibXcb: choice({
    env: "UIINSPECT_X11_TEST_WITHOUT_XLIB_XCB",
    scope: "worker",
    values: ["0", "1"],
    default: "0",
    doc: "X11, a test switch: `1` makes each worker's X connection act as without libX11-xcb (the passive-grab probes' core requests go on Xlib, judged by X-Resource)",
  }),
  x11NoShm: choice({
    env: "UIINSPECT_X11_NO_SHM",
    scope: "worker",
    values: ["0", "1"],
    default: "0",
    doc: "X11: `1` captures with `XGetImage` instead of MIT-SHM",
  }),
  unsafeAllowXtestConsent: choice({
    env: "UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT",
    scope: "server",
    values: ["0", "1"],
    default: "0",
    doc: "UNSAFE, tests only: `1` lets injected input of any program (XTest; Win32 SendInput) answer consent dialogs, and on Wayland turns on a consent dialog (zenity) that any program can answer; health_check and doctor warn loudly",
  }),
  http: text({
    env: "UIINSPECT_HTTP",
    flag: "http",
    placeholder: "HOST:PORT",
    textKind: "plain",
    group: "remote",
    scope: "server",
    doc: "remote mode: MCP Streamable HTTP at `HOST:PORT/mcp` instead of stdio (host 127.0.0.1 when left out; `docs/remote.md`)",
  }),
  tlsCert: text({
    env: "UIINSPECT_TLS_CERT",
    flag: "tls-cert",
    placeholder: "FILE",
    group: "remote",
    scope: "server",
    doc: "remote: the server certificate (PEM); required off loopback",
  }),
  tlsKey: text({
    env: "UIINSPECT_TLS_KEY",
    flag: "tls-key",
    placeholder: "FILE",
    group: "remote",
    scope: "server",
    doc: "remote: the server's private key (PEM)",
  }),
  clientCa: text({
    env: "UIINSPECT_CLIENT_CA",
    flag: "client-ca",
    placeholder: "FILE",
    group: "remote",
    scope: "server",
    doc: "remote, mTLS: only clients whose certificate chains to this CA (PEM) connect",
  }),
  maxCertDays: int({
    env: "UIINSPECT_MAX_CERT_DAYS",
    flag: "max-cert-days",
    group: "remote",
    scope: "server",
    default: 30,
    min: 1,
    max: 3650,
    doc: "remote, mTLS: client certificates valid (notAfter − notBefore) longer than this many days are refused",
  }),
  oauthIssuer: text({
    env: "UIINSPECT_OAUTH_ISSUER",
    flag: "oauth-issuer",
    placeholder: "URL",
    textKind: "plain",
    group: "remote",
    scope: "server",
    doc: "remote, OAuth: the issuer (`iss`) Bearer tokens must name (an https URL)",
  }),
  oauthAudience: text({
    env: "UIINSPECT_OAUTH_AUDIENCE",
    flag: "oauth-audience",
    placeholder: "AUDIENCE",
    textKind: "plain",
    group: "remote",
    scope: "server",
    doc: "remote, OAuth: this resource's audience (`aud`), best the URL clients use",
  }),
  oauthJwks: text({
    env: "UIINSPECT_OAUTH_JWKS",
    flag: "oauth-jwks",
    placeholder: "FILE|URL",
    textKind: "pathOrUrl",
    group: "remote",
    scope: "server",
    doc: "remote, OAuth: the issuer's public keys, a JWKS file or an https URL",
  }),
  oauthMaxLifetime: int({
    env: "UIINSPECT_OAUTH_MAX_LIFETIME_S",
    flag: "oauth-max-lifetime",
    group: "remote",
    scope: "server",
    default: 3600,
    min: 1,
    max: 86_400,
    doc: "remote, OAuth: longest token life accepted, seconds (exp − iat, now − iat and exp − now)",
  }),
  oauthClockSkew: int({
    env: "UIINSPECT_OAUTH_CLOCK_SKEW_S",
    flag: "oauth-clock-skew",
    group: "remote",
    scope: "server",
    default: 60,
    min: 0,
    max: 600,
    doc: "remote, OAuth: how far the issuer's clock may differ from ours for `iat`, `nbf` and `exp`, seconds",
  }),
  revokedFile: text({
    env: "UIINSPECT_REVOKED_FILE",
    flag: "revoked",
    placeholder: "FILE",
    group: "remote",
    scope: "server",
    doc: "remote: revoked certificates (SHA-256 of the key or of the certificate) and token `jti`s, one per line (`validate-revocations FILE` checks it)",
  }),
  allowOrigins: text({
    env: "UIINSPECT_ALLOW_ORIGINS",
    flag: "allow-origin",
    placeholder: "ORIGIN",
    textKind: "plain",
    multiple: true,
    group: "remote",
    scope: "server",
    doc: "remote: another browser Origin allowed to send requests (flag repeatable; the variable takes a comma-separated list)",
  }),
  maxSessions: int({
    env: "UIINSPECT_MAX_SESSIONS",
    flag: "max-sessions",
    group: "remote",
    scope: "server",
    default: 64,
    min: 1,
    max: 10_000,
    doc: "remote: MCP sessions at once",
  }),
  maxSessionsPerIdentity: int({
    env: "UIINSPECT_MAX_SESSIONS_PER_IDENTITY",
    flag: "max-sessions-per-identity",
    group: "remote",
    scope: "server",
    default: 16,
    min: 1,
    max: 10_000,
    doc: "remote: sessions one identity may hold at once",
  }),
  maxInflight: int({
    env: "UIINSPECT_MAX_INFLIGHT",
    flag: "max-inflight",
    group: "remote",
    scope: "server",
    default: 256,
    min: 1,
    max: 100_000,
    doc: "remote: requests in flight across all identities (counted once the body has arrived, until answered)",
  }),
  maxInflightPerIdentity: int({
    env: "UIINSPECT_MAX_INFLIGHT_PER_IDENTITY",
    flag: "max-inflight-per-identity",
    group: "remote",
    scope: "server",
    default: 32,
    min: 1,
    max: 100_000,
    doc: "remote: one identity's share of the requests in flight (long waits included)",
  }),
  maxConnectionsPerIdentity: int({
    env: "UIINSPECT_MAX_CONNECTIONS_PER_IDENTITY",
    flag: "max-connections-per-identity",
    group: "remote",
    scope: "server",
    default: 64,
    min: 1,
    max: 100_000,
    doc: "remote: open (keep-alive) connections one identity may hold",
  }),
  idleTimeout: int({
    env: "UIINSPECT_IDLE_TIMEOUT_S",
    flag: "idle-timeout",
    group: "remote",
    scope: "server",
    default: 900,
    min: 1,
    max: 86_400,
    doc: "remote: a session without a POST for this many seconds is closed",
  }),
  headerTimeout: int({
    env: "UIINSPECT_HEADER_TIMEOUT_S",
    flag: "header-timeout",
    group: "remote",
    scope: "server",
    default: 10,
    min: 1,
    max: 300,
    doc: "remote: seconds a connection has to send a request's headers (and finish the TLS handshake)",
  }),
  bodyTimeout: int({
    env: "UIINSPECT_BODY_TIMEOUT_S",
    flag: "body-timeout",
    group: "remote",
    scope: "server",
    default: 10,
    min: 1,
    max: 300,
    doc: "remote: seconds a request has to send its body once its headers arrived (then 408)",
  }),
  win32Dialog: choice({
    env: "UIINSPECT_WIN32_DIALOG",
    scope: "worker",
    values: ["taskdialog", "messagebox"],
    default: "taskdialog",
    doc: "Win32 consent dialog: `messagebox` uses `MessageBoxW` only",
  }),
} as const satisfies Record<string, Setting>;

export type SettingKey = keyof typeof SETTINGS;

/** The settings flags every settings verb takes (not remote mode's), in table order. */
export function flaggedSettings(): Array<Setting & { flag: string }> {
  const all: Setting[] = Object.values(SETTINGS);
  return all.filter((s): s is Setting & { flag: string } => s.flag !== undefined && s.group === undefined);
}

/** Remote mode's settings (serve's own flags), in table order. */
export function remoteSettings(): Array<Setting & { flag: string }> {
  const all: Setting[] = Object.values(SETTINGS);
  return all.filter((s): s is Setting & { flag: string } => s.flag !== undefined && s.group === "remote");
}

/** How strictly a bad value of `s` is treated (see SettingStrictness). */
export function settingStrictness(s: Setting): SettingStrictness {
  if (s.strictness !== undefined) return s.strictness;
  return s.scope === "server" ? "exit" : s.scope === "policy" ? "policy_invalid" : "default";
}

/** What the value may be, for errors and help: "100–600000", "one of thread, process". */
export function settingRange(s: Setting): string {
  if (s.kind === "int") return `a whole number from ${s.min} to ${s.max}`;
  if (s.kind === "choice") return `one of ${s.values.join(", ")}`;
  return "text";
}

/** Why a set value was refused. */
export type SettingFault = "not_integer" | "out_of_range" | "not_a_choice" | "empty";

export type ParsedSetting<T> = { ok: true; value: T } | { ok: false; fault: SettingFault };

export type SettingValue<S extends Setting> = S extends IntSetting
  ? number
  : S extends ChoiceSetting<infer T>
    ? T
    : string;

/**
 * The one parser of a set value: a whole decimal number in the range (surrounding blanks
 * allowed), one of the words (trimmed, case-insensitive), or any text that is not blank (given
 * back as written: its reader decides about blanks inside, as a path may hold them).
 */
export function parseSettingValue<S extends Setting>(s: S, raw: string): ParsedSetting<SettingValue<S>>;
export function parseSettingValue(s: Setting, raw: string): ParsedSetting<number | string> {
  const v = raw.trim();
  if (s.kind === "int") {
    if (!/^\d+$/.test(v)) return { ok: false, fault: "not_integer" };
    const n = Number(v);
    return Number.isSafeInteger(n) && n >= s.min && n <= s.max
      ? { ok: true, value: n }
      : { ok: false, fault: "out_of_range" };
  }
  if (s.kind === "choice") {
    const w = v.toLowerCase();
    return (s.values as readonly string[]).includes(w)
      ? { ok: true, value: w }
      : { ok: false, fault: "not_a_choice" };
  }
  return v === "" ? { ok: false, fault: "empty" } : { ok: true, value: raw };
}

/**
 * Checks a flag's value as the reader of its variable would; returns an error line or null.
 * Text values are checked by their readers (a missing policy file is a policy finding).
 */
export function checkSettingValue(s: Setting, raw: string): string | null {
  const r = parseSettingValue(s, raw);
  if (r.ok) return null;
  return r.fault === "empty" ? "must not be empty" : `must be ${settingRange(s)}`;
}
