import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI } from "../support/mcp.js";

const examples = resolve(import.meta.dirname, "../../schema/examples");

function run(args: string[], env: Record<string, string> = {}) {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k, v]) => v !== undefined && !k.startsWith("UIINSPECT_") && !k.startsWith("DESKTOP_AUTOMATION_"),
    ),
  ) as Record<string, string>;
  return spawnSync(process.execPath, [CLI, ...args], {
    encoding: "utf8",
    env: { ...base, ...env },
    timeout: 120_000,
  });
}

describe("the CLI verbs", () => {
  it("validate-policy: 0 for the examples, 1 with each reason at its field", () => {
    expect(run(["validate-policy", join(examples, "policy.example.json")]).status).toBe(0);
    expect(run(["validate-policy", join(examples, "policy.example.yaml")]).status).toBe(0);
    const dir = mkdtempSync(join(tmpdir(), "uiinspect-cli-"));
    const bad = join(dir, "bad.json");
    writeFileSync(
      bad,
      JSON.stringify({
        schema_version: 1,
        policy_id: "x",
        application: { executable_path: "/usr/bin/x", title_patterns: ["x"] },
        allowed_actions: ["teleport"],
        safe_regions: [{ name: "a", rect: [10, 0, 5, 5] }],
      }),
    );
    const r = run(["validate-policy", bad]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("allowed_actions[0]");
    expect(r.stderr).toContain("safe_regions[0].rect");
    expect(run(["validate-policy"]).status).toBe(2);
  });

  it("validate-profile: 0 for the example, 1 for a broken one", () => {
    expect(run(["validate-profile", join(examples, "profile.example.json")]).status).toBe(0);
    const dir = mkdtempSync(join(tmpdir(), "uiinspect-cli-"));
    const bad = join(dir, "p.json");
    writeFileSync(bad, JSON.stringify({ schema_version: 1, profile_id: "x" }));
    expect(run(["validate-profile", bad]).status).toBe(1);
  });

  it("doctor: usable on the simulated desktop, unusable with a broken setting, never screen content", () => {
    const ok = run(["doctor"], {
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: join(examples, "desktop.example.json"),
      DESKTOP_AUTOMATION_POLICY_FILE: join(examples, "policy.example.json"),
    });
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toContain("platform:  fake");
    expect(ok.stdout).not.toContain("Ruffle - game.swf");
    const broken = run(["doctor"], {
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "lots",
    });
    expect(broken.status).toBe(1);
    expect(broken.stdout).toContain("UNUSABLE");
  });

  it("demo walks list → consent (simulated) → inspect → screenshot → invoke → click → key", () => {
    const r = run(["demo"]);
    expect(r.status, r.stderr).toBe(0);
    for (const step of [
      "list_windows",
      "SIMULATED",
      "inspect_tree",
      "screenshot_window",
      "invoked",
      "clicked",
      "pressed enter",
    ])
      expect(r.stdout).toContain(step);
    expect(r.stdout).toContain("[password]");
  });

  it("an unknown verb prints the usage and exits 2", () => {
    const r = run(["frobnicate"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("usage: uiinspect-mcp");
  });
});
