import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { z } from "zod";
import { refuseUnactionable } from "../../shared/actionable.js";
import { isUiError, uiError } from "../../shared/errors.js";
import { RectSchema } from "../../shared/geometry.js";
import { sameInstance } from "../../shared/identity.js";
import type { WindowInfo } from "../../shared/platform.js";
import { sleep } from "../../shared/sleep.js";
import type { DesktopService, ServerFacts } from "../access/services.js";
import { allowedWindows, HwndSchema, pickTarget } from "../access/targets.js";
import { startLoopDelay } from "../hosting/loopDelay.js";
import { type EffectivePolicy, ENV, type PolicyState } from "../policy/load.js";
import { windowAllowed } from "../policy/match.js";
import {
  type CallBase,
  defineDiscoveryTool,
  defineMetaTool,
  defineOpenTool,
  defineWindowTool,
} from "./define.js";
import { WindowSummary } from "./shapes.js";

const summary = (w: WindowInfo) => ({
  title: w.title,
  pid: w.pid,
  hwnd: w.hwnd,
  rect: w.rect,
  process_path: w.instance?.exe_path ?? "",
  window_class: w.window_class,
  foreground: w.foreground,
});

function sdkVersion(): string {
  try {
    // The SDK's exports map hides package.json; find it from an exported entry point.
    const require = createRequire(import.meta.url);
    let dir = dirname(require.resolve("@modelcontextprotocol/sdk/server/index.js"));
    while (!(existsSync(join(dir, "package.json")) && basename(dir) === "sdk")) {
      if (dirname(dir) === dir) return "unknown";
      dir = dirname(dir);
    }
    return (
      (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version?: string }).version ??
      "unknown"
    );
  } catch {
    return "unknown";
  }
}

const HealthOutput = z.object({
  status: z.enum(["ok", "degraded", "unusable"]),
  platform: z.string().nullable(),
  policy: z.object({
    /** Which source(s) the operator configured; "file+env" only ever with policy_conflict. */
    source: z.enum(["env", "file", "file+env", "none"]),
    /** "incomplete": an environment policy without a part it needs to admit a window or allow an action. */
    status: z.enum(["ok", "incomplete", "none", "error"]),
    /** Each source on its own: a file or environment policy is set, set in part, or not set. */
    sources: z.object({
      file: z.enum(["set", "unset"]),
      env: z.enum(["set", "partial", "unset"]),
    }),
    /** The variables an incomplete environment policy lacks. */
    missing: z.array(z.string()).optional(),
    code: z.string().optional(),
    /** Why the policy is unusable (at most 5, as validate-policy words them). */
    reasons: z.array(z.string()).optional(),
    policy_id: z.string().nullable().optional(),
    expires_at: z.string().nullable().optional(),
  }),
  versions: z.object({ server: z.string(), node: z.string(), mcp_sdk: z.string() }),
  platform_facts: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
  workers: z.array(
    z.object({
      kind: z.string(),
      state: z.string(),
      isolation: z.string(),
      restarts: z.number(),
      crashes: z.number(),
      timeouts: z.number(),
      inflight: z.number(),
      sessions: z.number().optional(),
      /** uia: the instance workers running (one per granted process instance). */
      workers: z.number().optional(),
      idle_retirements: z.number().optional(),
      /** Calls waiting for their identity's turn (not yet sent): capture's shots, uia's calls on a shared instance worker. */
      queued: z.number().optional(),
    }),
  ),
  lease: z.object({
    mode: z.string(),
    active: z.boolean(),
    expires_at: z.string().nullable(),
    reachable: z.boolean(),
  }),
  audit: z.object({ ring_size: z.number(), sink: z.string() }),
  /** The consent dialog's mechanism; `warning` is set while an unsafe test setting is on. */
  consent_dialog: z.object({
    mechanism: z.string(),
    program: z.string().nullable(),
    unsafe_allow_xtest_consent: z.boolean(),
    warning: z.string().optional(),
    limit: z.string().optional(),
    open: z.number(),
  }),
  uptime_ms: z.number(),
  /** PNG bytes frame streams keep now, and the most they ever kept at once. */
  streams: z.object({ in_use: z.number(), peak: z.number() }),
  /**
   * Remote mode only: the revocation list in force. `stale`: the file changed into one that
   * does not parse (bad_lines), the last good list is kept; `unreadable`: every request refused.
   */
  remote: z
    .object({
      revocation_list: z
        .object({
          status: z.enum(["ok", "stale", "unreadable"]),
          entries: z.number(),
          bad_lines: z.array(z.number()).optional(),
        })
        .nullable(),
    })
    .optional(),
  /**
   * Supervisor event-loop delay (ms) over the last `window_s` seconds (30–60 s once the server
   * has run that long; see loopDelay.ts): how responsive the main thread is now.
   */
  event_loop: z.object({ p50_ms: z.number(), p99_ms: z.number(), max_ms: z.number(), window_s: z.number() }),
});

// Started once per process: the supervisor's responsiveness under load is a health fact.
const loopDelay = startLoopDelay();

/**
 * The variables an environment policy lacks for any effect: without executable paths no window
 * is admitted, without actions no tool but health_check is authorized.
 */
function envPolicyMissing(policy: EffectivePolicy): string[] {
  if (policy.source !== "env") return [];
  const missing: string[] = [];
  if (policy.process_paths.length === 0) missing.push(ENV.processPaths);
  if (!policy.actions_configured) missing.push(ENV.actions);
  return missing;
}

function policySources(state: PolicyState): z.output<typeof HealthOutput>["policy"]["sources"] {
  const source =
    state.status === "none" ? "none" : state.status === "ok" ? state.policy.source : state.source;
  const partial = state.status === "ok" && envPolicyMissing(state.policy).length > 0;
  return {
    file: source === "file" || source === "file+env" ? "set" : "unset",
    env: source === "env" || source === "file+env" ? (partial ? "partial" : "set") : "unset",
  };
}

async function healthFacts(
  call: CallBase & { server: ServerFacts; desktop: DesktopService },
): Promise<z.output<typeof HealthOutput>> {
  const { server } = call;
  const state = server.policyStatus();
  let facts: Record<string, string | number | boolean | null> = {};
  let platformOk = false;
  if (server.platform) {
    try {
      facts = (await call.desktop.read("desktop.health", {}, 5000)).facts;
      platformOk = facts.available !== false;
    } catch (e) {
      // A UiError's message is our own fixed text (e.g. the missing variable named), never content.
      facts = isUiError(e) ? { error: e.code, message: e.message } : { error: "platform_unavailable" };
    }
  }
  const lease = await server.lease();
  const sources = policySources(state);
  const missing = state.status === "ok" ? envPolicyMissing(state.policy) : [];
  const policy =
    state.status === "ok"
      ? {
          source: state.policy.source,
          status: missing.length > 0 ? ("incomplete" as const) : ("ok" as const),
          sources,
          ...(missing.length > 0 ? { missing } : {}),
          policy_id: state.policy.policy_id,
          expires_at: state.policy.expires_at?.toISOString() ?? null,
        }
      : state.status === "none"
        ? { source: "none" as const, status: "none" as const, sources }
        : {
            source: state.source,
            status: "error" as const,
            sources,
            code: state.code,
            reasons: state.reasons.slice(0, 5).map((r) => r.slice(0, 300)),
          };
  // A configured audit file that cannot be written stops every effect (audit_unavailable).
  const auditFailed = server.auditSink() === "failed";
  const remote = server.remote();
  const status = !platformOk
    ? "unusable"
    : policy.status === "ok" && !auditFailed && remote?.degraded !== true
      ? "ok"
      : "degraded";
  return {
    status,
    platform: server.platform,
    policy,
    versions: { server: server.version, node: process.version, mcp_sdk: sdkVersion() },
    platform_facts: facts,
    workers: server.workers(),
    lease: { mode: server.leaseMode, ...lease },
    audit: { ring_size: server.auditRingSize(), sink: server.auditSink() },
    consent_dialog: server.consentDialog(),
    uptime_ms: server.uptimeMs(),
    streams: server.streams(),
    event_loop: loopDelay.figures(),
    ...(remote ? { remote: { revocation_list: remote.revocation_list } } : {}),
  };
}

export const discoveryTools = [
  defineOpenTool({
    name: "health_check",
    title: "Health check",
    description: "Server health: policy status, platform, versions, workers, lease.",
    input: z.strictObject({}),
    output: HealthOutput,
    effect: "read_only",
    uses: ["server", "desktop"],
    handler: async (call) => ({ structured: await healthFacts(call) }),
  }),

  defineDiscoveryTool({
    name: "list_windows",
    title: "List allowed windows",
    description:
      "Visible, titled, unminimized windows the policy allows (a minimized one: by hwnd, get_window_state).",
    input: z.strictObject({}),
    output: z.object({ windows: z.array(WindowSummary) }),
    effect: "read_only",
    uses: ["desktop"],
    handler: async (call) => {
      const windows = allowedWindows(call.policy, await call.desktop.windows()).map(summary);
      call.counters.windows = windows.length;
      return { structured: { windows } };
    },
  }),

  defineDiscoveryTool({
    name: "get_window_state",
    title: "Window state",
    description: "State of one allowed window: visible, iconic, foreground, on_top, rect.",
    input: z.strictObject({ hwnd: HwndSchema }),
    correlated: true,
    output: WindowSummary.extend({
      visible: z.boolean(),
      iconic: z.boolean(),
      on_top: z.boolean(),
    }),
    effect: "read_only",
    uses: ["desktop"],
    handler: async (call, args) => {
      const t = pickTarget(call.policy, await call.desktop.windows(), { hwnd: args.hwnd });
      const w = t.window;
      return {
        structured: {
          ...summary(w),
          visible: w.visible,
          iconic: w.iconic,
          on_top: w.on_top,
        },
      };
    },
  }),

  defineMetaTool({
    name: "get_virtual_screen_bounds",
    title: "Virtual screen bounds",
    description: "All monitors' bounds, physical pixels.",
    capability: "observe",
    budget: "inspection",
    audited: false,
    input: z.strictObject({}),
    output: z.object({
      bounds: RectSchema,
      origin: z.tuple([z.number(), z.number()]),
      size: z.tuple([z.number(), z.number()]),
    }),
    effect: "read_only",
    uses: ["desktop"],
    handler: async (call) => {
      const { rect } = await call.desktop.read("desktop.virtual_screen", {});
      return {
        structured: {
          bounds: rect,
          origin: [rect[0], rect[1]] as [number, number],
          size: [rect[2] - rect[0], rect[3] - rect[1]] as [number, number],
        },
      };
    },
  }),

  defineDiscoveryTool({
    name: "wait_for_window",
    title: "Wait for a window",
    description: "Waits (≤ 30 s) until exactly one allowed window's title contains the text.",
    input: z.strictObject({
      title_contains: z.string().min(1).max(256),
      timeout_ms: z.number().int().min(0).max(30_000).default(5000),
      poll_interval_ms: z.number().int().min(50).max(5000).default(200),
    }),
    correlated: true,
    output: z.object({
      found: z.boolean(),
      elapsed_ms: z.number(),
      window: WindowSummary.optional(),
    }),
    effect: "read_only",
    uses: ["desktop"],
    handler: async (call, args) => {
      const { policy } = call;
      const start = Date.now();
      await call.progress(0, args.timeout_ms);
      for (let polls = 0; ; polls++) {
        const all = await call.desktop.poll();
        const needle = args.title_contains.toLowerCase();
        const hits = allowedWindows(policy, all).filter((w) => w.title.toLowerCase().includes(needle));
        if (hits.length > 1) throw uiError("target_ambiguous");
        const elapsed = Date.now() - start;
        call.counters.polls = polls + 1;
        if (hits.length === 1)
          return {
            structured: {
              found: true,
              elapsed_ms: elapsed,
              window: summary(hits[0]),
            },
          };
        if (elapsed >= args.timeout_ms) return { structured: { found: false, elapsed_ms: elapsed } };
        await call.progress(Math.min(elapsed, args.timeout_ms), args.timeout_ms);
        await sleep(Math.min(args.poll_interval_ms, args.timeout_ms - elapsed), call.signal).catch(() => {
          throw uiError("cancelled");
        });
      }
    },
  }),

  defineWindowTool({
    name: "wait_for_title_change",
    title: "Wait for a title change",
    description: "Waits (≤ 30 s) until the granted window's title changes.",
    capability: "observe",
    budget: "inspection",
    args: {
      timeout_ms: z.number().int().min(0).max(30_000).default(5000),
      poll_interval_ms: z.number().int().min(50).max(5000).default(200),
    },
    output: z.object({
      changed: z.boolean(),
      elapsed_ms: z.number(),
      title: z.string().optional(),
    }),
    effect: "read_only",
    uses: ["desktop"],
    handler: async (call, args) => {
      const t = call.target;
      const initial = t.window.title;
      // A window that is not on screen shows no new title to wait for: the wait ends at once.
      const refuseHidden = (w: WindowInfo) =>
        refuseUnactionable(w, false, "The target window is minimized; restore_window it, then wait again.");
      refuseHidden(t.window);
      const start = Date.now();
      for (;;) {
        const elapsed = Date.now() - start;
        if (elapsed >= args.timeout_ms) return { structured: { changed: false, elapsed_ms: elapsed } };
        await call.progress(elapsed, args.timeout_ms);
        await sleep(Math.min(args.poll_interval_ms, args.timeout_ms - elapsed), call.signal).catch(() => {
          throw uiError("cancelled");
        });
        const { window } = await call.desktop.read("desktop.get", { hwnd: t.window.hwnd });
        if (!window) throw uiError("target_gone");
        if (!window.instance || !sameInstance(window.instance, t.instance)) throw uiError("target_changed");
        refuseHidden(window);
        // A new title outside the policy is the window leaving it: never shown (docs/spec.md §4).
        if (!windowAllowed(call.policy, { title: window.title, exe_path: window.instance.exe_path }))
          throw uiError("target_not_allowed", "The window's new title is outside the policy.");
        if (window.title !== initial)
          return {
            structured: {
              changed: true,
              elapsed_ms: Date.now() - start,
              title: window.title,
            },
          };
      }
    },
  }),
];
