import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { AccessDecision } from "../../src/supervisor/access/accessDecision.js";
import type { Admitted, ChainRecord, ClassDecision } from "../../src/supervisor/access/calls.js";
import type { Services } from "../../src/supervisor/access/services.js";
import { accessTools } from "../../src/supervisor/tools/access.js";
import {
  type DiscoveryServices,
  defineDiscoveryTool,
  defineWindowTool,
  type MetaServices,
  type OpenServices,
  type RefServices,
  type ToolDef,
  type WindowServices,
} from "../../src/supervisor/tools/define.js";
import { TOOLS } from "../../src/supervisor/tools/index.js";
import { codeOf } from "../support/codes.js";

/**
 * A handler gets a frozen call object with its kind's fields and exactly the services its row
 * names (src/supervisor/access/services.ts): never the supervisor, never another service. The
 * type-level half is checked by tsc (`npx tsc -p tsconfig.test.json`: each @ts-expect-error
 * below must be an error), the runtime half here.
 */

const ALL: Services = new Proxy({} as Services, {
  get: (_t, name) => Object.freeze({ service: String(name) }),
});
const EVERY_SERVICE = Object.keys({
  desktop: 1,
  capture: 1,
  input: 1,
  sessions: 1,
  consent: 1,
  tokens: 1,
  grants: 1,
  usage: 1,
  audit: 1,
  policies: 1,
  server: 1,
} satisfies Record<keyof Services, 1>) as (keyof Services)[];

function record(over: Partial<ChainRecord> = {}): ChainRecord {
  return {
    correlationId: "0123456789ab",
    client: { hash: "client" } as ChainRecord["client"],
    counters: {},
    policy: { source: "file" } as ChainRecord["policy"],
    target: { instanceKey: "k", expectation: { hwnd: "1001" } } as unknown as ChainRecord["target"],
    grant: null,
    capability: "observe",
    charge: null,
    decision: null,
    held: null,
    ...over,
  };
}

/** What the chain hands a row, here with every service there is on offer. */
function admitted(over: Partial<ChainRecord> = {}, services: Partial<Services> = ALL): Admitted {
  const offered: Partial<Services> = {};
  for (const n of EVERY_SERVICE) if (services[n]) offered[n] = services[n] as never;
  return {
    record: record(over),
    signal: new AbortController().signal,
    progress: async () => {},
    services: offered,
  };
}

describe("call objects", () => {
  it("a window tool's call carries its kind's fields and only the services its row names, frozen", async () => {
    let seen: object | null = null;
    const row = defineWindowTool({
      name: "probe_window",
      title: "probe",
      description: "probe",
      capability: "observe",
      budget: "inspection",
      args: {},
      output: z.object({}),
      effect: "read_only",
      uses: ["capture"],
      handler: async (call) => {
        seen = call;
        // @ts-expect-error the row did not name the input service
        void call.input;
        // @ts-expect-error no handler reaches the supervisor
        void call.sup;
        return { structured: {} };
      },
    });
    expect(row.uses).toEqual(["capture"]);
    await row.handler(admitted(), { hwnd: "1001" });
    const call = seen as unknown as Record<string, unknown>;
    expect(Object.isFrozen(call)).toBe(true);
    expect(Object.keys(call).sort()).toEqual(
      [
        "capture",
        "charge",
        "client",
        "correlationId",
        "counters",
        "policy",
        "progress",
        "signal",
        "target",
      ].sort(),
    );
    for (const n of EVERY_SERVICE.filter((s) => s !== "capture")) expect(call[n]).toBeUndefined();
    expect(call.sup).toBeUndefined();
    // ESM is strict: writing to the frozen call throws instead of widening it.
    expect(() => {
      call.input = ALL.input;
    }).toThrow(TypeError);
    // The audit counters are the one part a handler writes.
    (call.counters as Record<string, number>).n = 1;
  });

  it("a row whose service the chain did not build fails as a server bug, not as a refusal", async () => {
    const row = defineDiscoveryTool({
      name: "probe_discovery",
      title: "probe",
      description: "probe",
      input: z.strictObject({}),
      output: z.object({}),
      effect: "read_only",
      uses: ["desktop"],
      handler: async () => ({ structured: {} }),
    });
    await expect(row.handler(admitted({}, {}), {})).rejects.toThrow(/desktop service/);
  });

  it("the kinds refuse services they cannot use, at compile time", () => {
    defineDiscoveryTool({
      name: "probe_discovery_input",
      title: "probe",
      description: "probe",
      input: z.strictObject({}),
      output: z.object({}),
      effect: "read_only",
      // @ts-expect-error a discovery tool has no target, so no input service
      uses: ["input"],
      handler: async () => ({ structured: {} }),
    });
    // Each kind's allowed set is a closed union: what the table may ask for at all.
    const sets: Record<string, readonly string[]> = {
      open: ["desktop", "grants", "policies", "server"] satisfies OpenServices[],
      discovery: ["desktop"] satisfies DiscoveryServices[],
      meta: ["desktop", "usage", "grants", "audit"] satisfies MetaServices[],
      window: ["desktop", "capture", "input", "sessions"] satisfies WindowServices[],
      ref: ["sessions", "input"] satisfies RefServices[],
    };
    expect(Object.keys(sets)).toHaveLength(5);
  });

  it("every row of the table names what it uses; only window and ref rows get input or capture", () => {
    for (const def of TOOLS) {
      expect(Array.isArray(def.uses), def.name).toBe(true);
      const acts = def.target !== "none" && def.mode === "capability";
      if (!acts)
        expect(
          def.uses.filter((u) => u === "input" || u === "capture" || u === "sessions"),
          def.name,
        ).toEqual([]);
    }
    expect(TOOLS.find((t) => t.name === "send_text")?.uses).toEqual(["input"]);
    expect(TOOLS.find((t) => t.name === "screenshot_window")?.uses).toEqual(["capture"]);
  });
});

/** request_confirmation and preview_action compute nothing themselves: they read the decision. */
describe("the tools about one action class read the chain's decision", () => {
  const row = (name: string): ToolDef => {
    const d = accessTools.find((t) => t.name === name);
    if (!d) throw new Error(name);
    return d;
  };
  const decision = (over: Partial<AccessDecision>): AccessDecision => ({
    grant: { via: "grant" },
    renew: false,
    confirmation: "valid",
    requiresConfirmation: true,
    window: "ok",
    ...over,
  });
  const cls = (d: AccessDecision, hasValidToken = false): ClassDecision => ({
    capability: "click",
    decision: d,
    hasValidToken,
  });
  function tokens() {
    const log: string[] = [];
    const service: Services["tokens"] = {
      holdGrant: async () => {
        log.push("hold");
        return {} as never;
      },
      issue: (c, ttl) => {
        log.push(`issue ${c} ${ttl}`);
        return { token_id: "t", expires_at: "e" };
      },
    };
    return { log, service };
  }
  it("preview_action reports the decision and the chain's token fact as they are", async () => {
    const preview = row("preview_action");
    expect(preview.decides).toBe("report");
    const r = (d: ClassDecision) =>
      preview
        .handler(admitted({ decision: d }, {}), { hwnd: "1001", action_class: "click" })
        .then((x) => x.structured);
    expect(await r(cls(decision({}), true))).toEqual({
      allowed: true,
      requires_confirmation: true,
      has_valid_token: true,
      reason: "ok",
    });
    expect(
      await r(
        cls(decision({ confirmation: { refused: "confirmation_required" }, requiresConfirmation: true })),
      ),
    ).toMatchObject({ allowed: false, reason: "confirmation_required", has_valid_token: false });
    expect(await r(cls(decision({ grant: { refused: "consent_denied" } })))).toMatchObject({
      allowed: false,
      reason: "consent_denied",
    });
    // The window part is not the preview's: restore_window acts on a minimized window.
    expect(await r(cls(decision({ window: { refused: "minimized" } })))).toMatchObject({ allowed: true });
  });

  it("request_confirmation refuses in the decision's order and issues only when all of it holds", async () => {
    const confirm = row("request_confirmation");
    expect(confirm.decides).toBe("issue");
    const run = (d: AccessDecision) => {
      const t = tokens();
      const p = confirm.handler(admitted({ decision: cls(d) }, { tokens: t.service }), {
        hwnd: "1001",
        action_class: "click",
        ttl_seconds: 30,
      });
      return codeOf(p).then((code) => ({ code, log: t.log }));
    };
    expect(await run(decision({ grant: { refused: "action_not_allowed", message: "m" } }))).toEqual({
      code: "action_not_allowed",
      log: [],
    });
    expect(await run(decision({ requiresConfirmation: false }))).toEqual({
      code: "invalid_argument",
      log: [],
    });
    // The grant part is applied (a renewal, the lease's word) before the window is judged.
    expect(await run(decision({ window: { refused: "not_foreground" } }))).toEqual({
      code: "not_foreground",
      log: ["hold"],
    });
    expect(await run(decision({ confirmation: { refused: "confirmation_required" } }))).toEqual({
      code: "ok",
      log: ["hold", "issue click 30"],
    });
  });
});
