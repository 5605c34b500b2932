import { randomBytes } from "node:crypto";
import { renameSync, type Stats, statSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { readBoundedFile } from "../../shared/boundedFile.js";
import { uiError } from "../../shared/errors.js";
import { type Rect, RectSchema } from "../../shared/geometry.js";
import { type ElementState, STATES } from "../../shared/states.js";
import { formatPath, MAX_REPORTED_PROBLEMS, parseStrictJson } from "../../shared/strictJson.js";

/**
 * The scenario file of the simulated desktop (docs/spec.md §10). Every object is strict: an
 * unknown field is an error (a typo in a test's scenario must not be silently ignored).
 * A file that does not parse or validate never replaces the last good state.
 */

export const ColorSchema = z.string().regex(/^#[0-9a-fA-F]{6}$/, "expected a colour as #rrggbb");

/** Pattern names a node may declare; act() uses the first five. */
export const PatternNameSchema = z.enum([
  "invoke",
  "toggle",
  "selection_item",
  "expand_collapse",
  "value",
  "selection",
  "scroll",
  "scroll_item",
  "range_value",
  "text",
  "window",
  "grid",
  "table",
]);
export type PatternName = z.infer<typeof PatternNameSchema>;

export interface ScenarioNode {
  role: string;
  name: string;
  automation_id?: string | undefined;
  class_name?: string | undefined;
  /** Window-relative. */
  rect?: Rect | undefined;
  patterns?: PatternName[] | undefined;
  is_password?: boolean | undefined;
  enabled?: boolean | undefined;
  offscreen?: boolean | undefined;
  focused?: boolean | undefined;
  /** States beyond enabled/focused/offscreen (checked, expanded, selected, …). */
  states?: ElementState[] | undefined;
  children?: ScenarioNode[] | undefined;
}

export const ScenarioNodeSchema: z.ZodType<ScenarioNode, ScenarioNode> = z.lazy(() =>
  z.strictObject({
    role: z.string().min(1),
    name: z.string(),
    automation_id: z.string().optional(),
    class_name: z.string().optional(),
    rect: RectSchema.optional(),
    patterns: z.array(PatternNameSchema).optional(),
    is_password: z.boolean().optional(),
    enabled: z.boolean().optional(),
    offscreen: z.boolean().optional(),
    focused: z.boolean().optional(),
    states: z.array(z.enum(STATES)).optional(),
    children: z.array(ScenarioNodeSchema).optional(),
  }),
);

export const FaultKindSchema = z.enum(["throw", "exit", "hang", "segv"]);
export type FaultKind = z.infer<typeof FaultKindSchema>;

const TimestampSchema = z
  .union([z.string(), z.number()])
  .refine((v) => !Number.isNaN(new Date(v).getTime()), "expected an RFC 3339 time");

export const ScenarioWindowSchema = z.strictObject({
  hwnd: z.number().int().positive(),
  title: z.string(),
  class: z.string(),
  pid: z.number().int().nonnegative(),
  process_start: TimestampSchema,
  process_path: z.string().min(1),
  rect: RectSchema,
  visible: z.boolean(),
  iconic: z.boolean(),
  z: z.number().int().nonnegative(),
  fill: ColorSchema,
  on_top: z.boolean().optional(),
  /** Window-relative rects painted over `fill`, in order, clipped to the window. */
  paint: z.array(z.strictObject({ rect: RectSchema, fill: ColorSchema })).optional(),
  tree: ScenarioNodeSchema.optional(),
  faults: z
    .strictObject({
      capture: FaultKindSchema.optional(),
      input: FaultKindSchema.optional(),
      uia: FaultKindSchema.optional(),
    })
    .optional(),
  /** A slow accessibility provider: delay per facts/children call. */
  a11y_delay_ms: z.number().int().nonnegative().optional(),
});
export type ScenarioWindow = z.infer<typeof ScenarioWindowSchema>;

export const ConsentScriptSchema = z.strictObject({
  answer: z.enum(["approve", "deny", "timeout", "ignore"]),
  delay_ms: z.number().int().nonnegative().default(0),
  /** JSONL file, one line per dialog shown; relative to the scenario file's folder. */
  log: z.string().min(1).optional(),
});
export type ConsentScript = z.infer<typeof ConsentScriptSchema>;

export const ScenarioSchema = z
  .strictObject({
    session: z.number().int().nonnegative(),
    foreground: z.number().int().positive().nullable(),
    background: ColorSchema.default("#000000"),
    virtual_screen: RectSchema.default([0, 0, 1920, 1080]),
    windows: z.array(ScenarioWindowSchema),
    consent: ConsentScriptSchema.optional(),
    /** JSONL file of emitted effects; relative to the scenario file's folder. */
    effects_log: z.string().min(1).optional(),
    /** A slow input path: each input event takes this long after it is logged. */
    input_delay_ms: z.number().int().nonnegative().max(10_000).optional(),
    /** A slow window enumeration: each listWindows takes this long after touching the windows. */
    listing_delay_ms: z.number().int().nonnegative().max(10_000).optional(),
    /** Devices another client holds grabbed (an X grab, a Win32 capture or menu mode). */
    grabs: z.strictObject({ keyboard: z.boolean().optional(), pointer: z.boolean().optional() }).optional(),
  })
  .superRefine((s, ctx) => {
    const seen = new Set<number>();
    s.windows.forEach((w, i) => {
      if (seen.has(w.hwnd)) {
        ctx.addIssue({ code: "custom", message: "duplicate hwnd", path: ["windows", i, "hwnd"] });
      }
      seen.add(w.hwnd);
      if (w.rect[2] < w.rect[0] || w.rect[3] < w.rect[1]) {
        ctx.addIssue({ code: "custom", message: "rect is inverted", path: ["windows", i, "rect"] });
      }
    });
    const v = s.virtual_screen;
    if (v[2] <= v[0] || v[3] <= v[1]) {
      ctx.addIssue({ code: "custom", message: "virtual_screen is empty", path: ["virtual_screen"] });
    }
  });

/** What a test writes (defaults optional). */
export type ScenarioInput = z.input<typeof ScenarioSchema>;
/** What the platform works with (defaults applied). */
export type Scenario = z.output<typeof ScenarioSchema>;

/** A validated scenario plus the facts derived from where it was read. */
export interface LoadedScenario {
  readonly scenario: Scenario;
  /** Absolute path of effects_log, or null. */
  readonly effectsLogPath: string | null;
  /** Absolute path of consent.log, or null. */
  readonly consentLogPath: string | null;
  /** Increases with every accepted version of the file (1 = first good read). */
  readonly version: number;
}

/** A scenario holds a few windows and their trees; 8 MiB is far more than any test writes. */
export const MAX_SCENARIO_FILE_BYTES = 8 * 1024 * 1024;

/**
 * Each level of an accessibility tree costs two JSON levels (node, children) below the four of
 * scenario → windows → window → tree; 160 leaves room for trees deeper than inspect_tree's
 * max_depth (32), which tests need to show truncation, and still bounds the recursive schema.
 */
export const MAX_SCENARIO_NESTING_DEPTH = 160;

/** Parses scenario text; throws a plain Error naming the failing fields (never their values). */
export function parseScenario(text: string): Scenario {
  // Linear time, nesting capped before the recursive tree schema runs, duplicate keys refused.
  const json = parseStrictJson(text, MAX_SCENARIO_NESTING_DEPTH);
  if (!json.ok) throw new Error(`scenario is not valid JSON: ${json.reasons.join("; ")}`);
  const r = ScenarioSchema.safeParse(json.value);
  if (!r.success) {
    const where = r.error.issues
      .slice(0, MAX_REPORTED_PROBLEMS)
      .map((i) => `${formatPath(i.path)}: ${i.message.slice(0, 200)}`)
      .join("; ");
    throw new Error(`scenario is invalid: ${where}`);
  }
  return r.data;
}

function statKey(st: Stats): string {
  return `${st.mtimeMs}:${st.size}:${st.ino}`;
}

/**
 * If a file was read within this long of its modification time, a later write in the same
 * timestamp tick with the same size would leave its stat unchanged; such a file's bytes are
 * compared again on access until it has been stable for this long (git's "racily clean" rule).
 */
const RACY_WINDOW_MS = 1000;

/**
 * Reads the scenario file and re-reads it whenever it changed: every access stats the file
 * (mtime, size, inode), so a test that rewrites it between two calls sees the new state on the
 * next call. No fs.watch. A missing, half-written or invalid file keeps the last good state;
 * with no good state ever, access throws UiError("platform_unavailable").
 */
export class ScenarioReader {
  readonly path: string;
  private good: LoadedScenario | null = null;
  private key: string | null = null;
  private bytes: Buffer | null = null;
  private readAt = 0;
  private mtimeMs = 0;
  private error: string | null = null;

  constructor(path: string) {
    this.path = resolve(path);
  }

  /** Why the most recent read was rejected (field paths only), or null when it was accepted. */
  get lastError(): string | null {
    return this.error;
  }

  /** Whether a good state exists, without throwing. */
  loaded(): boolean {
    this.refresh();
    return this.good !== null;
  }

  current(): LoadedScenario {
    this.refresh();
    if (this.good === null)
      throw uiError("platform_unavailable", "The simulated desktop has no valid scenario.");
    return this.good;
  }

  private refresh(): void {
    let st: Stats;
    try {
      st = statSync(this.path);
    } catch {
      this.error = "scenario file cannot be read";
      return;
    }
    const key = statKey(st);
    if (key === this.key && this.readAt - this.mtimeMs >= RACY_WINDOW_MS) return;
    const read = readBoundedFile(this.path, MAX_SCENARIO_FILE_BYTES);
    if (!read.ok) {
      this.error = read.problem === "too_big" ? "scenario file is too big" : "scenario file cannot be read";
      return;
    }
    const bytes = read.bytes;
    const now = Date.now();
    if (key === this.key && this.bytes !== null && bytes.equals(this.bytes)) {
      this.readAt = now;
      return;
    }
    this.key = key;
    this.bytes = bytes;
    this.readAt = now;
    this.mtimeMs = st.mtimeMs;
    try {
      const scenario = parseScenario(bytes.toString("utf8"));
      const dir = dirname(this.path);
      const at = (p: string | undefined): string | null =>
        p === undefined ? null : isAbsolute(p) ? p : resolve(dir, p);
      this.good = {
        scenario,
        effectsLogPath: at(scenario.effects_log),
        consentLogPath: at(scenario.consent?.log),
        version: (this.good?.version ?? 0) + 1,
      };
      this.error = null;
    } catch (e) {
      this.error = e instanceof Error ? e.message : "scenario is invalid";
    }
  }
}

/** Writes a scenario atomically (temp file + rename), as tests and the demo should. */
export function writeScenarioFile(path: string, scenario: ScenarioInput): void {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(scenario, null, 2)}\n`);
  renameSync(tmp, path);
}
