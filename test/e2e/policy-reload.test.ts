import { rmSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { FakeDesktop, filePolicy, LOOSE_BUDGETS, McpHarness, ruffleWindow } from "../support/mcp.js";

/**
 * The policy file is re-read while the server runs (its stat every second by default, no
 * UIINSPECT_POLICY_WATCH_MS here) and a file that stops validating fails closed: every call is
 * refused with the policy's error code and the listing shrinks to health_check, until a valid
 * file is back. Built CLI over stdio on the simulated desktop.
 */

const harnesses: McpHarness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});

async function until<T>(what: string, fn: () => Promise<T | null>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== null) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("policy file reload (default 1 s stat)", () => {
  it("a file that stops validating, disappears or expires fails closed; a valid file restores the tools", async () => {
    const d = new FakeDesktop({ session: 1, foreground: 1001, windows: [ruffleWindow()] });
    const good = JSON.stringify(filePolicy({ allowed_actions: ["observe", "inspect"] }));
    const policyPath = d.writePolicy(JSON.parse(good) as Record<string, unknown>);
    const h = await McpHarness.start({
      UIINSPECT_PLATFORM: "fake",
      ...LOOSE_BUDGETS,
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
    });
    harnesses.push(h);
    const names = async () => (await h.client.listTools()).tools.map((t) => t.name).sort();
    const listCode = async () => {
      const r = await h.call("list_windows");
      return r.isError ? (r.code ?? "error") : "ok";
    };
    const becomes = (code: string) =>
      until(`list_windows → ${code}`, async () => ((await listCode()) === code ? code : null));

    expect(await listCode()).toBe("ok");
    const full = await names();
    expect(full).toContain("inspect_tree");

    const broken: Array<[string, () => void, string]> = [
      // Well-formed JSON that fails the schema (an unknown capability).
      [
        "schema",
        () => writeFileSync(policyPath, JSON.stringify(filePolicy({ allowed_actions: ["observe", "fly"] }))),
        "policy_invalid",
      ],
      ["syntax", () => writeFileSync(policyPath, "{ not json"), "policy_invalid"],
      ["removed", () => rmSync(policyPath), "policy_unreadable"],
      [
        "expired",
        () =>
          writeFileSync(
            policyPath,
            JSON.stringify(
              filePolicy({ allowed_actions: ["observe", "inspect"], expires_at: "2020-01-01T00:00:00Z" }),
            ),
          ),
        "policy_expired",
      ],
    ];
    for (const [what, breakIt, code] of broken) {
      breakIt();
      expect(await becomes(code), what).toBe(code);
      expect(await names(), what).toEqual(["health_check"]);
      expect((await h.call("inspect_tree", { detail: "full", hwnd: "1001" })).code, what).toBe(code);
      // Back to a valid file: the tools return without a restart.
      writeFileSync(policyPath, good);
      expect(await becomes("ok"), what).toBe("ok");
      expect(await names(), what).toEqual(full);
    }
  }, 120_000);
});
