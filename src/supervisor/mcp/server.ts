import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  type Tool,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { quoteClientValue } from "../../shared/echo.js";
import { isDenial, UiError, uiError } from "../../shared/errors.js";
import { formatPath } from "../../shared/strictJson.js";
import type { ChainRecord } from "../access/calls.js";
import { runChain } from "../access/chain.js";
import { type AuditAction, type AuditReason, newCorrelationId } from "../audit.js";
import { policyStatusAt } from "../policy/load.js";
import { isProtected } from "../policy/match.js";
import { CAPABILITY_TABLE, type Capability } from "../policy/schema.js";
import { FrameStreams } from "../screenshot/streams.js";
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
 * Errors are results too (docs/spec.md §7), so the output schema admits the error shape
 * (schemaTrim.ts). Definitions of recursive schemas stay at the root, where their "#/$defs/…"
 * refs point. Only tools that return data (read-only ones) list their shape: an effect's result
 * is a receipt (correlation_id, verified, a point) that docs/reference.md describes, and every
 * client pays for the listing on every turn.
 */
function outputSchemaOf(def: ToolDef): Tool["outputSchema"] | undefined {
  if (!def.annotations.readOnlyHint) return undefined;
  return trimOutputSchema(jsonSchemaOf(def.output, "output")) as Tool["outputSchema"];
}

/**
 * MCP's defaults for the hints (readOnlyHint false, destructiveHint true, idempotentHint false,
 * openWorldHint true): a hint equal to its default is left out of the listing, which means the
 * same to every client and costs nothing; destructiveHint and idempotentHint say nothing about a
 * read-only tool and are left out there too.
 */
function annotationsOf(def: ToolDef): Tool["annotations"] {
  const a = def.annotations;
  const openWorld = def.capability !== null && CAPABILITY_TABLE[def.capability].openWorld;
  const out: NonNullable<Tool["annotations"]> = {};
  if (a.readOnlyHint) out.readOnlyHint = true;
  else {
    if (!a.destructiveHint) out.destructiveHint = false;
    if (a.idempotentHint) out.idempotentHint = true;
  }
  if (!openWorld) out.openWorldHint = false;
  return out;
}

/** The listing's spelling of the hints, back in full (MCP's defaults filled in). */
export function fullAnnotations(t: Tool): ToolAnnotationsFull {
  const a = t.annotations ?? {};
  const readOnly = a.readOnlyHint ?? false;
  return {
    readOnlyHint: readOnly,
    destructiveHint: readOnly ? false : (a.destructiveHint ?? true),
    idempotentHint: readOnly ? true : (a.idempotentHint ?? false),
    openWorldHint: a.openWorldHint ?? true,
  };
}
export interface ToolAnnotationsFull {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * One tool's listing entry. `token`: whether its confirmation_token argument is shown (a policy
 * that protects none of the tool's capability never asks for one; the argument is still accepted).
 */
function toolEntry(def: ToolDef, token: boolean): Tool {
  const inputSchema = trimInputSchema(jsonSchemaOf(def.input, "input"));
  if (!token && typeof inputSchema.properties === "object" && inputSchema.properties !== null) {
    const { confirmation_token: _hidden, ...rest } = inputSchema.properties as Record<string, unknown>;
    inputSchema.properties = rest;
  }
  const annotations = annotationsOf(def);
  const outputSchema = outputSchemaOf(def);
  return {
    name: def.name,
    title: def.title,
    description: def.description,
    inputSchema: inputSchema as Tool["inputSchema"],
    ...(outputSchema ? { outputSchema } : {}),
    ...(annotations && Object.keys(annotations).length > 0 ? { annotations } : {}),
  };
}

/** Each table row's listing entries (with and without the token), built once: schemas do not change. */
const ENTRIES: ReadonlyMap<string, { token: Tool; plain: Tool }> = new Map(
  TOOLS.map((d) => [d.name, { token: toolEntry(d, true), plain: toolEntry(d, false) }]),
);

/**
 * Tool listing derived from the table: schemas, annotations, nothing hand-written. `protects`
 * says which capabilities the policy protects (confirmation_token shown only on their tools);
 * without it every tool that takes the token shows it.
 */
export function listTools(
  defs: readonly ToolDef[] = TOOLS,
  protects: (c: Capability) => boolean = () => true,
): Tool[] {
  return defs.map((d) => {
    const token = d.capability !== null && protects(d.capability);
    const e = ENTRIES.get(d.name);
    return e ? (token ? e.token : e.plain) : toolEntry(d, token);
  });
}

/** The listing for the supervisor's policy as it is now (tools/list). */
export function listToolsFor(sup: Supervisor): Tool[] {
  const state = policyStatusAt(sup.policyState, () => new Date(sup.clock()));
  const policy = state.status === "ok" ? state.policy : null;
  return listTools(toolsForPolicy(state), (c) => policy !== null && isProtected(policy, c));
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

function auditAction(def: ToolDef, ctx: ChainRecord | null): AuditAction {
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
  let ctx = null as ChainRecord | null; // set by the chain as soon as it exists
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
      onRecord: (c) => {
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

/** A refusal of a resource request, as a JSON-RPC error carrying the error table's code. */
function resourceError(e: unknown): McpError {
  const err = e instanceof UiError ? e : uiError("platform_unavailable");
  const rpc = err.code === "invalid_argument" ? ErrorCode.InvalidParams : ErrorCode.InvalidRequest;
  return new McpError(rpc, err.message, { code: err.code });
}

/** The session's frame streams as MCP resources (src/supervisor/streams.ts). */
function wireFrameStreams(sup: Supervisor, server: Server): FrameStreams {
  const streams = new FrameStreams(
    sup,
    (uri, meta) => {
      if (server.transport === undefined) return;
      server
        .sendResourceUpdated({ uri, _meta: meta })
        .catch(() => sup.log.debug({}, "resource_update_not_sent"));
    },
    () => {
      if (server.transport === undefined) return;
      server.sendResourceListChanged().catch(() => sup.log.debug({}, "resource_list_changed_not_sent"));
    },
  );
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: streams.list() }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: streams.templates(),
  }));
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    try {
      await streams.subscribe(request.params.uri);
      return {};
    } catch (e) {
      throw resourceError(e);
    }
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    streams.unsubscribe(request.params.uri);
    return {};
  });
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    try {
      const { png, meta } = await streams.read(request.params.uri);
      return {
        contents: [
          {
            uri: request.params.uri,
            mimeType: "image/png",
            blob: Buffer.from(png.buffer, png.byteOffset, png.byteLength).toString("base64"),
            _meta: meta,
          },
        ],
      };
    } catch (e) {
      throw resourceError(e);
    }
  });
  return streams;
}

/** Wires the tool table into an MCP server (low-level API: we own validation and errors). */
export function createMcpServer(sup: Supervisor, onClientInfo: (info: unknown) => void): Server {
  const server = new Server(
    { name: "uiinspect-mcp", version: sup.version },
    {
      capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } },
      instructions:
        "Deny-by-default desktop automation. Call list_windows, then request_access for a window (a person approves it), then inspect/screenshot/act. A window is named by exactly one of hwnd (from list_windows) or title_contains (a substring matching exactly one allowed window). Protected actions (text, close, drag by default) need a confirmation_token from request_confirmation. Element actions go through the semantic pattern only (else pattern_not_supported), and take expect to report verified.",
    },
  );
  server.oninitialized = () => onClientInfo(server.getClientVersion() ?? null);
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listToolsFor(sup) }));
  // Each connected session hears when the policy changes what can be listed.
  // Compared whole: a policy that starts protecting a capability changes its tools' arguments.
  let listed = JSON.stringify(listToolsFor(sup));
  const stop = sup.onPolicyChange?.(() => {
    const now = JSON.stringify(listToolsFor(sup));
    if (now === listed || server.transport === undefined) return;
    listed = now;
    server.sendToolListChanged().catch(() => sup.log.debug({}, "tools_list_changed_not_sent"));
  });
  const streams = wireFrameStreams(sup, server);
  const previousOnClose = server.onclose;
  server.onclose = () => {
    stop?.();
    streams.close();
    previousOnClose?.();
  };
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const progressToken = request.params._meta?.progressToken;
    // A call may grant or end access: the frame resources may differ after it.
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
    }).finally(() => streams.checkList());
  });
  return server;
}
