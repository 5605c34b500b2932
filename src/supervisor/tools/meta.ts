import { z } from "zod";
import { AuditEventSchema } from "../audit.js";
import { defineMetaTool } from "./define.js";

const Usage = z.object({ used: z.number(), limit: z.number() });

export const metaTools = [
  defineMetaTool({
    name: "get_rate_limit_state",
    title: "Rate limit state",
    description: "Rate limits and usage (sliding 60 s), this client's and per application.",
    capability: "observe",
    budget: "none",
    audited: false,
    input: z.strictObject({}),
    output: z.object({
      window_ms: z.number(),
      client: z.object({ discovery: Usage, inspection: Usage, action: Usage }),
      application_limits: z.object({
        max_actions_per_minute: z.number(),
        max_text_chars_per_minute: z.number(),
        max_screenshot_pixels_per_minute: z.number(),
      }),
      applications: z.array(
        z.object({
          hwnd: z.string(),
          pid: z.number(),
          actions: Usage,
          /** null while another client also holds a grant here: its typing must not show (lengths). */
          text_chars: Usage.nullable(),
          screenshot_pixels: Usage,
        }),
      ),
      memory: z.object({ limit_bytes: z.number(), in_use_bytes: z.number(), peak_bytes: z.number() }),
    }),
    effect: "read_only",
    uses: ["usage", "grants"],
    handler: async (call) => {
      const { limits } = call.policy;
      const s = call.usage.client();
      const applications = call.grants
        .mine()
        .map((g) => {
          const usage = call.usage.application(g.instanceKey, limits);
          const shared = call.usage.sharedWithOthers(g.instanceKey);
          return {
            hwnd: g.hwnd,
            pid: g.instance.pid,
            ...usage,
            text_chars: shared ? null : usage.text_chars,
          };
        })
        .sort((a, b) => compareHwnd(a.hwnd, b.hwnd) || a.pid - b.pid);
      return {
        structured: {
          window_ms: s.window_ms,
          client: s.client,
          application_limits: {
            max_actions_per_minute: limits.max_actions_per_minute,
            max_text_chars_per_minute: limits.max_text_chars_per_minute,
            max_screenshot_pixels_per_minute: limits.max_screenshot_pixels_per_minute,
          },
          applications,
          memory: call.usage.memory(),
        },
      };
    },
  }),

  defineMetaTool({
    name: "get_audit_events",
    title: "Audit events",
    description: "Newest audit events of this client (codes and counts only).",
    capability: "observe",
    budget: "none",
    audited: false,
    input: z.strictObject({ limit: z.number().int().min(1).max(100).default(20) }),
    output: z.object({ events: z.array(AuditEventSchema) }),
    effect: "read_only",
    // Only the caller's own events: in remote mode one server serves several identities.
    uses: ["audit"],
    handler: async (call, args) => ({
      structured: { events: call.audit.mine(args.limit) },
    }),
  }),
];

/** Shorter first, then by text: numeric order for decimal hwnds, a stable order for any other form. */
function compareHwnd(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
