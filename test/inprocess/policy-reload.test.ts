import { rmSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { InProcessHarness } from "../support/inProcess.js";
import { FakeDesktop, filePolicy, LOOSE_BUDGETS, ruffleWindow } from "../support/mcp.js";

/**
 * The policy file is re-read while the server runs and a file that stops validating fails
 * closed: every call is refused with the policy's error code and the listing shrinks to
 * health_check, until a valid file is back. In process, with the watcher's timer at its longest
 * and each look taken by hand (checkPolicyNow), so no step waits for a clock.
 */

const harnesses: InProcessHarness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});

describe("policy file reload (a manual tick of the watcher)", () => {
  it("a file that stops validating, disappears or expires fails closed; a valid file restores the tools", async () => {
    const d = new FakeDesktop({ session: 1, foreground: 1001, windows: [ruffleWindow()] });
    const good = JSON.stringify(filePolicy({ allowed_actions: ["observe", "inspect"] }));
    const policyPath = d.writePolicy(JSON.parse(good) as Record<string, unknown>);
    const h = await InProcessHarness.start({
      UIINSPECT_PLATFORM: "fake",
      ...LOOSE_BUDGETS,
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
      UIINSPECT_POLICY_WATCH_MS: "60000",
    });
    harnesses.push(h);
    const names = async () => (await h.client.listTools()).tools.map((t) => t.name).sort();
    const listCode = async () => {
      const r = await h.call("list_windows");
      return r.isError ? (r.code ?? "error") : "ok";
    };

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
      // Nothing changes until the watcher looks.
      expect(await listCode(), what).toBe("ok");
      h.sup.checkPolicyNow();
      expect(await listCode(), what).toBe(code);
      expect(await names(), what).toEqual(["health_check"]);
      expect((await h.call("inspect_tree", { detail: "full", hwnd: "1001" })).code, what).toBe(code);
      // Back to a valid file: the tools return without a restart.
      writeFileSync(policyPath, good);
      h.sup.checkPolicyNow();
      expect(await listCode(), what).toBe("ok");
      expect(await names(), what).toEqual(full);
    }
  });

  it("the watcher's own timer takes the look too", async () => {
    const d = new FakeDesktop({ session: 1, foreground: 1001, windows: [ruffleWindow()] });
    const policyPath = d.writePolicy(filePolicy({ allowed_actions: ["observe"] }));
    const h = await InProcessHarness.start({
      UIINSPECT_PLATFORM: "fake",
      ...LOOSE_BUDGETS,
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
      UIINSPECT_POLICY_WATCH_MS: "50",
    });
    harnesses.push(h);
    rmSync(policyPath);
    const deadline = Date.now() + 20_000;
    let code = "ok";
    while (code === "ok" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      const r = await h.call("list_windows");
      code = r.isError ? (r.code ?? "error") : "ok";
    }
    expect(code).toBe("policy_unreadable");
  });
});
