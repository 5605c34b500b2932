import { z } from "zod";
import { AuditEventSchema } from "../audit.js";
import { defineTool } from "./define.js";
import { READ_ONLY } from "./shapes.js";

const Usage = z.object({ used: z.number(), limit: z.number() });

export const metaTools = [
  defineTool({
    name: "get_rate_limit_state",
    title: "Rate limit state",
    description: "This client's rate limits and usage in the sliding 60 s window (never keys or identities).",
    capability: "observe",
    budget: "none",
    target: "none",
    input: z.strictObject({}),
    output: z.object({
      window_ms: z.number(),
      client: z.object({ discovery: Usage, inspection: Usage, action: Usage }),
      memory: z.object({ limit_bytes: z.number(), in_use_bytes: z.number(), peak_bytes: z.number() }),
    }),
    annotations: READ_ONLY,
    handler: async (ctx) => {
      const s = ctx.sup.budgets.state(ctx.client.hash);
      const m = ctx.sup.memory;
      return {
        structured: {
          window_ms: s.window_ms,
          client: s.client,
          memory: { limit_bytes: m.limitBytes, in_use_bytes: m.inUse, peak_bytes: m.peak },
        },
      };
    },
  }),

  defineTool({
    name: "get_audit_events",
    title: "Audit events",
    description: "The newest audit events of this server, redacted by construction (codes and counts only).",
    capability: "observe",
    budget: "none",
    target: "none",
    input: z.strictObject({ limit: z.number().int().min(1).max(1000).default(20) }),
    output: z.object({ events: z.array(AuditEventSchema) }),
    annotations: READ_ONLY,
    handler: async (ctx, args) => ({ structured: { events: ctx.sup.audit.recent(args.limit) } }),
  }),
];
