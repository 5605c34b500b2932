import { afterAll } from "vitest";
import { LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";

/**
 * Servers on the simulated desktop for one test file, all closed after it. Each starts the
 * built CLI with generous budgets and the given environment on top.
 */
export function fakeServers(): (env: Record<string, string>) => Promise<McpHarness> {
  const started: McpHarness[] = [];
  afterAll(async () => {
    await Promise.all(started.splice(0).map((h) => h.close()));
  });
  return async (env) => {
    const h = await McpHarness.start({ UIINSPECT_PLATFORM: "fake", ...LOOSE_BUDGETS, ...env });
    started.push(h);
    return h;
  };
}

/** A scenario of these windows, the first in front, consent approved at once. */
export function fakeScenario(windows: Array<Record<string, unknown>>): Record<string, unknown> {
  return { session: 1, foreground: 1001, windows, consent: { answer: "approve" } };
}
