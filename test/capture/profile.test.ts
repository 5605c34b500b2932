import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createFakePlatform, sampleScenario, writeScenarioFile } from "../../src/platforms/fake/index.js";
import { isUiError } from "../../src/shared/errors.js";
import type { Rect } from "../../src/shared/geometry.js";
import { OPS } from "../../src/shared/protocol.js";
import { effectiveFromFile } from "../../src/supervisor/policy/load.js";
import { readPolicyFile } from "../../src/supervisor/policy/parse.js";
import {
  checkProfile,
  parseProfileText,
  profileOrThrow,
  readProfileFile,
  recordProfile,
  resolvePoint,
  resolveReferenceRegion,
  validateProfileFile,
} from "../../src/supervisor/profiles/profile.js";
import { type CoordinateProfile, profileJsonSchema } from "../../src/supervisor/profiles/schema.js";
import { planReferenceCapture, type ScreenshotPolicyView } from "../../src/supervisor/screenshot/plan.js";
import { captureHandlers } from "../../src/workers/capture/handlers.js";
import { scratchDir } from "../support/scratch.js";

const ROOT = join(import.meta.dirname, "..", "..");
const SCHEMA_FILE = join(ROOT, "schema", "coordinate_profile.schema.json");
const EXAMPLE = join(ROOT, "schema", "examples", "profile.example.json");
const POLICY_EXAMPLE = join(ROOT, "schema", "examples", "policy.example.json");
const dir = scratchDir("profile");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function tempFile(text: string): string {
  const p = join(dir, `p${n++}.json`);
  writeFileSync(p, text);
  return p;
}

function loadProfile(path: string): CoordinateProfile {
  return profileOrThrow(readProfileFile(path));
}

const RUFFLE = "C:\\Program Files\\ruffle\\bin\\ruffle.exe";

function example(): CoordinateProfile {
  return JSON.parse(readFileSync(EXAMPLE, "utf8")) as CoordinateProfile;
}

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isUiError(e)) return `${e.code}: ${e.message}`;
    throw e;
  }
  return "no error";
}

describe("schema/coordinate_profile.schema.json", () => {
  // UPDATE_SCHEMA=1 npx vitest run test/capture/profile.test.ts   regenerates the committed file.
  it.runIf(process.env.UPDATE_SCHEMA === "1")("is regenerated on request", () => {
    writeFileSync(SCHEMA_FILE, `${JSON.stringify(profileJsonSchema(), null, 2)}\n`);
  });

  it("equals the schema generated from zod (they never drift)", () => {
    expect(JSON.parse(readFileSync(SCHEMA_FILE, "utf8"))).toEqual(profileJsonSchema());
  });

  it("is strict and requires the fixed fields", () => {
    const s = profileJsonSchema() as { additionalProperties: boolean; required: string[] };
    expect(s.additionalProperties).toBe(false);
    expect([...s.required].sort()).toEqual(
      [
        "application",
        "profile_id",
        "reference_hash",
        "reference_region",
        "safe_regions",
        "schema_version",
        "verification_points",
        "window_size",
      ].sort(),
    );
  });
});

describe("validate-profile", () => {
  it("accepts the example", () => {
    const r = validateProfileFile(EXAMPLE);
    expect(r.lines[0]).toBe("valid coordinate profile");
    expect(r.ok).toBe(true);
    expect(r.lines.join("\n")).toContain("window_size: 824x640");
  });

  const bad: [string, (p: Record<string, unknown>) => unknown, RegExp][] = [
    ["unknown field", (p) => ({ ...p, extra: 1 }), /\(root\): unknown field/],
    ["schema_version 2", (p) => ({ ...p, schema_version: 2 }), /schema_version/],
    [
      "uppercase hash",
      (p) => ({ ...p, reference_hash: "A".repeat(64) }),
      /reference_hash: must be 64 lowercase/,
    ],
    [
      "empty rect",
      (p) => ({ ...p, reference_region: { name: "x", rect: [5, 5, 5, 9] } }),
      /right must be greater/,
    ],
    [
      "region outside the window",
      (p) => ({ ...p, safe_regions: [{ name: "far", rect: [800, 600, 900, 700] }] }),
      /safe_regions\[0\]\.rect: lies outside window_size/,
    ],
    [
      "point outside the window",
      (p) => ({ ...p, verification_points: [{ name: "far", x: 824, y: 0, color: "#000000" }] }),
      /verification_points\[0\]: lies outside window_size/,
    ],
    [
      "point outside the reference region",
      (p) => ({ ...p, verification_points: [{ name: "edge", x: 5, y: 5, color: "#000000" }] }),
      /verification_points\[0\]: lies outside the reference region/,
    ],
    [
      "point without its colour",
      (p) => ({ ...p, verification_points: [{ name: "dot", x: 20, y: 60 }] }),
      /verification_points\[0\]\.color/,
    ],
    ["no application", (p) => ({ ...p, application: undefined }), /application/],
    [
      "relative executable path",
      (p) => ({ ...p, application: { executable_path: "ruffle.exe" } }),
      /application\.executable_path: must be a full/,
    ],
    [
      "duplicate names across regions and points",
      (p) => ({ ...p, verification_points: [{ name: "play_button", x: 20, y: 60, color: "#000000" }] }),
      /verification_points\[0\]\.name: duplicate name/,
    ],
    [
      "reference name reused with another rect",
      (p) => ({ ...p, reference_region: { name: "play_button", rect: [0, 0, 10, 10] } }),
      /has the reference region's name but another rect/,
    ],
    ["negative coordinate", (p) => ({ ...p, verification_points: [{ name: "a", x: -1, y: 0 }] }), /x/],
  ];
  it.each(bad)("refuses %s with the field's path", (_label, mutate, reason) => {
    const r = validateProfileFile(
      tempFile(JSON.stringify(mutate(example() as unknown as Record<string, unknown>))),
    );
    expect(r.ok).toBe(false);
    expect(r.lines[0]).toBe("invalid coordinate profile:");
    expect(r.lines.slice(1).join("\n")).toMatch(reason);
  });

  it("refuses duplicate keys, which JSON.parse would hide", () => {
    const text = readFileSync(EXAMPLE, "utf8").replace('"profile_id":', '"profile_id": "a", "profile_id":');
    const r = parseProfileText(text);
    expect(r.ok).toBe(false);
    expect(r.ok ? [] : r.reasons).toContain("profile_id: duplicate key");
    const nested = parseProfileText('{"safe_regions": [{"name": "a", "name": "b"}]}');
    expect(nested.ok ? [] : nested.reasons).toContain("safe_regions[0].name: duplicate key");
  });

  it("never repeats what it read from a file that is not a profile", () => {
    const r = readProfileFile(tempFile("root:x:0:0:SECRET-LINE:/root:/bin/bash\n"));
    expect(r.ok).toBe(false);
    expect(JSON.stringify(r)).not.toContain("SECRET");
    const y = readProfileFile(tempFile('{"schema_version": 1, "profile_id": "SECRET value here"}'));
    expect(JSON.stringify(y)).not.toContain("SECRET");
  });

  it("refuses directories, missing files, non-UTF-8 and files over 1 MiB", () => {
    const sub = join(dir, "subdir");
    mkdirSync(sub);
    expect(readProfileFile(sub)).toEqual({ ok: false, reasons: ["not a regular file"] });
    expect(readProfileFile(join(dir, "missing.json"))).toEqual({
      ok: false,
      reasons: ["the file cannot be opened"],
    });
    const latin1 = join(dir, "latin1.json");
    writeFileSync(latin1, Buffer.from([0x7b, 0xe9, 0x7d]));
    expect(readProfileFile(latin1).ok).toBe(false);
    expect(readProfileFile(tempFile(" ".repeat(1024 * 1024 + 1))).ok).toBe(false);
  });

  it("loadProfile turns problems into invalid_argument", () => {
    expect(codeOf(() => loadProfile(join(dir, "missing.json")))).toMatch(/^invalid_argument/);
    expect(loadProfile(EXAMPLE).profile_id).toBe("ruffle-game-824x640");
  });
});

describe("resolvePoint", () => {
  const p = loadProfile(EXAMPLE);
  it("gives the centre pixel of a safe region", () => {
    expect(resolvePoint(p, "play_button")).toEqual({
      x: 69,
      y: 74,
      kind: "safe_region",
      window_size: [824, 640],
    });
    expect(resolvePoint(p, "sound_toggle")).toMatchObject({ x: 29, y: 149 });
  });
  it("gives a verification point as written", () => {
    expect(resolvePoint(p, "menu_corner")).toMatchObject({ x: 20, y: 60, kind: "verification_point" });
  });
  it("lists the known names for an unknown one", () => {
    const msg = codeOf(() => resolvePoint(p, "nope"));
    expect(msg).toMatch(/^invalid_argument/);
    expect(msg).toContain("stage, play_button, sound_toggle, level_1, menu_corner, stage_centre");
  });
});

describe("checkProfile", () => {
  const p = loadProfile(EXAMPLE);
  const win = { rect: [100, 100, 924, 740] as Rect, exe_path: RUFFLE };
  const same = { hash: p.reference_hash, colors: p.verification_points.map((v) => v.color) };
  it("matches on same application, size, hash and colours", () => {
    expect(checkProfile(p, win, same)).toEqual({
      matches: true,
      reason: "ok",
      expected_size: [824, 640],
      actual_size: [824, 640],
    });
    // Windows paths compare normalized and case-insensitively.
    expect(checkProfile(p, { ...win, exe_path: RUFFLE.toUpperCase() }, same).reason).toBe("ok");
  });
  it("reports application, size, hash and colour mismatches separately", () => {
    const other = { ...win, exe_path: "C:\\Windows\\notepad.exe" };
    expect(checkProfile(p, other, same).reason).toBe("application_mismatch");
    expect(checkProfile(p, { ...win, exe_path: "" }, same).reason).toBe("application_mismatch");
    const wider = { ...win, rect: [100, 100, 925, 740] as Rect };
    expect(checkProfile(p, wider, same).reason).toBe("size_mismatch");
    expect(checkProfile(p, wider, null).reason).toBe("size_mismatch");
    expect(checkProfile(p, win, { ...same, hash: "0".repeat(64) })).toMatchObject({
      matches: false,
      reason: "hash_mismatch",
    });
    expect(checkProfile(p, win, null).reason).toBe("hash_mismatch");
    expect(checkProfile(p, win, { ...same, colors: ["#000000", "#3366cc"] }).reason).toBe("color_mismatch");
  });
});

describe("recordProfile", () => {
  const win = { rect: [50, 60, 850, 660] as Rect, exe_path: "/usr/bin/board-game" }; // 800 × 600
  const capture = { hash: "ab".repeat(32), colors: ["#102030"] };
  const args = {
    profile_id: "rec-1",
    reference_region_name: "board",
    safe_regions: [
      { name: "board", rect: [10, 10, 410, 410] as Rect, description: "game board" },
      { name: "ok", rect: [700, 550, 780, 590] as Rect },
    ],
    verification_points: [{ name: "corner", x: 409, y: 409 }],
  };

  it("returns a profile that validates and that check then matches (round trip through a file)", () => {
    const p = recordProfile(args, win, capture);
    expect(p).toMatchObject({
      schema_version: 1,
      application: { executable_path: "/usr/bin/board-game" },
      window_size: [800, 600],
      reference_region: { name: "board", rect: [10, 10, 410, 410] },
      reference_hash: capture.hash,
      verification_points: [{ name: "corner", x: 409, y: 409, color: "#102030" }],
    });
    expect(p.app_version).toBeUndefined();
    const path = tempFile(JSON.stringify(p, null, 2));
    expect(validateProfileFile(path).ok).toBe(true);
    const back = loadProfile(path);
    expect(back).toEqual(p);
    expect(checkProfile(back, win, capture)).toMatchObject({ matches: true, reason: "ok" });
    expect(resolvePoint(back, "ok")).toMatchObject({ x: 739, y: 569 });
  });

  it("keeps app_version and takes the reference from the policy's regions, exactly", () => {
    const policy = [{ name: "stage", rect: [0, 0, 800, 600] as Rect }];
    const p = recordProfile(
      { ...args, reference_region_name: "stage", app_version: "1.2" },
      win,
      capture,
      policy,
    );
    expect(p.app_version).toBe("1.2");
    expect(p.reference_region).toEqual({ name: "stage", rect: [0, 0, 800, 600] });
    // A recorded safe region of the policy region's name with another rect is refused.
    const shifted = {
      ...args,
      reference_region_name: "stage",
      safe_regions: [{ name: "stage", rect: [1, 0, 800, 600] as Rect }],
    };
    expect(codeOf(() => recordProfile(shifted, win, capture, policy))).toMatch(
      /^invalid_argument: safe_regions/,
    );
  });

  it("refuses what would not validate, naming fields only", () => {
    const outside = { ...args, verification_points: [{ name: "corner", x: 799, y: 10 }] };
    expect(codeOf(() => recordProfile(outside, win, capture))).toMatch(
      /^invalid_argument: verification_points\[0\]: lies outside the reference region/,
    );
    expect(codeOf(() => recordProfile(args, win, { ...capture, hash: "nothex" }))).toMatch(
      /^invalid_argument: .*reference_hash/,
    );
    const unknown = codeOf(() =>
      resolveReferenceRegion({ ...args, reference_region_name: "zzz" }, [
        { name: "stage", rect: [0, 0, 1, 1] },
      ]),
    );
    expect(unknown).toMatch(/^invalid_argument/);
    expect(unknown).toContain("board, ok, stage");
  });
});

describe("planReferenceCapture", () => {
  const file: ScreenshotPolicyView = {
    source: "file",
    safe_regions: [{ name: "stage", rect: [12, 40, 812, 628] }],
    screenshot_masks: [[600, 0, 900, 100]],
    allow_unrestricted_screenshots: false,
  };
  const win = { rect: [100, 100, 924, 740] as Rect };
  it("file policy: the reference is the policy's safe region of that name, exactly; masks are the policy's", () => {
    expect(planReferenceCapture(file, win, { name: "stage", rect: [12, 40, 812, 628] })).toEqual({
      region: [12, 40, 812, 628],
      masks: [[600, 40, 812, 100]],
      region_name: null,
    });
    // Inside the policy's region, but not it: refused (so are other names).
    expect(codeOf(() => planReferenceCapture(file, win, { name: "stage", rect: [20, 60, 700, 90] }))).toBe(
      "action_not_allowed: The reference region's rect differs from the policy's safe region of that name.",
    );
    expect(codeOf(() => planReferenceCapture(file, win, { name: "inner", rect: [20, 60, 700, 90] }))).toBe(
      "action_not_allowed: The reference region names no safe region of the policy.",
    );
  });
  it("env policy: only with unrestricted screenshots", () => {
    const env: ScreenshotPolicyView = {
      source: "env",
      safe_regions: [],
      screenshot_masks: [],
      allow_unrestricted_screenshots: false,
    };
    expect(codeOf(() => planReferenceCapture(env, win, { name: "r", rect: [0, 0, 10, 10] }))).toMatch(
      /^action_not_allowed/,
    );
    const on = { ...env, allow_unrestricted_screenshots: true };
    expect(planReferenceCapture(on, win, { name: "r", rect: [0, 0, 10, 10] }).region).toEqual([0, 0, 10, 10]);
    expect(codeOf(() => planReferenceCapture(on, win, { name: "r", rect: [0, 0, 900, 10] }))).toMatch(
      /^out_of_bounds/,
    );
  });
});

describe("the example profile against the simulated desktop", () => {
  it("matches the sample scenario under the example policy; a repaint in the region breaks it", async () => {
    const scenarioPath = join(dir, "desktop.json");
    const scenario = sampleScenario(dir);
    writeScenarioFile(scenarioPath, scenario);
    const platform = createFakePlatform({ scenarioPath, workerKind: "capture" });
    const read = readPolicyFile(POLICY_EXAMPLE);
    if (!read.ok) throw new Error("policy example does not load");
    const policy = effectiveFromFile(read.policy);
    const profile = loadProfile(EXAMPLE);
    const handler = captureHandlers["capture.region"];
    if (!handler) throw new Error("no handler");

    const hashNow = async (): Promise<{
      capture: { hash: string; colors: string[] };
      rect: Rect;
      exe_path: string;
    }> => {
      const w = await platform.desktop.getWindow("1001");
      if (!w?.instance) throw new Error("sample window missing");
      const plan = planReferenceCapture(policy, w, profile.reference_region);
      const r = await handler(
        OPS["capture.region"].args.parse({
          target: { hwnd: "1001", instance: w.instance },
          region: plan.region,
          masks: plan.masks,
          grid_spacing: null,
          output: "sha256",
          max_png_bytes: 1,
          compression_level: 6,
          sample_points: profile.verification_points.map((v) => [v.x, v.y]),
        }),
        {
          signal: new AbortController().signal,
          deadline: Date.now() + 10_000,
          init: { kind: "capture", platform: "fake", fake_desktop: scenarioPath, log_level: "silent" },
          platform,
        },
      );
      return {
        capture: { hash: r.sha256 ?? "", colors: r.samples ?? [] },
        rect: w.rect,
        exe_path: w.instance.exe_path,
      };
    };

    const first = await hashNow();
    expect(checkProfile(profile, first, first.capture)).toMatchObject({ matches: true, reason: "ok" });
    // Record from the live window: the recorded profile validates and matches.
    const recorded = recordProfile(
      {
        profile_id: "again",
        reference_region_name: "stage",
        safe_regions: profile.safe_regions,
        verification_points: profile.verification_points,
      },
      first,
      first.capture,
      policy.safe_regions,
    );
    expect(recorded.reference_hash).toBe(profile.reference_hash);
    expect(recorded.verification_points).toEqual(profile.verification_points);
    expect(recorded.application).toEqual(profile.application);

    // A repaint under a mask changes nothing; one in the open part of the stage does.
    const w0 = scenario.windows[0];
    w0.paint = [...(w0.paint ?? []), { rect: [700, 300, 720, 320], fill: "#123456" }];
    writeScenarioFile(scenarioPath, scenario);
    expect((await hashNow()).capture.hash).toBe(profile.reference_hash);
    w0.paint = [...(w0.paint ?? []), { rect: [300, 300, 301, 301], fill: "#123456" }];
    writeScenarioFile(scenarioPath, scenario);
    const changed = await hashNow();
    expect(checkProfile(profile, changed, changed.capture)).toMatchObject({
      matches: false,
      reason: "hash_mismatch",
    });
  });
});
