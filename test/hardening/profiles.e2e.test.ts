import { spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, FakeDesktop, filePolicy, type McpHarness, RUFFLE, ruffleWindow } from "../support/mcp.js";
import { fakeScenario, fakeServers } from "./harness.js";

/**
 * Over stdio against the built CLI: profiles are read only from the operator's folder
 * (symlinks resolved), a hostile profile costs the server nothing, and a profile of another
 * application never matches.
 */

const start = fakeServers();
const scenario = () => fakeScenario([ruffleWindow()]);

/** A recorded profile, written into the folder. */
async function recordInto(h: McpHarness, folder: string, name: string): Promise<Record<string, unknown>> {
  await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
  const rec = await h.ok("record_coordinate_profile", {
    hwnd: 1001,
    profile_id: "p",
    reference_region_name: "stage",
    safe_regions: [{ name: "play", rect: [20, 60, 120, 90] }],
    verification_points: [{ name: "dot", x: 20, y: 60 }],
  });
  const profile = rec.profile as Record<string, unknown>;
  writeFileSync(join(folder, name), JSON.stringify(profile));
  return profile;
}

const resolve = (h: McpHarness, profile_path: string) =>
  h.call("resolve_coordinate_profile_point", { profile_path, region_name: "play" });

describe("the profiles folder", () => {
  it("without one, the profile tools answer action_not_allowed", async () => {
    const d = new FakeDesktop(scenario());
    writeFileSync(join(d.dir, "p.json"), "{}");
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
    });
    expect((await resolve(h, join(d.dir, "p.json"))).code).toBe("action_not_allowed");
    await h.ok("request_access", { hwnd: 1001 });
    const check = await h.call("check_coordinate_profile", {
      hwnd: 1001,
      profile_path: join(d.dir, "p.json"),
    });
    expect(check.code).toBe("action_not_allowed");
  });

  it("reads inside it only: relative or absolute, never ../, an outside path or a symlink leading out", async () => {
    const d = new FakeDesktop(scenario());
    const folder = join(d.dir, "profiles");
    mkdirSync(join(folder, "sub"), { recursive: true });
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy({ profiles_dir: folder })),
    });
    const profile = await recordInto(h, folder, "ruffle.json");
    writeFileSync(join(d.dir, "outside.json"), JSON.stringify(profile));
    symlinkSync(join(d.dir, "outside.json"), join(folder, "escape.json"));
    symlinkSync(d.dir, join(folder, "sub", "up"));
    symlinkSync(join(folder, "ruffle.json"), join(folder, "sub", "alias.json"));

    expect((await resolve(h, "ruffle.json")).structured).toMatchObject({ x: 69, y: 74 });
    expect((await resolve(h, join(folder, "ruffle.json"))).isError).toBe(false);
    expect((await resolve(h, "sub/alias.json")).isError).toBe(false);
    for (const outside of [
      join(d.dir, "outside.json"),
      "../outside.json",
      "escape.json",
      "sub/up/outside.json",
      "/etc/passwd",
      "../missing.json",
      folder,
    ]) {
      const r = await resolve(h, outside);
      expect(r.code, outside).toBe("action_not_allowed");
      expect(JSON.stringify(r.structured)).not.toContain("outside.json");
    }
    expect((await resolve(h, "missing.json")).code).toBe("invalid_argument");
    const check = await h.call("check_coordinate_profile", { hwnd: 1001, profile_path: "escape.json" });
    expect(check.code).toBe("action_not_allowed");
    expect(await h.ok("check_coordinate_profile", { hwnd: 1001, profile_path: "ruffle.json" })).toMatchObject(
      {
        matches: true,
      },
    );
  });

  it("DESKTOP_AUTOMATION_PROFILES_DIR names it in env mode", async () => {
    const d = new FakeDesktop(scenario());
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle - *",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: RUFFLE,
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe",
      DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "true",
      DESKTOP_AUTOMATION_PROFILES_DIR: d.dir,
    });
    await h.ok("request_access", { hwnd: 1001 });
    const rec = await h.ok("record_coordinate_profile", {
      hwnd: 1001,
      profile_id: "p",
      reference_region_name: "play",
      safe_regions: [{ name: "play", rect: [20, 60, 120, 90] }],
      verification_points: [],
    });
    writeFileSync(join(d.dir, "p.json"), JSON.stringify(rec.profile));
    expect((await resolve(h, "p.json")).structured).toMatchObject({ x: 69, y: 74 });
  });
});

describe("profiles name their application", () => {
  it("a profile of another executable is application_mismatch, without a capture", async () => {
    const d = new FakeDesktop(scenario());
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy({ profiles_dir: d.dir })),
    });
    const profile = await recordInto(h, d.dir, "ruffle.json");
    expect(profile.application).toEqual({ executable_path: RUFFLE });
    writeFileSync(
      join(d.dir, "other.json"),
      JSON.stringify({ ...profile, application: { executable_path: "C:\\Games\\other.exe" } }),
    );
    const before = (await h.ok("get_rate_limit_state")).applications as Array<{
      screenshot_pixels: { used: number };
    }>;
    expect(await h.ok("check_coordinate_profile", { hwnd: 1001, profile_path: "other.json" })).toMatchObject({
      matches: false,
      reason: "application_mismatch",
    });
    const after = (await h.ok("get_rate_limit_state")).applications as Array<{
      screenshot_pixels: { used: number };
    }>;
    expect(after[0].screenshot_pixels.used).toBe(before[0].screenshot_pixels.used);
    // A verification point outside the reference region is refused before any capture.
    const outside = await h.call("record_coordinate_profile", {
      hwnd: 1001,
      profile_id: "p",
      reference_region_name: "stage",
      safe_regions: [],
      verification_points: [{ name: "far", x: 500, y: 500 }],
    });
    expect(outside.code).toBe("invalid_argument");
    expect(JSON.stringify(outside.structured)).toContain(
      "verification_points[0]: lies outside the reference region",
    );
    // The reference region must be the policy's safe region of that name, exactly.
    const shifted = await h.call("record_coordinate_profile", {
      hwnd: 1001,
      profile_id: "p",
      reference_region_name: "stage",
      safe_regions: [{ name: "stage", rect: [10, 50, 331, 290] }],
      verification_points: [],
    });
    expect(shifted.code).toBe("invalid_argument");
  });
});

describe("a hostile profile costs the server nothing", () => {
  it("the 64 KB nested profile: invalid_argument with the reason, the server keeps serving; validate-profile exits 1", async () => {
    const d = new FakeDesktop(scenario());
    const nested = join(d.dir, "nested.json");
    writeFileSync(nested, `${"[".repeat(32000)}${"]".repeat(32000)}`);
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy({ profiles_dir: d.dir })),
    });
    const calls = await Promise.all(Array.from({ length: 8 }, () => resolve(h, "nested.json")));
    for (const r of calls) {
      expect(r.code).toBe("invalid_argument");
      expect(JSON.stringify(r.structured)).toContain("nested deeper than 64 levels");
    }
    expect((await h.ok("list_windows")).windows).toHaveLength(1);
    const v = spawnSync(process.execPath, [CLI, "validate-profile", nested], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(v.status).toBe(1);
    expect(v.stderr).toContain("nested deeper than 64 levels");
  });
});
