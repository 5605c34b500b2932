import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { quoteClientValue } from "../../shared/echo.js";
import { UiError, uiError } from "../../shared/errors.js";
import { formatPath } from "../../shared/strictJson.js";
import type { CallContext } from "../access/callContext.js";
import { runChain } from "../access/chain.js";
import { type AuditAction, type AuditReason, newCorrelationId } from "../audit.js";
import { policyStatusAt } from "../policy/load.js";
import { CAPABILITIES } from "../policy/schema.js";
import type { Supervisor } from "../supervisor.js";
import { toolsForPolicy } from "../tools/availability.js";
import type { ToolDef } from "../tools/define.js";
import { TOOLS, TOOLS_BY_NAME } from "../tools/index.js";
import { trimInputSchema, trimOutputSchema } from "./schemaTrim.js";

function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  return portableTuples(rest) as Record<string, unknown>;
}

/**
 * zod emits tuples as draft 2020-12 `prefixItems` + `items: false`, which draft-07
 * validators (what many MCP clients run) read as "no items allowed". Rewrite them into
 * a form both drafts agree on: a fixed-length array of the (union of the) item schemas.
 */
export function portableTuples(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(portableTuples);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = portableTuples(v);
  const prefix = out.prefixItems;
  if (Array.isArray(prefix)) {
    delete out.prefixItems;
    const distinct = [...new Map(prefix.map((p) => [JSON.stringify(p), p])).values()];
    out.items = distinct.length === 1 ? distinct[0] : { anyOf: distinct };
    out.minItems = prefix.length;
    out.maxItems = prefix.length;
  }
  return out;
}

/**
 * Errors are results too (docs/spec.md §7), so the output schema admits the error shape (schemaTrim.ts).
 * Definitions of recursive schemas stay at the root, where their "#/$defs/…" refs point.
 */
function outputSchemaOf(def: ToolDef): Tool["outputSchema"] {
  return trimOutputSchema(jsonSchemaOf(def.output, "output")) as Tool["outputSchema"];
}

/**
 * Capabilities whose tools reach into another program (its effects are whatever that program
 * does with the input): openWorldHint true. Reading a window, and the server's own bookkeeping,
 * stay inside what the server shows.
 */
const OPEN_WORLD: ReadonlySet<string> = new Set(
  CAPABILITIES.filter((c) => c !== "observe" && c !== "inspect"),
);

function toolEntry(def: ToolDef): Tool {
  return {
    name: def.name,
    title: def.title,
    description: def.description,
    inputSchema: trimInputSchema(jsonSchemaOf(def.input, "input")) as Tool["inputSchema"],
    outputSchema: outputSchemaOf(def),
    annotations: {
      ...def.annotations,
      openWorldHint: def.capability !== null && OPEN_WORLD.has(def.capability),
    },
  };
}

/** Each table row's listing entry, built once (schemas do not change while the server runs). */
const ENTRIES: ReadonlyMap<string, Tool> = new Map(TOOLS.map((d) => [d.name, toolEntry(d)]));

/** Tool listing derived from the table: schemas, annotations, nothing hand-written. */
export function listTools(defs: readonly ToolDef[] = TOOLS): Tool[] {
  return defs.map((d) => ENTRIES.get(d.name) ?? toolEntry(d));
}

/** The listing for the supervisor's policy as it is now (tools/list). */
export function listToolsFor(sup: Supervisor): Tool[] {
  return listTools(toolsForPolicy(policyStatusAt(sup.policyState, () => new Date(sup.clock()))));
}

/** The one place where an error becomes an MCP result. */
export function errorResult(err: UiError, correlationId?: string): CallToolResult {
  const body = err.toBody();
  return {
    isError: true,
    content: [{ type: "text", text: JSON.stringify({ error: body }) }],
    structuredContent: { error: body },
    ...(correlationId ? { _meta: { correlation_id: correlationId } } : {}),
  };
}

/** zod's wording is ours to pass on, but never at a length the client chose. */
const MAX_ISSUE_MESSAGE_CHARS = 200;

/**
 * Paths and zod's own wording only, never the offending value. Keys the client sent (unknown
 * fields, record keys in a path) are quoted, escaped and cut to 64 code points (quoteClientValue),
 * so a 1 MB key name costs the answer a few dozen bytes.
 */
export function zodMessage(e: z.ZodError): string {
  return e.issues
    .slice(0, 5)
    .map((i) => {
      const where = i.path.length > 0 ? formatPath(i.path) : "(arguments)";
      if (i.code === "unrecognized_keys") {
        const keys = i.keys.slice(0, 3).map((k) => quoteClientValue(k));
        return `${where}: unknown field${i.keys.length > 1 ? "s" : ""} ${keys.join(", ")}${i.keys.length > 3 ? ", …" : ""}`;
      }
      return `${where}: ${i.message.slice(0, MAX_ISSUE_MESSAGE_CHARS)}`;
    })
    .join("; ");
}

function auditAction(def: ToolDef, ctx: CallContext | null): AuditAction {
  if (ctx?.capability) return ctx.capability;
  if (def.mode === "discovery") return "discovery";
  return def.capability ?? "none";
}

export interface CallExtra {
  signal: AbortSignal;
  progressToken?: string | number | undefined;
  sendProgress?: (progress: number, total?: number, message?: string) => Promise<void>;
}

/** Validates, authorizes, runs and audits one tool call. Never throws. */
export async function callTool(
  sup: Supervisor,
  name: string,
  rawArgs: unknown,
  extra: CallExtra,
): Promise<CallToolResult> {
  const started = performance.now();
  const correlationId = newCorrelationId();
  const def = TOOLS_BY_NAME.get(name);
  let ctx = null as CallContext | null; // set by the chain as soon as it exists
  let outcome: "allow" | "deny" | "error" = "allow";
  let reason: AuditReason = "ok";
  try {
    if (!def) throw uiError("invalid_argument", "Unknown tool.");
    const parsed = def.input.safeParse(rawArgs ?? {});
    if (!parsed.success) throw uiError("invalid_argument", zodMessage(parsed.error));
    const progress = async (p: number, total?: number, message?: string) => {
      if (extra.progressToken !== undefined && extra.sendProgress)
        await extra.sendProgress(p, total, message);
    };
    const run = await runChain(sup, {
      def,
      args: parsed.data as Record<string, unknown>,
      signal: extra.signal,
      progress,
      correlationId,
      onContext: (c) => {
        ctx = c;
      },
    });
    const r = run.result as {
      structured: Record<string, unknown>;
      content?: CallToolResult["content"];
      text?: string;
      _meta?: Record<string, unknown>;
    };
    const text = r.text ?? JSON.stringify(r.structured);
    return {
      content: [...(r.content ?? []), { type: "text", text }],
      structuredContent: r.structured,
      ...(r._meta ? { _meta: r._meta } : {}),
    };
  } catch (e) {
    const err =
      e instanceof UiError
        ? e
        : extra.signal.aborted
          ? uiError("cancelled")
          : uiError("platform_unavailable");
    if (!(e instanceof UiError))
      sup.log.error({ tool: def?.name ?? "unknown", kind: (e as Error)?.name }, "tool_internal_error");
    outcome = isDenial(err.code) ? "deny" : "error";
    reason = err.code;
    return errorResult(err, correlationId);
  } finally {
    if (def && def.audited !== false) {
      const t = ctx?.target ?? null;
      sup.audit.record(
        {
          correlation_id: correlationId,
          client: sup.client().auditId,
          policy_id: ctx?.policy?.policy_id ?? null,
          action: auditAction(def, ctx),
          tool: def.name,
          outcome,
          reason,
          duration_ms: Math.round((performance.now() - started) * 100) / 100,
          pid: t?.instance.pid ?? null,
          process_start: t?.instance.start_time ?? null,
          counters: ctx?.counters ?? {},
        },
        sup.client().hash,
      );
    }
  }
}

const DENIALS = new Set([
  "policy_not_configured",
  "policy_conflict",
  "policy_invalid",
  "policy_expired",
  "policy_unreadable",
  "policy_insecure",
  "action_not_allowed",
  "target_not_allowed",
  "consent_required",
  "consent_denied",
  "capability_expansion_denied",
  "confirmation_required",
  "confirmation_invalid",
  "rate_limited",
  "memory_budget_exceeded",
  "lease_revoked",
  "credential_revoked",
]);
const isDenial = (code: string) => DENIALS.has(code);

/** Wires the tool table into an MCP server (low-level API: we own validation and errors). */
export function createMcpServer(sup: Supervisor, onClientInfo: (info: unknown) => void): Server {
  const server = new Server(
    { name: "uiinspect-mcp", version: sup.version },
    {
      capabilities: { tools: { listChanged: true } },
      instructions:
        "Deny-by-default desktop automation. Call list_windows, then request_access for a window (a person approves it), then inspect/screenshot/act. A window is named by exactly one of hwnd (from list_windows) or title_contains (a substring matching exactly one allowed window). Protected actions (text, close, drag by default) need a confirmation_token from request_confirmation. Element actions go through the semantic pattern only (else pattern_not_supported), and take expect to report verified.",
    },
  );
  server.oninitialized = () => onClientInfo(server.getClientVersion() ?? null);
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listToolsFor(sup) }));
  // Each connected session hears when the policy changes what can be listed.
  let listed = listToolsFor(sup)
    .map((t) => t.name)
    .join();
  const stop = sup.onPolicyChange?.(() => {
    const now = listToolsFor(sup)
      .map((t) => t.name)
      .join();
    if (now === listed || server.transport === undefined) return;
    listed = now;
    server.sendToolListChanged().catch(() => sup.log.debug({}, "tools_list_changed_not_sent"));
  });
  const previousOnClose = server.onclose;
  server.onclose = () => {
    stop?.();
    previousOnClose?.();
  };
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const progressToken = request.params._meta?.progressToken;
    return callTool(sup, request.params.name, request.params.arguments, {
      signal: extra.signal,
      progressToken,
      sendProgress: async (progress, total, message) => {
        if (progressToken === undefined) return;
        await extra.sendNotification({
          method: "notifications/progress",
          params: {
            progressToken,
            progress,
            ...(total !== undefined ? { total } : {}),
            ...(message !== undefined ? { message } : {}),
          },
        });
      },
    });
  });
  return server;
}
