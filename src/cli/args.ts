import { resolve } from "node:path";
import { type ParseArgsConfig, parseArgs } from "node:util";
import { REMOTE_FLAG_OPTIONS } from "../remote/options.js";
import { checkSettingValue, flaggedSettings, remoteSettings, type Setting } from "../shared/settings.js";

/**
 * The command line: every verb's flags in one table, parsed strictly by node:util.parseArgs
 * (an unknown flag is a usage error naming it, exit 2). Settings flags come from the settings
 * table (src/shared/settings.ts): a flag sets its environment variable for this process and its
 * workers, and the variable is the fallback when the flag is absent. Loads nothing heavy.
 */

type Options = NonNullable<ParseArgsConfig["options"]>;

export type VerbName =
  | "serve"
  | "demo"
  | "doctor"
  | "validate-policy"
  | "validate-profile"
  | "validate-revocations"
  | "manager"
  | "broker"
  | "sandbox"
  | "help";

interface VerbSpec {
  /** After the verb in the usage line. */
  synopsis: string;
  summary: string;
  /** Verb-specific flags (help text and, for flags with a value, the value's name, by flag name). */
  options: Options;
  optionHelp: Record<string, string>;
  optionArg?: Record<string, string>;
  /** Whether the settings flags (--policy, --audit-file, …) apply. */
  settings: boolean;
  positionals: { min: number; max: number };
  /**
   * The verb's own flags are handed on as argv to its runner, which parses them itself
   * (manager's --hours, serve's remote-mode flags).
   */
  forward?: boolean;
}

const HELP: Options = { help: { type: "boolean", short: "h" } };

/** A verb without flags or positionals of its own, unless `spec` says otherwise. */
const verbSpec = (synopsis: string, summary: string, spec: Partial<VerbSpec> = {}): VerbSpec => ({
  synopsis,
  summary,
  options: {},
  optionHelp: {},
  settings: false,
  positionals: { min: 0, max: 0 },
  ...spec,
});

export const VERBS: Record<VerbName, VerbSpec> = {
  // serve's own flags (remote mode) are handed on to src/remote/options.ts, which parses them.
  serve: verbSpec("[--http HOST:PORT …] [flags]", "run the MCP server on stdio (the default verb)", {
    options: REMOTE_FLAG_OPTIONS,
    optionHelp: Object.fromEntries(remoteSettings().map((s) => [s.flag, settingHelp(s)])),
    optionArg: Object.fromEntries(remoteSettings().map((s) => [s.flag, flagArgument(s)])),
    settings: true,
    forward: true,
  }),
  doctor: verbSpec("[--json] [flags]", "check every part the server needs; exit 0 usable, 1 unusable", {
    options: { json: { type: "boolean" } },
    optionHelp: { json: "print the checks as one JSON object" },
    settings: true,
  }),
  demo: verbSpec("", "walk the simulated desktop with a built-in MCP client"),
  "validate-policy": verbSpec("FILE", "check a policy file (exit 0 valid, 1 invalid)", {
    positionals: { min: 1, max: 1 },
  }),
  "validate-profile": verbSpec("FILE", "check a coordinate profile (exit 0 valid, 1 invalid)", {
    positionals: { min: 1, max: 1 },
  }),
  "validate-revocations": verbSpec(
    "FILE",
    "check a revocation list for serve --revoked (exit 0 valid, 1 invalid)",
    { positionals: { min: 1, max: 1 } },
  ),
  manager: verbSpec(
    "lease activate --hours N | lease extend --hours N | lease status | lease revoke",
    "ask the lease broker for an unattended lease (docs/lease.md)",
    {
      options: { hours: { type: "string" } },
      optionHelp: { hours: "lease length in hours (activate, extend)" },
      optionArg: { hours: "N" },
      positionals: { min: 2, max: 2 },
      forward: true,
    },
  ),
  broker: verbSpec("", "the unattended-lease broker (started by the manager)"),
  sandbox: verbSpec(
    "start [--app PROGRAM] [--dir DIR] | stop [DIR]",
    "a private X11 desktop (Xvfb, openbox, session bus, AT-SPI) for trials and CI; prints what to export",
    {
      options: { app: { type: "string" }, dir: { type: "string" } },
      optionHelp: {
        app: "start this program on it and wait for its window (e.g. gtk3-widget-factory)",
        dir: "the state folder (default: a new one under $TMPDIR)",
      },
      positionals: { min: 1, max: 2 },
    },
  ),
  help: verbSpec("[VERB]", "this text, or one verb's", { positionals: { min: 0, max: 1 } }),
};

const isVerb = (s: string): s is VerbName => Object.hasOwn(VERBS, s);

function settingOptions(): Options {
  return Object.fromEntries(flaggedSettings().map((s) => [s.flag, { type: "string" as const }]));
}

/** The name a flag's argument has in help: the table's placeholder, the words, or N. */
function flagArgument(s: Setting & { flag: string }): string {
  if (s.placeholder !== undefined) return s.placeholder;
  if (s.kind === "text") return "TEXT";
  if (s.kind === "choice")
    return s.values.length <= 3 ? s.values.join("|") : (s.flag.split("-").pop()?.toUpperCase() ?? "WORD");
  return "N";
}

function flagLabel(s: Setting & { flag: string }): string {
  return `--${s.flag} ${flagArgument(s)}`;
}

/** A setting's help line: its documentation, the words when they are many, its variable. */
function settingHelp(s: Setting & { flag: string }): string {
  const words = s.kind === "choice" && s.values.length > 3 ? ` (${s.values.join(", ")})` : "";
  const range = s.kind === "int" ? ` (${s.min}–${s.max}, default ${s.default})` : "";
  return `${s.doc.replaceAll("`", "")}${words}${range}; env ${s.env}`;
}

function columns(rows: [string, string][]): string {
  const w = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, b]) => `  ${a.padEnd(w)}  ${b}`).join("\n");
}

export function usage(): string {
  const rows = (Object.keys(VERBS) as VerbName[]).map(
    (v) => [`${v} ${VERBS[v].synopsis}`.trim(), VERBS[v].summary] as [string, string],
  );
  return [
    "usage: uiinspect-mcp [VERB] [flags]",
    "",
    columns(rows),
    "",
    columns([
      ["--version, -V", "print the version"],
      ["--help, -h", "this text; VERB --help for one verb"],
    ]),
    "",
  ].join("\n");
}

export function verbUsage(verb: VerbName): string {
  const spec = VERBS[verb];
  const rows: [string, string][] = Object.keys(spec.options).map((f) => [
    `--${f}${spec.options[f].type === "string" ? ` ${spec.optionArg?.[f] ?? "TEXT"}` : ""}`,
    spec.optionHelp[f] ?? "",
  ]);
  if (spec.settings) for (const s of flaggedSettings()) rows.push([flagLabel(s), settingHelp(s)]);
  rows.push(["--help, -h", "this text"]);
  return [
    `usage: uiinspect-mcp ${verb} ${spec.synopsis}`.trimEnd(),
    "",
    `  ${spec.summary}`,
    "",
    columns(rows),
    "",
    ...(spec.settings
      ? ["A flag wins over its environment variable. All settings: docs/reference.md.", ""]
      : []),
  ].join("\n");
}

export type CommandLine =
  | { kind: "version" }
  | { kind: "help"; text: string }
  | { kind: "usage_error"; message: string; verb: VerbName | null }
  | {
      kind: "run";
      verb: Exclude<VerbName, "help">;
      values: Record<string, string | boolean | string[] | undefined>;
      positionals: string[];
      /** Environment variables the settings flags set (already checked). */
      env: Record<string, string>;
      /** The verb's own flags again as argv, for a verb with `forward` (else empty). */
      forwarded: string[];
    };

/** A `forward` verb's own flags as `--name value` pairs (a repeated flag once per value). */
function forwardedArgs(spec: VerbSpec, values: Record<string, unknown>): string[] {
  if (!spec.forward) return [];
  const out: string[] = [];
  for (const name of Object.keys(spec.options)) {
    const v = values[name];
    for (const one of Array.isArray(v) ? v : [v]) {
      if (one === true) out.push(`--${name}`);
      else if (typeof one === "string") out.push(`--${name}`, one);
    }
  }
  return out;
}

/** Parses argv (without node and the script). Never throws. */
export function parseCommandLine(argv: string[]): CommandLine {
  const first = argv[0];
  if ((first === "--version" || first === "-V") && argv.length === 1) return { kind: "version" };
  if ((first === "--help" || first === "-h") && argv.length === 1) return { kind: "help", text: usage() };
  // No verb (or flags first) means serve, as MCP clients usually launch it.
  const verb: string = first === undefined || first.startsWith("-") ? "serve" : first;
  const rest = first === undefined || first.startsWith("-") ? argv : argv.slice(1);
  if (!isVerb(verb)) return { kind: "usage_error", message: `unknown verb "${verb}"`, verb: null };
  const spec = VERBS[verb];
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...HELP, ...spec.options, ...(spec.settings ? settingOptions() : {}) },
      strict: true,
      allowPositionals: true,
    });
  } catch (e) {
    // parseArgs names the offending flag ("Unknown option '--bogus'. To specify…"): its first sentence.
    const first = e instanceof Error ? e.message.split(". ")[0] : "bad arguments";
    return { kind: "usage_error", message: first, verb };
  }
  const values = parsed.values as Record<string, string | boolean | string[] | undefined>;
  if (values.help) return { kind: "help", text: verbUsage(verb) };
  if (verb === "help") {
    const about = parsed.positionals[0];
    if (about === undefined) return { kind: "help", text: usage() };
    return isVerb(about)
      ? { kind: "help", text: verbUsage(about) }
      : { kind: "usage_error", message: `unknown verb "${about}"`, verb: null };
  }
  const n = parsed.positionals.length;
  if (n < spec.positionals.min || n > spec.positionals.max) {
    const extra = parsed.positionals[spec.positionals.max];
    return {
      kind: "usage_error",
      message: extra !== undefined ? `unexpected argument "${extra}"` : "missing argument",
      verb,
    };
  }
  const env: Record<string, string> = {};
  if (spec.settings) {
    for (const s of flaggedSettings()) {
      const v = values[s.flag];
      if (typeof v !== "string") continue;
      const problem = checkSettingValue(s, v);
      if (problem) return { kind: "usage_error", message: `--${s.flag} ${problem}`, verb };
      // Paths are made absolute here: the workers and the dialog may run from another directory.
      env[s.env] = s.kind === "text" ? resolve(v.trim()) : v.trim().toLowerCase();
    }
  }
  return {
    kind: "run",
    verb,
    values,
    positionals: parsed.positionals,
    env,
    forwarded: forwardedArgs(spec, values),
  };
}
