import { describe, expect, it } from "vitest";
import { instanceKey } from "../../src/shared/identity.js";
import { MemoryBudget, RateBudgets } from "../../src/supervisor/budgets.js";
import type { CallContext } from "../../src/supervisor/chain.js";
import { GrantStore } from "../../src/supervisor/grants.js";
import { metaTools } from "../../src/supervisor/tools/meta.js";

/**
 * get_rate_limit_state's per-application usage counts every client's calls on an instance. With
 * another client's grant on the same instance, the typed-character count would tell this client
 * how long the other's texts are (a password's length): it is then left out.
 */

const LIMITS = {
  max_actions_per_minute: 100,
  max_text_chars_per_minute: 1000,
  max_screenshot_pixels_per_minute: 1_000_000,
  max_png_bytes: 1 << 20,
};
const instance = { pid: 42, start_time: "2026-11-30T08:00:00.000Z", exe_path: "/usr/bin/x", session: ":0:0" };
const KEY = instanceKey(instance);

function run(grants: GrantStore, budgets: RateBudgets, client: string) {
  const def = metaTools.find((t) => t.name === "get_rate_limit_state");
  if (!def) throw new Error("no tool");
  const ctx = {
    sup: { grants, budgets, memory: new MemoryBudget(1 << 20) },
    client: { hash: client },
    policy: { limits: LIMITS },
  } as unknown as CallContext;
  return def.handler(ctx, {}) as Promise<{ structured: { applications: Array<Record<string, unknown>> } }>;
}

describe("get_rate_limit_state never shows another client's typing", () => {
  it("reports typed characters only while no other client holds a grant on the instance", async () => {
    const now = 0;
    const grants = new GrantStore(() => now);
    const budgets = new RateBudgets(
      { discoveryPerMinute: 100, inspectionsPerMinute: 100, clientActionsPerMinute: 100 },
      () => now,
    );
    grants.put({ client: "A", instance, hwnd: "7", capabilities: ["text"] });
    budgets.take("action", "A", { key: KEY, limits: LIMITS, textChars: 12 });
    const alone = (await run(grants, budgets, "A")).structured.applications;
    expect(alone[0]?.text_chars).toEqual({ used: 12, limit: 1000 });

    grants.put({ client: "B", instance, hwnd: "7", capabilities: ["text"] });
    budgets.take("action", "B", { key: KEY, limits: LIMITS, textChars: 9 });
    for (const client of ["A", "B"]) {
      const shared = (await run(grants, budgets, client)).structured.applications;
      expect(shared[0]?.text_chars).toBeNull();
      expect(shared[0]?.actions).toEqual({ used: 2, limit: 100 });
    }
  });
});
