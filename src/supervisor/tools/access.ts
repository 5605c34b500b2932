import { z } from "zod";
import { isUiError, uiError } from "../../shared/errors.js";
import { instanceKey, sameInstance } from "../../shared/identity.js";
import { firstRefusal, isRefusal, throwRefusal } from "../access/accessDecision.js";
import type { WindowCall } from "../access/calls.js";
import type { ConsentService, DesktopService } from "../access/services.js";
import { pickTarget } from "../access/targets.js";
import { actionNotAllowedMessage } from "../policy/match.js";
import { CAPABILITIES, type Capability, CapabilitySchema } from "../policy/schema.js";
import { defineConsentTool, defineDecisionTool, defineOpenTool } from "./define.js";
import { withTarget } from "./shapes.js";

const Capabilities = z.array(CapabilitySchema).min(1).max(CAPABILITIES.length);

/** What a reused decision means and how a person (not the agent) resets it (docs/reference.md). */
export const KEPT_APPROVAL_NOTE =
  "A person approved this process instance earlier in this server's run; that approval was reused without a dialog. It is kept until the server restarts or the application exits; release_access gives it up, so the next request_access asks again.";
export const KEPT_DENY_NOTE =
  "A person denied this process instance earlier in this server's run; the Deny is kept and not asked again. A person resets it by restarting the server (reconnecting it in the MCP client) or the application (a new process is asked anew).";

/** The person cancelled the compositor's own dialog (the second gate on Wayland). */
export const PORTAL_DECLINED_NOTE =
  "The compositor's sharing dialog was cancelled: the window was not picked or control was not allowed. Nothing is kept; request_access asks again.";

export const accessTools = [
  defineConsentTool({
    name: "request_access",
    title: "Request access to a window",
    description:
      "Asks the person at this desktop (server-owned dialog) to grant capabilities (default: all the policy allows) on this process instance.",
    args: { capabilities: Capabilities.optional() },
    correlated: true,
    output: z.object({
      decision: z.enum(["approved", "denied"]),
      capabilities: z.array(z.string()),
      expires_at: z.string().nullable(),
      source: z.enum(["dialog", "cached", "lease"]),
      reason: z.enum(["dialog_tampered"]).optional(),
      /** Why the dialog decided so, or with a kept decision: that it was reused and how a person resets it. */
      note: z.string().optional(),
    }),
    effect: "idempotent_effect",
    uses: ["consent", "desktop"],
    handler: async (call, args) => {
      const { policy, target, consent } = call;
      const allowed = CAPABILITIES.filter((c) => policy.allowed_actions.has(c));
      // Under the lease the default is what both the policy and the lease allow; a capability
      // asked for explicitly outside the lease still needs a person (consent_required).
      const lease = consent.leaseCapabilities();
      const wanted: Capability[] = args.capabilities ? [...new Set(args.capabilities)] : (lease ?? allowed);
      if (lease && !args.capabilities && wanted.length === 0 && allowed.length > 0)
        throw uiError(
          "consent_required",
          "The unattended lease covers none of the actions this policy allows.",
        );
      if (wanted.length === 0)
        throw uiError("action_not_allowed", "The policy allows no action, so there is nothing to grant.");
      const outside = wanted.filter((c) => !policy.allowed_actions.has(c));
      if (outside.length > 0)
        throw uiError("action_not_allowed", actionNotAllowedMessage(policy.source, outside));
      call.counters.capabilities = wanted.length;
      if (lease) {
        const expiresAt = await consent.viaLease(wanted);
        return {
          structured: {
            decision: "approved" as const,
            capabilities: wanted,
            expires_at: expiresAt === null ? null : new Date(expiresAt).toISOString(),
            source: "lease" as const,
          },
        };
      }
      const decision = await askPerson(call, wanted);
      if (decision.decision === "denied") {
        return {
          structured: {
            decision: "denied" as const,
            capabilities: [],
            expires_at: null,
            source: decision.source,
            ...(decision.source === "cached" ? { note: KEPT_DENY_NOTE } : {}),
            ...(decision.reason ? { reason: decision.reason, note: decision.note } : {}),
          },
        };
      }
      // The second gate where the compositor has one: its own dialog, where the person picks the
      // window and allows control. The grant lives only as long as that portal session.
      if ((await consent.portal()) === "declined")
        return {
          structured: {
            decision: "denied" as const,
            capabilities: [],
            expires_at: null,
            source: "dialog" as const,
            note: PORTAL_DECLINED_NOTE,
          },
        };
      // Re-resolve after the prompt: the window must still belong to the approved instance.
      let again: ReturnType<typeof pickTarget>;
      try {
        again = pickTarget(policy, await call.desktop.windows(), { hwnd: target.window.hwnd });
      } catch (e) {
        // No grant comes of it, so no portal session may stay open for it either.
        consent.endPortal();
        throw e;
      }
      if (!sameInstance(again.instance, target.instance)) {
        consent.revokeChanged();
        throw uiError("target_changed");
      }
      const grant = await consent.grant(decision.capabilities);
      return {
        structured: {
          decision: "approved" as const,
          capabilities: [...grant.capabilities],
          expires_at: new Date(grant.expiresAt).toISOString(),
          source: decision.source,
          ...(decision.source === "cached" ? { note: KEPT_APPROVAL_NOTE } : {}),
        },
      };
    },
  }),

  defineOpenTool({
    name: "get_access_state",
    title: "Access state",
    description: "This client's live grants: hwnd, pid, capabilities, expiry.",
    input: z.strictObject({}),
    output: z.object({
      grants: z.array(
        z.object({
          hwnd: z.string(),
          pid: z.number(),
          capabilities: z.array(z.string()),
          expires_at: z.string(),
        }),
      ),
    }),
    effect: "read_only",
    uses: ["grants"],
    handler: async (call) => ({
      structured: {
        grants: call.grants.mine().map((g) => ({
          hwnd: g.hwnd,
          pid: g.instance.pid,
          capabilities: [...g.capabilities],
          expires_at: new Date(g.expiresAt).toISOString(),
        })),
      },
    }),
  }),

  defineOpenTool({
    name: "release_access",
    title: "Release access",
    description: "Drops this client's grant for the window (and its automation session).",
    // Giving up access is always allowed: no policy, grant or live window is needed for it.
    input: withTarget({}),
    correlated: true,
    output: z.object({ released: z.boolean() }),
    effect: "idempotent_effect",
    uses: ["desktop", "grants", "policies"],
    handler: async (call, args) => {
      let keys: string[];
      if (args.hwnd !== undefined) {
        // This client's grants on that hwnd, live window or not.
        keys = call.grants.mine().flatMap((g) => (g.hwnd === args.hwnd ? [g.instanceKey] : []));
        if (keys.length === 0) {
          const live = (await call.desktop.windows()).find((w) => w.hwnd === args.hwnd);
          if (!live) throw uiError("target_not_found");
          keys = live.instance ? [instanceKey(live.instance)] : [];
        }
      } else {
        keys = [pickTarget(call.policies.required(), await call.desktop.windows(), args).instanceKey];
      }
      let released = false;
      // No silent renewal from the kept decision after this, and no reuse of the approval:
      // the next request_access asks the person again. A kept Deny is not forgotten here.
      for (const key of keys) released = call.grants.release(key) || released;
      return { structured: { released } };
    },
  }),

  defineDecisionTool({
    name: "request_confirmation",
    title: "Request a confirmation token",
    description:
      "A single-use confirmation_token (≤ 300 s) for one protected action class on this process instance.",
    decides: "issue",
    args: {
      action_class: CapabilitySchema,
      ttl_seconds: z.number().int().min(1).max(300).default(60),
    },
    correlated: true,
    output: z.object({
      /** The name the protected tools take it under. */
      confirmation_token: z.string(),
      /** The same token under its former name; kept for one release. */
      token_id: z.string(),
      action_class: z.string(),
      expires_at: z.string(),
    }),
    effect: "effect",
    uses: ["tokens"],
    handler: async (call, args) => {
      // The one decision the action itself would get; the token it asks for is what is missing.
      const { decision, capability } = call.decision;
      if (isRefusal(decision.grant) && decision.grant.refused === "action_not_allowed")
        throwRefusal(decision.grant);
      if (!decision.requiresConfirmation)
        throw uiError("invalid_argument", "This action class is not protected; it needs no token.");
      await call.tokens.holdGrant();
      // As the action itself will check (the worker, right before): no token for a window the
      // action would be refused on.
      if (isRefusal(decision.window)) throwRefusal(decision.window);
      const issued = call.tokens.issue(capability, args.ttl_seconds);
      return {
        structured: {
          confirmation_token: issued.token_id,
          token_id: issued.token_id,
          action_class: capability,
          expires_at: issued.expires_at,
        },
      };
    },
  }),

  defineDecisionTool({
    name: "preview_action",
    title: "Preview an action",
    description: "Whether an action class would be allowed on the window and needs a token.",
    decides: "report",
    args: { action_class: CapabilitySchema },
    output: z.object({
      allowed: z.boolean(),
      requires_confirmation: z.boolean(),
      has_valid_token: z.boolean(),
      reason: z.string(),
    }),
    effect: "read_only",
    // The decision the action itself would get (src/supervisor/access/accessDecision.ts), without
    // the lease's word (asked only when acting) and without renewing anything.
    handler: async (call) => {
      const { decision, hasValidToken } = call.decision;
      const reason = firstRefusal(decision)?.refused ?? "ok";
      return {
        structured: {
          allowed: reason === "ok",
          requires_confirmation: decision.requiresConfirmation,
          has_valid_token: hasValidToken,
          reason,
        },
      };
    },
  }),
];

/** request_access's dialog; an instance that left during it and was replaced is target_changed. */
async function askPerson(
  call: WindowCall & { consent: ConsentService; desktop: DesktopService },
  wanted: Capability[],
) {
  const { target } = call;
  try {
    return await call.consent.ask(wanted);
  } catch (e) {
    // The instance left during the prompt. If another process now owns the window (PID
    // reuse), the identity before and after the prompt differs: that is target_changed.
    if (isUiError(e) && e.code === "target_gone") {
      const now = (await call.desktop.windows()).find((w) => w.hwnd === target.window.hwnd);
      if (now?.instance && !sameInstance(now.instance, target.instance)) throw uiError("target_changed");
    }
    throw e;
  }
}
