import { z } from "zod";
import { refuseUnactionable } from "../../shared/actionable.js";
import { isUiError, uiError } from "../../shared/errors.js";
import { instanceKey, sameInstance } from "../../shared/identity.js";
import {
  accessFacts,
  applyGrantDecision,
  authorizeCapability,
  decideAccess,
  firstRefusal,
  isRefusal,
  leaseCapabilities,
} from "../access/accessDecision.js";
import { liveWindows } from "../access/liveWindows.js";
import { pickTarget } from "../access/targets.js";
import { withWaitProgress } from "../consent/progress.js";
import { actionNotAllowedMessage } from "../policy/match.js";
import { CAPABILITIES, type Capability, CapabilitySchema } from "../policy/schema.js";
import { requirePolicy } from "../supervisor.js";
import { defineConsentTool, defineOpenTool } from "./define.js";
import { withTarget } from "./shapes.js";

const Capabilities = z.array(CapabilitySchema).min(1).max(CAPABILITIES.length);

/**
 * Classes whose every use is input to the window in front. `text` is not among them: a text token
 * also serves set_element_value, which needs no focus (send_text still refuses not_foreground).
 */
const INPUT_CLASSES: ReadonlySet<string> = new Set(["click", "hover", "drag", "key"]);

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
    mode: "consent",
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
    handler: async (ctx, args) => {
      const { sup, policy, target } = ctx;
      const allowed = CAPABILITIES.filter((c) => policy.allowed_actions.has(c));
      // Under the lease the default is what both the policy and the lease allow; a capability
      // asked for explicitly outside the lease still needs a person (consent_required).
      const defaults = sup.lease ? leaseCapabilities(sup.lease, policy) : allowed;
      const wanted: Capability[] = args.capabilities ? [...new Set(args.capabilities)] : defaults;
      if (sup.lease && !args.capabilities && wanted.length === 0 && allowed.length > 0)
        throw uiError(
          "consent_required",
          "The unattended lease covers none of the actions this policy allows.",
        );
      if (wanted.length === 0)
        throw uiError("action_not_allowed", "The policy allows no action, so there is nothing to grant.");
      const outside = wanted.filter((c) => !policy.allowed_actions.has(c));
      if (outside.length > 0)
        throw uiError("action_not_allowed", actionNotAllowedMessage(policy.source, outside));
      ctx.counters.capabilities = wanted.length;
      if (sup.lease) {
        for (const c of wanted) await authorizeCapability(sup, ctx.client.hash, target, c, policy);
        const g = sup.grants.get(ctx.client.hash, target.instanceKey);
        return {
          structured: {
            decision: "approved" as const,
            capabilities: wanted,
            expires_at: g ? new Date(g.expiresAt).toISOString() : null,
            source: "lease" as const,
          },
        };
      }
      let decision: Awaited<ReturnType<typeof sup.consent.request>>;
      try {
        // Clients that show progress can say "waiting for approval" while the dialog is open.
        decision = await withWaitProgress(
          sup.consent.request({
            clientHash: ctx.client.hash,
            clientLabel: ctx.client.label,
            clientVerified: ctx.client.verified,
            instance: target.instance,
            capabilities: wanted,
            signal: ctx.signal,
          }),
          ctx.progress,
          { totalMs: sup.config.consentTimeoutMs },
        );
      } catch (e) {
        // The instance left during the prompt. If another process now owns the window (PID
        // reuse), the identity before and after the prompt differs: that is target_changed.
        if (isUiError(e) && e.code === "target_gone") {
          const now = (await liveWindows(sup, ctx.signal)).find((w) => w.hwnd === target.window.hwnd);
          if (now?.instance && !sameInstance(now.instance, target.instance)) throw uiError("target_changed");
        }
        throw e;
      }
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
      if (sup.portal) {
        const second = await withWaitProgress(
          sup.portal.admit({
            client: ctx.client.hash,
            instance: target.instance,
            hwnd: target.window.hwnd,
            signal: ctx.signal,
          }),
          ctx.progress,
          { totalMs: sup.config.consentTimeoutMs },
        ).catch((e: unknown) => {
          // Not allowed at the compositor: the first gate's approval is not kept either.
          if (!(isUiError(e) && e.code === "cancelled"))
            sup.consent.forgetApproval(ctx.client.hash, target.instanceKey);
          throw e;
        });
        if (second === "declined") {
          sup.consent.forgetApproval(ctx.client.hash, target.instanceKey);
          return {
            structured: {
              decision: "denied" as const,
              capabilities: [],
              expires_at: null,
              source: "dialog" as const,
              note: PORTAL_DECLINED_NOTE,
            },
          };
        }
      }
      // Re-resolve after the prompt: the window must still belong to the approved instance.
      let again: ReturnType<typeof pickTarget>;
      try {
        again = pickTarget(policy, await liveWindows(sup, ctx.signal), { hwnd: target.window.hwnd });
      } catch (e) {
        // No grant comes of it, so no portal session may stay open for it either.
        sup.portal?.end(ctx.client.hash, target.instanceKey);
        throw e;
      }
      if (!sameInstance(again.instance, target.instance)) {
        sup.grants.revokeInstance(target.instanceKey, "target_changed");
        sup.portal?.endInstance(target.instanceKey);
        throw uiError("target_changed");
      }
      const grant = sup.grants.put({
        client: ctx.client.hash,
        instance: target.instance,
        hwnd: target.window.hwnd,
        capabilities: decision.capabilities,
      });
      sup.grants.clearReleased(ctx.client.hash, target.instanceKey);
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
    handler: async (ctx) => ({
      structured: {
        grants: ctx.sup.grants.listForClient(ctx.client.hash).map((g) => ({
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
    handler: async (ctx, args) => {
      const { sup } = ctx;
      const client = ctx.client.hash;
      let keys: string[];
      if (args.hwnd !== undefined) {
        // This client's grants on that hwnd, live window or not.
        keys = sup.grants.listForClient(client).flatMap((g) => (g.hwnd === args.hwnd ? [g.instanceKey] : []));
        if (keys.length === 0) {
          const live = (await liveWindows(sup, ctx.signal)).find((w) => w.hwnd === args.hwnd);
          if (!live) throw uiError("target_not_found");
          keys = live.instance ? [instanceKey(live.instance)] : [];
        }
      } else {
        keys = [pickTarget(requirePolicy(sup), await liveWindows(sup, ctx.signal), args).instanceKey];
      }
      let released = false;
      for (const key of keys) {
        released = sup.grants.release(client, key) || released;
        // No silent renewal from the kept decision after this, and no reuse of the approval:
        // the next request_access asks the person again. A kept Deny is not forgotten here.
        sup.grants.markReleased(client, key);
        sup.consent.forgetApproval(client, key);
        sup.portal?.end(client, key);
        sup.sessions.disposeByInstance(key, client);
      }
      return { structured: { released } };
    },
  }),

  defineConsentTool({
    name: "request_confirmation",
    title: "Request a confirmation token",
    description:
      "A single-use confirmation_token (≤ 300 s) for one protected action class on this process instance.",
    mode: "confirmation",
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
    handler: async (ctx, args) => {
      const { sup, policy, target: t } = ctx;
      // The one decision the action itself would get; the token it asks for is what is missing.
      const decision = decideAccess(
        accessFacts(sup, ctx.client.hash, t, args.action_class, policy, "absent"),
      );
      if (isRefusal(decision.grant) && decision.grant.refused === "action_not_allowed")
        throw uiError("action_not_allowed", actionNotAllowedMessage(policy.source, [args.action_class]));
      if (!decision.requiresConfirmation)
        throw uiError("invalid_argument", "This action class is not protected; it needs no token.");
      await applyGrantDecision(sup, ctx.client.hash, t, policy, decision, args.action_class);
      // As the action itself will check: input needs the window in front, unless the server is
      // configured to bring it there first (focus mode "activate").
      refuseUnactionable(
        t.window,
        INPUT_CLASSES.has(args.action_class) && sup.config.focusMode === "passive",
      );
      const issued = sup.tokens.issue(ctx.client.hash, t.instanceKey, args.action_class, args.ttl_seconds);
      return {
        structured: {
          confirmation_token: issued.token_id,
          token_id: issued.token_id,
          action_class: args.action_class,
          expires_at: issued.expires_at,
        },
      };
    },
  }),

  defineConsentTool({
    name: "preview_action",
    title: "Preview an action",
    description: "Whether an action class would be allowed on the window and needs a token.",
    mode: "consent",
    args: { action_class: CapabilitySchema },
    output: z.object({
      allowed: z.boolean(),
      requires_confirmation: z.boolean(),
      has_valid_token: z.boolean(),
      reason: z.string(),
    }),
    effect: "read_only",
    handler: async (ctx, args) => {
      const { sup, policy, target } = ctx;
      const hasToken = sup.tokens.hasValid(ctx.client.hash, target.instanceKey, args.action_class);
      // The decision the action itself would get (src/supervisor/access/accessDecision.ts), without the
      // lease's word (asked only when acting) and without renewing anything.
      const decision = decideAccess(
        accessFacts(sup, ctx.client.hash, target, args.action_class, policy, hasToken ? "valid" : "absent"),
      );
      const reason = firstRefusal(decision)?.refused ?? "ok";
      return {
        structured: {
          allowed: reason === "ok",
          requires_confirmation: decision.requiresConfirmation,
          has_valid_token: hasToken,
          reason,
        },
      };
    },
  }),
];
