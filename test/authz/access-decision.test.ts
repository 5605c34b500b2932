import { describe, expect, it } from "vitest";
import {
  type AccessFacts,
  decideAccess,
  firstRefusal,
  isRefusal,
} from "../../src/supervisor/access/accessDecision.js";

/**
 * decideAccess is the one answer to "may this client use this capability on this instance now",
 * for the chain, request_access / request_confirmation and preview_action. It is pure: every
 * case here is a table of facts, with the clock passed in.
 */

const NOW = 1_000_000;

function facts(over: Partial<AccessFacts> = {}): AccessFacts {
  return {
    capability: "click",
    allowed: true,
    policySource: "file",
    protected: false,
    lease: null,
    grant: { capabilities: new Set(["click", "observe"]), expiresAt: NOW + 60_000 },
    kept: { decision: "approved", capabilities: ["click", "observe"] },
    released: false,
    token: "absent",
    now: NOW,
    window: { iconic: false, visible: true, foreground: true },
    needsFront: false,
    ...over,
  };
}

const refusal = (f: AccessFacts) => firstRefusal(decideAccess(f));

describe("decideAccess", () => {
  it("a live grant holding the capability allows it, without renewal", () => {
    const d = decideAccess(facts());
    expect(d.grant).toEqual({ via: "grant" });
    expect(d.renew).toBe(false);
    expect(d.confirmation).toBe("not_required");
    expect(firstRefusal(d)).toBeNull();
  });

  it("the policy ceiling comes first, whatever the grant or lease says", () => {
    expect(refusal(facts({ allowed: false }))).toEqual({
      refused: "action_not_allowed",
      message:
        "The policy does not allow the action click; to allow it, add it to the policy file's allowed_actions.",
    });
    expect(refusal(facts({ allowed: false, lease: { covers: true } }))?.refused).toBe("action_not_allowed");
    expect(refusal(facts({ allowed: false, policySource: "env" }))?.message).toContain(
      "DESKTOP_AUTOMATION_ALLOWED_ACTIONS",
    );
  });

  it("a grant that expired by the injected clock counts as none: the kept decision renews it", () => {
    const expired = facts({ grant: { capabilities: new Set(["click"]), expiresAt: NOW } });
    const d = decideAccess(expired);
    expect(d.grant).toEqual({ via: "kept_decision" });
    expect(d.renew).toBe(true);
    // One millisecond earlier the same grant is still live.
    expect(decideAccess({ ...expired, now: NOW - 1 }).grant).toEqual({ via: "grant" });
  });

  it("no grant: an approval renews, a denial is consent_denied, nothing is consent_required", () => {
    expect(decideAccess(facts({ grant: null })).grant).toEqual({ via: "kept_decision" });
    const denied = refusal(facts({ grant: null, kept: { decision: "denied", capabilities: [] } }));
    expect(denied?.refused).toBe("consent_denied");
    // It says the Deny is kept and how a person (not the agent) resets it.
    expect(denied?.message).toContain("restarting the server");
    expect(refusal(facts({ grant: null, kept: null }))).toEqual({ refused: "consent_required" });
  });

  it("after release_access the kept approval renews nothing, but a kept denial still reads as one", () => {
    const released = decideAccess(facts({ grant: null, released: true }));
    expect(released.renew).toBe(false);
    expect(released.grant).toEqual({ refused: "consent_required" });
    expect(
      refusal(facts({ grant: null, released: true, kept: { decision: "denied", capabilities: [] } }))
        ?.refused,
    ).toBe("consent_denied");
  });

  it("a capability outside the grant is consent_required; the kept decision still renews the grant", () => {
    const d = decideAccess(
      facts({ capability: "text", grant: null, kept: { decision: "approved", capabilities: ["click"] } }),
    );
    expect(d.renew).toBe(true);
    expect(isRefusal(d.grant) && d.grant.refused).toBe("consent_required");
    expect(refusal(facts({ capability: "text" }))?.refused).toBe("consent_required");
  });

  it("under the lease only its coverage counts: grants and kept decisions play no part", () => {
    const base = { grant: null, kept: { decision: "denied" as const, capabilities: [] } };
    expect(decideAccess(facts({ ...base, lease: { covers: true } })).grant).toEqual({ via: "lease" });
    expect(decideAccess(facts({ ...base, lease: { covers: true } })).renew).toBe(false);
    expect(refusal(facts({ lease: { covers: false } }))?.refused).toBe("consent_required");
  });

  it("a protected capability needs a valid token, and the grant is asked about first", () => {
    const required = refusal(facts({ protected: true }));
    expect(required?.refused).toBe("confirmation_required");
    // The refusal names the tool that gives the token, with the class to ask for.
    expect(required?.message).toContain('request_confirmation {hwnd, action_class: "click"}');
    expect(refusal(facts({ protected: true, token: "invalid" }))?.refused).toBe("confirmation_invalid");
    expect(decideAccess(facts({ protected: true, token: "valid" })).confirmation).toBe("valid");
    expect(refusal(facts({ protected: true, token: "valid" }))).toBeNull();
    // No grant and no token: the client hears about the grant, not the token.
    expect(refusal(facts({ protected: true, grant: null, kept: null }))?.refused).toBe("consent_required");
    // A token for an unprotected class changes nothing.
    expect(decideAccess(facts({ token: "invalid" })).confirmation).toBe("not_required");
  });

  it("the window part is the shared actionable predicate; it refuses nothing else and preview ignores it", () => {
    const shown = { iconic: false, visible: true, foreground: false };
    expect(decideAccess(facts({ window: shown })).window).toBe("ok");
    expect(decideAccess(facts({ window: shown, needsFront: true })).window).toEqual({
      refused: "not_foreground",
    });
    expect(decideAccess(facts({ window: { ...shown, iconic: true } })).window).toEqual({
      refused: "minimized",
    });
    expect(decideAccess(facts({ window: { ...shown, visible: false } })).window).toMatchObject({
      refused: "target_gone",
    });
    // restore_window acts on a minimized window: the grant and token parts do not change with it.
    const minimized = decideAccess(facts({ window: { ...shown, iconic: true }, needsFront: true }));
    expect(minimized.grant).toEqual({ via: "grant" });
    expect(firstRefusal(minimized)).toBeNull();
  });
});
