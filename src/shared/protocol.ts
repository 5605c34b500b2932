import { z } from "zod";
import type { A11yNodeOut } from "./a11yNode.js";
import { DenyReasonSchema, UiErrorBodySchema } from "./errors.js";
import { RectSchema } from "./geometry.js";
import { ProcessInstanceSchema } from "./identity.js";
import { isPacked, type PackedTrees, unpackTreesSync } from "./packedTree.js";
import { PlatformNameSchema, WindowInfoSchema } from "./platform.js";
import { STATES } from "./states.js";

/**
 * The one typed request/response protocol between the supervisor and its workers.
 * Every message crossing a thread (or process) boundary is parsed with these schemas
 * on arrival; a message that does not parse is dropped and counted, never trusted.
 */

export const WorkerKindSchema = z.enum(["capture", "input", "uia"]);
export type WorkerKind = z.infer<typeof WorkerKindSchema>;

export const FocusModeSchema = z.enum(["passive", "activate"]);
export const TextModeSchema = z.enum(["sendinput", "wm_char"]);

/** What a worker is told at start-up. */
/** Platform's SharedSegment on the wire. */
const SharedSegmentSchema = z.object({
  shmid: z.number().int().min(0),
  addr: z.string().regex(/^[1-9][0-9]{0,19}$/),
});

export const WorkerInitSchema = z.object({
  kind: WorkerKindSchema,
  platform: PlatformNameSchema,
  /** Fake platform: path of the scenario file. */
  fake_desktop: z.string().nullable(),
  log_level: z.string(),
  /**
   * Thread workers: shared-memory segments a terminated worker of this kind left attached in
   * the process, for this one to detach (Platform.onSharedSegments).
   */
  orphan_segments: z.array(SharedSegmentSchema).max(16).optional(),
  /** Input workers: where every press and remap is recorded before it is emitted (src/guardian). */
  guardian: z
    .object({
      socket: z.string().min(1).max(200),
      token: z.string().regex(/^[0-9a-f]{32}$/),
      source: z.string(),
    })
    .optional(),
});
export type WorkerInit = z.infer<typeof WorkerInitSchema>;

/** The target a worker must find unchanged immediately before acting. */
export const TargetExpectationSchema = z.object({
  hwnd: z.string(),
  instance: ProcessInstanceSchema,
  /**
   * The instance's top-level windows already shown when the grant began (native ids, besides
   * the granted window; DesktopPort.shownTopLevels): none of them is ever a popup of the grant.
   */
  shown_before: z
    .array(z.string().regex(/^\d{1,20}$/))
    .max(4096)
    .optional(),
});
export type TargetExpectation = z.infer<typeof TargetExpectationSchema>;

/**
 * An observation sent while the supervisor still resolves and authorizes the target
 * (ToolDef.observeAhead): only a session already open is walked, and a refusal of the target
 * check ends nothing (the authorized call asks again, and its refusal does). Absent: false.
 */
const AheadArg = { ahead: z.boolean().optional() };

const PointSchema = z.object({ x: z.number().int(), y: z.number().int() });

const KeyStepSchema = z.object({
  key: z.string(),
  modifiers: z.array(z.enum(["ctrl", "shift", "alt"])).max(2),
  hold_ms: z.number().int().min(0).max(5000),
});

/**
 * One element's own fields, its children left unchecked: the supervisor checks a big tree node
 * by node with this, a few hundred at a time, so a 5,000-node walk does not hold its event loop
 * (src/supervisor/hosting/treeResults.ts). A11yNodeSchema is the same shape, recursively.
 */
export const A11yNodeFieldsSchema = z.object({
  ref: z.string(),
  role: z.string(),
  name: z.string().nullable(),
  is_password: z.boolean().optional(),
  automation_id: z.string().nullable(),
  class_name: z.string().nullable(),
  rect: RectSchema.nullable(),
  enabled: z.boolean(),
  offscreen: z.boolean(),
  focused: z.boolean(),
  states: z.array(z.enum(STATES)),
  /** Present (true) on elements of the instance's other top-level windows (menus, popups, dialogs). */
  popup: z.boolean().optional(),
  patterns: z.array(z.string()),
  children: z.array(z.unknown()),
});
const A11yNodeSchema: z.ZodType<A11yNodeOut> = z.lazy(() =>
  A11yNodeFieldsSchema.extend({ children: z.array(A11yNodeSchema) }),
);

export type { A11yNodeOut };
export { A11yNodeSchema };

/** a11y.inspect's answer once its trees are checked: the first tree and the popups' trees. */
export interface InspectResult {
  root: A11yNodeOut;
  popups: A11yNodeOut[];
  node_count: number;
  truncated: boolean;
}

/** a11y.inspect's answer on the wire: its trees as columns (src/shared/packedTree.ts). */
export const InspectWireSchema = z.object({
  trees: z.custom<PackedTrees>(isPacked),
  node_count: z.number().int(),
  truncated: z.boolean(),
});

/** The answer from its checked trees (the first one the root), or null when there is none. */
export function inspectFromTrees(
  trees: A11yNodeOut[] | null,
  top: { node_count: number; truncated: boolean },
): InspectResult | null {
  const root = trees?.[0];
  if (!trees || root === undefined) return null;
  return { root, popups: trees.slice(1), node_count: top.node_count, truncated: top.truncated };
}

const Empty = z.object({}).strict();

const SharedStreamSchema = z.object({
  node: z.number().int().nonnegative(),
  source_type: z.enum(["monitor", "window", "virtual"]),
  size: z.tuple([z.number(), z.number()]).nullable(),
  position: z.tuple([z.number(), z.number()]).nullable(),
});

/** One captured frame as capture.region and capture.window answer it. */
const FrameResultSchema = z.object({
  png: z.custom<Uint8Array>((v) => v instanceof Uint8Array).nullable(),
  sha256: z.string().nullable(),
  /** One "#rrggbb" per sample point, in order (only when sample_points were given). */
  samples: z.array(z.string().regex(/^#[0-9a-f]{6}$/)).optional(),
  /** SHA-256 of the frame's PNG (size, grid, masked pixels; capture/frameHash.ts): "png" and "frame_hash". */
  frame_hash: z.string().optional(),
  /** 32-bit hashes of its 32 × 32 tiles, row-major (when asked). */
  tiles: z.array(z.number().int().nonnegative()).optional(),
  width: z.number().int(),
  height: z.number().int(),
  /** Screen position of the captured region's top-left corner. */
  window_offset: z.tuple([z.number().int(), z.number().int()]),
});

/** Whether a frame's tile hashes come with it, not at all, or "later" (capture.tiles). */
const TilesSchema = z.union([z.boolean(), z.literal("later")]).default(false);

/** An identity's key (ClientIdentity.hash) or a process instance's (instanceKey): hex only. */
const OwnerKeySchema = z.string().regex(/^[0-9a-f]{1,64}$/);

/**
 * With tiles "later": the identity the frame is answered to, whose copy the worker keeps for
 * capture.tiles (with the instance its checks verified); null keeps no copy.
 */
const KeepForSchema = OwnerKeySchema.nullable().default(null);

/** op name → worker, argument schema, result schema. */
export const OPS = {
  ping: { worker: "any", args: Empty, result: z.object({ pong: z.literal(true), pid: z.number() }) },

  // capture worker: discovery, identity, pixels
  "desktop.list": {
    worker: "capture",
    args: Empty,
    result: z.object({
      windows: z.array(WindowInfoSchema),
      /** The capture worker keeps this listing a moment under this id (capture.region's listing_id). */
      listing_id: z.string().max(64).optional(),
    }),
  },
  "desktop.get": {
    worker: "capture",
    args: z.object({ hwnd: z.string() }),
    result: z.object({ window: WindowInfoSchema.nullable() }),
  },
  "desktop.alive": {
    worker: "capture",
    args: z.object({ instance: ProcessInstanceSchema }),
    result: z.object({ alive: z.boolean() }),
  },
  "desktop.shown": {
    worker: "capture",
    args: z.object({ instance: ProcessInstanceSchema }),
    result: z.object({ hwnds: z.array(z.string()).max(4096) }),
  },
  "desktop.virtual_screen": { worker: "capture", args: Empty, result: z.object({ rect: RectSchema }) },
  "desktop.health": {
    worker: "capture",
    args: Empty,
    result: z.object({
      facts: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
    }),
  },
  "capture.region": {
    worker: "capture",
    args: z.object({
      target: TargetExpectationSchema,
      /** Window-relative region to capture. */
      region: RectSchema,
      /** Window-relative masks, painted black before anything else sees the pixels. */
      masks: z.array(RectSchema),
      grid_spacing: z.number().int().min(5).max(2000).nullable(),
      /**
       * "png" returns an encoded image and its frame_hash; "frame_hash" only the frame_hash (and
       * tiles); "sha256" only a hash of the masked RGB pixels (coordinate profiles).
       */
      output: z.enum(["png", "sha256", "frame_hash"]),
      /** With "png": no image when the frame's hash is this one (the caller has the image). */
      unless_hash: z.string().max(128).nullable().default(null),
      /**
       * With "png" / "frame_hash": the frame's tile hashes too (where it changed,
       * src/workers/capture/pixels.ts). "later" (with "png"): not in the answer; the worker
       * keeps a copy of the PNG under the frame_hash and hashes its tiles only when
       * capture.tiles asks (screenshot_window: only a later visual wait reads them).
       */
      tiles: TilesSchema,
      keep_for: KeepForSchema,
      max_png_bytes: z.number().int().positive(),
      /** zlib level of the PNG (0–9; the screenshot tool's choice is measured in docs/benchmarks.md). */
      compression_level: z.number().int().min(0).max(9),
      /**
       * With "sha256": window-relative points inside the region whose colours (after masking)
       * come back as "#rrggbb" (coordinate-profile verification points).
       */
      sample_points: z
        .array(z.tuple([z.number().int(), z.number().int()]))
        .max(256)
        .optional(),
      /**
       * The supervisor's own enumeration that resolved the target (Date.now() when it was read):
       * the pre-capture check runs against it when it is at most LISTING_MAX_AGE_MS old instead
       * of enumerating again. The check after the pixels were read reads the target and what lies
       * above it afresh (DesktopPort.targetAndCovers), else the whole desktop.
       */
      listing: z
        .object({ at: z.number(), windows: z.array(WindowInfoSchema) })
        .nullable()
        .default(null),
      /**
       * Instead of `listing`: the id of this worker's own desktop.list answer that resolved the
       * target (the worker keeps it a moment, src/workers/capture/listings.ts); an unknown or
       * stale id means the pre-capture check enumerates.
       */
      listing_id: z.string().max(64).nullable().default(null),
    }),
    result: FrameResultSchema,
  },

  /**
   * A screenshot in one message: the worker lists the desktop, takes the window `hwnd` names and
   * its process instance from that listing, and runs capture.region's path against it (check,
   * read, check again, masks, encode). It answers with the listing and the frame, or with the
   * check's refusal as a value: the supervisor resolves the target from the listing and
   * authorizes the identity the listing shows before it looks at either, and drops (zeroes) the
   * frame when the answer is no.
   */
  "capture.window": {
    worker: "capture",
    args: z.object({
      hwnd: z.string(),
      region: RectSchema,
      masks: z.array(RectSchema),
      grid_spacing: z.number().int().min(5).max(2000).nullable(),
      output: z.enum(["png", "frame_hash"]),
      unless_hash: z.string().max(128).nullable().default(null),
      tiles: TilesSchema,
      /** As capture.region's, kept only when the caller has a grant on the listed instance. */
      keep_for: KeepForSchema,
      max_png_bytes: z.number().int().positive(),
      compression_level: z.number().int().min(0).max(9),
      /**
       * The caller's live grants on that window: each instance with the windows shown when its
       * grant began (TargetExpectation's shown_before); the one of the listed instance applies.
       */
      granted: z
        .array(
          z.object({
            instance: ProcessInstanceSchema,
            shown_before: z.array(z.string().regex(/^\d{1,20}$/)).max(4096),
          }),
        )
        .max(16)
        .default([]),
    }),
    result: z.object({
      windows: z.array(WindowInfoSchema),
      /** The frame, when the window was found with an owner and every check passed. */
      shot: FrameResultSchema.nullable(),
      /** What a check refused with (codes and fixed messages only: no title, no pixel). */
      refused: z.object({ code: DenyReasonSchema, message: z.string().max(600) }).nullable(),
    }),
  },

  /**
   * The tile hashes of a frame this worker encoded with tiles "later" for this identity and
   * process instance, by its frame_hash (from the PNG it kept); null when it has none for them
   * (never kept for them, forgotten, evicted, or the worker restarted since).
   */
  "capture.tiles": {
    worker: "capture",
    args: z.object({
      frame_hash: z.string().regex(/^[0-9a-f]{64}$/),
      client: OwnerKeySchema,
      instance: OwnerKeySchema,
    }),
    result: z.object({ tiles: z.array(z.number().int().nonnegative()).nullable() }),
  },

  /**
   * Drops the kept frames (capture.tiles) of an identity, a process instance, or both (a grant
   * ended); both null drops every kept frame (a policy reload).
   */
  "capture.forget": {
    worker: "capture",
    args: z.object({
      client: OwnerKeySchema.nullable(),
      instance: OwnerKeySchema.nullable(),
    }),
    result: z.object({ dropped: z.number().int().nonnegative() }),
  },

  // input worker: verified effects
  "input.pointer": {
    worker: "input",
    args: z.object({
      target: TargetExpectationSchema,
      kind: z.enum(["click", "double_click", "right_click", "hover", "scroll"]),
      x: z.number().int(),
      y: z.number().int(),
      dwell_ms: z.number().int().min(0).max(10000).default(0),
      notches: z.number().int().min(-20).max(20).default(0),
      focus_mode: FocusModeSchema,
      /** Find out whether the press reached the target (the display server's word), for expect. */
      prove_delivery: z.boolean().default(false),
    }),
    result: z.object({
      screen_x: z.number().int(),
      screen_y: z.number().int(),
      /** With prove_delivery, where the platform can tell: whether every press reached the target. */
      delivered: z.boolean().optional(),
    }),
  },
  "input.drag": {
    worker: "input",
    args: z.object({
      target: TargetExpectationSchema,
      points: z.array(PointSchema).min(2).max(18),
      focus_mode: FocusModeSchema,
    }),
    result: z.object({ legs: z.number().int() }),
  },
  "input.text": {
    worker: "input",
    args: z.object({
      target: TargetExpectationSchema,
      text: z.string().min(1).max(4096),
      mode: TextModeSchema,
      focus_mode: FocusModeSchema,
    }),
    result: z.object({ chars: z.number().int() }),
  },
  "input.keys": {
    worker: "input",
    args: z.object({
      target: TargetExpectationSchema,
      steps: z.array(KeyStepSchema).min(1).max(10),
      focus_mode: FocusModeSchema,
    }),
    result: z.object({ steps: z.number().int() }),
  },
  "input.close": { worker: "input", args: z.object({ target: TargetExpectationSchema }), result: Empty },
  "input.restore": {
    worker: "input",
    args: z.object({ target: TargetExpectationSchema }),
    result: z.object({ was_iconic: z.boolean() }),
  },

  /**
   * Wayland: the compositor's portal dialog, the second consent gate. The input worker opens
   * and holds the session (only its bus connection may inject through it); the capture worker
   * is handed its streams; wait_end answers when the compositor ends the session.
   */
  "portal.open": {
    worker: "input",
    args: z.object({ hwnd: z.string().max(64), timeout_ms: z.number().int().min(1).max(3_600_000) }),
    result: z.union([
      z.object({ answer: z.literal("declined") }),
      z.object({
        answer: z.literal("allowed"),
        session_id: z.string().max(64),
        streams: z.array(SharedStreamSchema).max(8),
      }),
    ]),
  },
  "portal.wait_end": {
    worker: "input",
    args: z.object({ session_id: z.string().max(64) }),
    result: z.object({ why: z.enum(["closed_by_us", "closed_by_compositor", "bus_lost"]) }),
  },
  "portal.share": {
    worker: "capture",
    args: z.object({
      hwnd: z.string().max(64),
      session_id: z.string().max(64),
      streams: z.array(SharedStreamSchema).max(8),
    }),
    result: z.object({ bound: z.literal(true) }),
  },
  "portal.close": {
    worker: "any",
    args: z.object({ session_id: z.string().max(64) }),
    result: z.object({ closed: z.boolean() }),
  },

  /** Win32: the trusted consent dialog is native code, so it runs in a worker. */
  "dialog.consent": {
    worker: "input",
    args: z.object({ text: z.string().min(1).max(8192) }),
    result: z.object({ answer: z.enum(["approve", "deny"]) }),
  },

  // uia worker: accessibility sessions keyed by (client, instance) grant
  "a11y.inspect": {
    worker: "uia",
    args: z.object({
      session_key: z.string(),
      target: TargetExpectationSchema,
      max_depth: z.number().int().min(0).max(32),
      max_nodes: z.number().int().min(1).max(5000),
      deadline_ms: z.number().int().positive(),
      root_ref: z.string().nullable(),
      /**
       * false: the caller shows no patterns (the outline, a changes snapshot), so the walk reads
       * no action names and every node carries patterns []. Absent: true.
       */
      patterns: z.boolean().optional(),
      /**
       * false: the caller shows no rects (the outline without `bounds`), so the walk asks only
       * the extents other facts need and every node carries rect null. Absent: true.
       */
      bounds: z.boolean().optional(),
      ...AheadArg,
    }),
    /**
     * On the wire the trees are columns (src/shared/packedTree.ts); checked, they are the root
     * and the roots of the instance's other showing top-level windows (only for a whole-window
     * walk), nodes as A11yNodeSchema. The supervisor checks them in slices
     * (src/supervisor/hosting/treeResults.ts), with the same check as this schema's.
     */
    result: InspectWireSchema.transform((r, ctx) => {
      const checked = inspectFromTrees(unpackTreesSync(r.trees), r);
      if (checked === null) {
        ctx.addIssue({ code: "custom", message: "Malformed trees." });
        return z.NEVER;
      }
      return checked;
    }),
  },
  "a11y.find": {
    worker: "uia",
    args: z.object({
      session_key: z.string(),
      target: TargetExpectationSchema,
      name_contains: z.string().nullable(),
      role: z.string().nullable(),
      automation_id: z.string().nullable(),
      /** Only elements that have this state. */
      state: z.enum(STATES).nullable().default(null),
      max_results: z.number().int().min(1).max(500),
      deadline_ms: z.number().int().positive(),
      /** As a11y.inspect's: what the caller shows of the matches (absent: everything). */
      patterns: z.boolean().optional(),
      bounds: z.boolean().optional(),
      ...AheadArg,
    }),
    result: z.object({
      elements: z.array(A11yNodeSchema),
      truncated: z.boolean(),
    }),
  },
  "a11y.act": {
    worker: "uia",
    args: z.object({
      session_key: z.string(),
      target: TargetExpectationSchema,
      ref: z.string(),
      action: z.enum([
        "invoke",
        "toggle",
        "select",
        "expand",
        "collapse",
        "set_value",
        "scroll_into_view",
        "select_option",
      ]),
      /** set_value: the value; select_option: the option's accessible name. */
      value: z.string().nullable(),
    }),
    result: Empty,
  },
  /** One element of a ref as it is now, or null when it is gone (expect / verified effects). */
  "a11y.describe": {
    worker: "uia",
    args: z.object({ session_key: z.string(), target: TargetExpectationSchema, ref: z.string() }),
    result: z.object({ node: A11yNodeSchema.nullable() }),
  },
  "a11y.element_center": {
    worker: "uia",
    args: z.object({ session_key: z.string(), target: TargetExpectationSchema, ref: z.string() }),
    /** Window-relative centre of the live element. */
    result: z.object({ x: z.number().int(), y: z.number().int() }),
  },
  "a11y.dispose": {
    worker: "uia",
    args: z.object({ session_key: z.string() }),
    result: z.object({ disposed: z.boolean() }),
  },
} as const;

export type OpName = keyof typeof OPS;
export type OpArgs<K extends OpName> = z.input<(typeof OPS)[K]["args"]>;
export type OpParsedArgs<K extends OpName> = z.output<(typeof OPS)[K]["args"]>;
export type OpResult<K extends OpName> = z.output<(typeof OPS)[K]["result"]>;
/** What a worker's handler answers (the wire form: a11y.inspect's trees as columns). */
export type OpWireResult<K extends OpName> = z.input<(typeof OPS)[K]["result"]>;

// Envelopes ------------------------------------------------------------------

export const RequestMessageSchema = z.object({
  type: z.literal("request"),
  id: z.number().int().nonnegative(),
  op: z.string(),
  args: z.unknown(),
  /** Milliseconds the worker has; it should answer (even with an error) before then. */
  deadline_ms: z.number().int().positive(),
});
export type RequestMessage = z.infer<typeof RequestMessageSchema>;

export const CancelMessageSchema = z.object({
  type: z.literal("cancel"),
  id: z.number().int().nonnegative(),
  /** "deadline": the supervisor's deadline passed (worker_timeout); "client": the caller cancelled. */
  reason: z.enum(["deadline", "client"]),
});

/**
 * Process isolation only (threads share the gate's SharedArrayBuffer instead): how many of our
 * consent/lease dialogs are open, sent whenever the number changes (src/shared/dialogGate.ts).
 */
export const DialogStateMessageSchema = z.object({
  type: z.literal("dialog_state"),
  open: z.number().int().nonnegative(),
});

/**
 * Thread isolation only: another worker thread of this process ended, so its isolate went back to
 * malloc; the worker hands what malloc holds free back to the system (src/os/linux/malloc.ts),
 * since the supervisor thread loads no native code to do it itself.
 */
export const TrimMallocMessageSchema = z.object({ type: z.literal("trim_malloc") });

export const SupervisorToWorkerSchema = z.discriminatedUnion("type", [
  RequestMessageSchema,
  CancelMessageSchema,
  DialogStateMessageSchema,
  TrimMallocMessageSchema,
]);
export type SupervisorToWorker = z.infer<typeof SupervisorToWorkerSchema>;

export const ResponseMessageSchema = z.discriminatedUnion("ok", [
  z.object({
    type: z.literal("response"),
    id: z.number().int().nonnegative(),
    ok: z.literal(true),
    result: z.unknown(),
  }),
  z.object({
    type: z.literal("response"),
    id: z.number().int().nonnegative(),
    ok: z.literal(false),
    error: UiErrorBodySchema,
  }),
]);
export const ReadyMessageSchema = z.object({
  type: z.literal("ready"),
  pid: z.number().int(),
  /** Platform.nativeFds: sockets the host closes after a worker thread ended (thread mode). */
  native_fds: z.array(z.number().int().min(0).max(1_048_576)).max(8).optional(),
});
/** Platform.onSharedSegments: what the worker has attached now (thread mode keeps track). */
export const SegmentsMessageSchema = z.object({
  type: z.literal("native_segments"),
  segments: z.array(SharedSegmentSchema).max(16),
});
export const LogMessageSchema = z.object({
  type: z.literal("log"),
  level: z.enum(["debug", "info", "warn", "error"]),
  /** Fixed event name and numeric/boolean fields only; never UI content. */
  event: z.string(),
  fields: z.record(z.string(), z.union([z.number(), z.boolean(), z.string()])).optional(),
});

export const WorkerToSupervisorSchema = z.union([
  ResponseMessageSchema,
  ReadyMessageSchema,
  LogMessageSchema,
  SegmentsMessageSchema,
]);
export type WorkerToSupervisor = z.infer<typeof WorkerToSupervisorSchema>;
