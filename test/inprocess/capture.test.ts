import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PNG } from "pngjs";
import { describe, expect, it } from "vitest";
import { InProcessHarness } from "../support/inProcess.js";
import {
  CLI,
  FakeDesktop,
  filePolicy,
  LOOSE_BUDGETS,
  RUFFLE,
  ruffleWindow,
  type ServerHarness,
  type ToolCall,
} from "../support/mcp.js";
import { closeServersAfterAll, track } from "../support/servers.js";

/**
 * screenshot_window and the coordinate-profile tools in process (test/support/inProcess.ts) on the
 * simulated desktop. Every image is decoded and checked pixel by pixel where it matters; the
 * recorded profile file is then checked by the built CLI's validate-profile verb.
 */

type Rgb = [number, number, number];
const FILL: Rgb = [0x33, 0x66, 0xcc];
const RED: Rgb = [0xff, 0x00, 0x00];
const BLACK: Rgb = [0, 0, 0];
const MAGENTA: Rgb = [255, 0, 255];
const WHITE: Rgb = [255, 255, 255];

interface Decoded {
  width: number;
  height: number;
  at(x: number, y: number): Rgb;
}

function decode(r: ToolCall): Decoded {
  const img = r.content.find((c) => c.type === "image");
  expect(img?.mimeType).toBe("image/png");
  const png = PNG.sync.read(Buffer.from(img?.data ?? "", "base64"));
  return {
    width: png.width,
    height: png.height,
    at(x, y) {
      const i = (y * png.width + x) * 4;
      return [png.data[i], png.data[i + 1], png.data[i + 2]];
    },
  };
}

/** The Ruffle window with a red block painted at window-relative [300,200,330,290] (inside "stage"). */
function paintedRuffle(over: Record<string, unknown> = {}): Record<string, unknown> {
  return ruffleWindow({ paint: [{ rect: [300, 200, 330, 290], fill: "#ff0000" }], ...over });
}

function scenario(windows: Array<Record<string, unknown>>, foreground = 1001): Record<string, unknown> {
  return { session: 1, foreground, windows, consent: { answer: "approve", delay_ms: 0 } };
}

const NOTEPAD = {
  hwnd: 3001,
  title: "Notepad",
  class: "Notepad",
  pid: 6666,
  process_start: "2026-11-30T07:00:00Z",
  process_path: "C:\\Windows\\notepad.exe",
  rect: [0, 0, 300, 300],
  visible: true,
  iconic: false,
  z: 0,
  fill: "#00ff00",
};

closeServersAfterAll();
/** `env` names the desktop and the policy, as a stdio server's environment would. */
const start = (env: Record<string, string>) =>
  track(InProcessHarness.start({ UIINSPECT_PLATFORM: "fake", ...LOOSE_BUDGETS, ...env }));

describe("screenshot_window with a policy file", () => {
  const d = new FakeDesktop(scenario([paintedRuffle()]));
  const policyPath = d.writePolicy(
    filePolicy({
      safe_regions: [
        { name: "stage", rect: [10, 50, 330, 290] },
        { name: "corner", rect: [0, 0, 40, 40] },
      ],
    }),
  );
  let h: ServerHarness;

  it("returns the safe region as a PNG: fill, paint, black mask, _meta = audit", async () => {
    h = await start({ UIINSPECT_FAKE_DESKTOP: d.path, DESKTOP_AUTOMATION_POLICY_FILE: policyPath });
    expect((await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" })).code).toBe(
      "consent_required",
    );
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    const r = await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" });
    expect(r.isError).toBe(false);
    const img = decode(r);
    expect([img.width, img.height]).toEqual([320, 240]);
    // Image (u, v) is window (u + 10, v + 50).
    expect(img.at(0, 0)).toEqual(FILL);
    expect(img.at(319, 239)).toEqual(RED); // window (329, 289): the painted block
    expect(img.at(289, 149)).toEqual(FILL); // window (299, 199): just outside the block
    expect(img.at(290, 150)).toEqual(RED); // window (300, 200): its first pixel
    // The policy's mask [10,90,230,140] is image [0,40,220,90]: black, and only there.
    for (const [u, v] of [
      [0, 40],
      [219, 89],
      [100, 60],
    ])
      expect(img.at(u, v), `mask pixel ${u},${v}`).toEqual(BLACK);
    expect(img.at(220, 60)).toEqual(FILL);
    expect(img.at(100, 39)).toEqual(FILL);
    expect(img.at(100, 90)).toEqual(FILL);

    const cid = r.structured.correlation_id;
    expect(cid).toMatch(/^[0-9a-f]{12}$/);
    expect(r.meta).toMatchObject({ correlation_id: cid, window_offset: [10, 50], image_size: [320, 240] });
    expect(r.structured).toMatchObject({ width: 320, height: 240, window_offset: [10, 50] });
    const events = (await h.ok("get_audit_events", { limit: 10 })).events as Array<Record<string, unknown>>;
    const ev = events.find((e) => e.correlation_id === cid);
    expect(ev).toMatchObject({ tool: "screenshot_window", outcome: "allow" });
    // Region names are the operator's, but they still never go to the audit.
    expect(JSON.stringify(ev)).not.toContain("stage");
  });

  it("draws a labelled grid after the masks", async () => {
    const r = await h.call("screenshot_window", {
      hwnd: 1001,
      region_name: "stage",
      grid: true,
      grid_spacing: 50,
    });
    const img = decode(r);
    // Vertical lines where window x is a multiple of 50: window x 50 → image x 40, 300 → 290.
    expect(img.at(40, 200)).toEqual(MAGENTA);
    expect(img.at(290, 120)).toEqual(MAGENTA);
    // Horizontal line at window y 100 → image y 50, drawn over the black mask.
    expect(img.at(150, 50)).toEqual(MAGENTA);
    expect(img.at(40, 70)).toEqual(MAGENTA); // vertical line crossing the mask
    expect(img.at(41, 180)).toEqual(FILL);
    expect(img.at(150, 51)).toEqual(BLACK); // still masked beside the line
    // The "50" label sits right of its line along the top edge: a black box with white digits.
    const box: Rgb[] = [];
    for (let v = 0; v < 12; v++) for (let u = 42; u < 42 + 14; u++) box.push(img.at(u, v));
    expect(box.some((p) => p.join() === WHITE.join())).toBe(true);
    expect(box.some((p) => p.join() === BLACK.join())).toBe(true);
    // Without grid the same pixels are plain fill.
    const plain = decode(await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" }));
    expect(plain.at(40, 200)).toEqual(FILL);
    expect(plain.at(45, 5)).toEqual(FILL);
  });

  it("requires region_name, lists the known names, rejects boolean crops", async () => {
    const none = await h.call("screenshot_window", { hwnd: 1001 });
    expect(none.code).toBe("invalid_argument");
    expect(none.content.some((c) => c.type === "image")).toBe(false);
    const unknown = await h.call("screenshot_window", { hwnd: 1001, region_name: "nope" });
    expect(unknown.code).toBe("invalid_argument");
    const msg = String((unknown.structured.error as { message: string }).message);
    expect(msg).toContain("stage");
    expect(msg).toContain("corner");
    expect(
      (await h.call("screenshot_window", { hwnd: 1001, region_name: "stage", crop_top: false })).code,
    ).toBe("invalid_argument");
    expect(
      (await h.call("screenshot_window", { hwnd: 1001, region_name: "stage", grid_spacing: 4 })).code,
    ).toBe("invalid_argument");
  });

  it("a covered, minimized, replaced, moved or shrunk window gets its code", async () => {
    const grab = () => h.call("screenshot_window", { hwnd: 1001, region_name: "stage" });
    // Another (not allowed) window over the region.
    d.write(scenario([{ ...NOTEPAD, rect: [150, 150, 400, 400] }, paintedRuffle({ z: 1 })]));
    expect((await grab()).code).toBe("occluded");
    // Covering only the "corner" region leaves "stage" uncovered.
    d.write(scenario([{ ...NOTEPAD, rect: [0, 0, 120, 120] }, paintedRuffle({ z: 1 })]));
    expect((await h.call("screenshot_window", { hwnd: 1001, region_name: "corner" })).code).toBe("occluded");
    // Stage is screen [110,150,430,390]: Notepad [0,0,120,120] does not meet it.
    expect(decode(await grab()).at(0, 0)).toEqual(FILL);
    d.write(scenario([paintedRuffle({ iconic: true })]));
    expect((await grab()).code).toBe("minimized");
    // Moved: the region is window-relative, so the image follows the window.
    d.write(scenario([paintedRuffle({ rect: [500, 300, 1324, 940] })]));
    const moved = await grab();
    expect(moved.isError).toBe(false);
    expect(decode(moved).at(290, 150)).toEqual(RED);
    // Shrunk so the safe region no longer fits.
    d.write(scenario([paintedRuffle({ rect: [100, 100, 300, 300] })]));
    expect((await grab()).code).toBe("out_of_bounds");
    // Replaced: same handle, another process instance.
    d.write(scenario([paintedRuffle({ pid: 4343, process_start: "2026-11-30T09:00:00Z" })]));
    expect((await grab()).code).toBe("target_changed");
    // The grant died with the old instance.
    expect((await grab()).code).toBe("consent_required");
    d.write(scenario([paintedRuffle({ visible: false })]));
    expect((await grab()).code).toBe("target_gone");
  });
});

describe("screenshot_window limits", () => {
  it("max_png_bytes from the policy → image_too_large", async () => {
    const d = new FakeDesktop(scenario([paintedRuffle()]));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy({ limits: { max_png_bytes: 64 } })),
    });
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    const r = await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" });
    expect(r.code).toBe("image_too_large");
    expect(r.content.some((c) => c.type === "image")).toBe(false);
    const state = await h.ok("get_rate_limit_state");
    expect((state.memory as { in_use_bytes: number }).in_use_bytes).toBe(0);
  });

  it("screenshot pixels per minute are counted per application", async () => {
    const other = paintedRuffle({
      hwnd: 1002,
      title: "Ruffle - other.swf",
      pid: 4343,
      rect: [1000, 100, 1824, 740],
      fill: "#aa5500",
    });
    const d = new FakeDesktop(scenario([paintedRuffle(), other]));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      // Two 320×240 stage captures per minute.
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(
        filePolicy({ limits: { max_screenshot_pixels_per_minute: 2 * 320 * 240 } }),
      ),
    });
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    await h.ok("request_access", { hwnd: 1002, capabilities: ["observe"] });
    const grab = (hwnd: number) => h.call("screenshot_window", { hwnd, region_name: "stage" });
    expect((await grab(1001)).isError).toBe(false);
    expect((await grab(1001)).isError).toBe(false);
    const limited = await grab(1001);
    expect(limited.code).toBe("rate_limited");
    const err = limited.structured.error as { retry_after_ms: number };
    expect(err.retry_after_ms).toBeGreaterThan(0);
    expect(err.retry_after_ms).toBeLessThanOrEqual(61_000);
    // Another application has its own pixel budget.
    const second = await grab(1002);
    expect(second.isError).toBe(false);
    expect(decode(second).at(0, 0)).toEqual([0xaa, 0x55, 0x00]);
    // A region bigger than the whole per-minute budget can never pass: no retry hint.
    const d2 = new FakeDesktop(scenario([paintedRuffle()]));
    const h2 = await start({
      UIINSPECT_FAKE_DESKTOP: d2.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d2.writePolicy(
        filePolicy({ limits: { max_screenshot_pixels_per_minute: 1000 } }),
      ),
    });
    await h2.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    const never = await h2.call("screenshot_window", { hwnd: 1001, region_name: "stage" });
    expect(never.code).toBe("rate_limited");
    expect((never.structured.error as { retry_after_ms?: number }).retry_after_ms).toBeUndefined();
  });
});

/** A server whose application may capture two 320×240 stages per minute; observe granted. */
async function twoStageCapturesPerMinute() {
  const d = new FakeDesktop(scenario([paintedRuffle()]));
  const h = await start({
    UIINSPECT_FAKE_DESKTOP: d.path,
    DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(
      filePolicy({ limits: { max_screenshot_pixels_per_minute: 2 * 320 * 240 } }),
    ),
  });
  await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
  return { d, h };
}

describe("failing captures give their pixels back", () => {
  it("covered or minimized windows do not use up the application's pixel budget", async () => {
    const { d, h } = await twoStageCapturesPerMinute();
    const grab = () => h.call("screenshot_window", { hwnd: 1001, region_name: "stage" });
    // The worker refuses each of these after the chain took the pixels (the chain does not
    // judge occlusion or minimized windows); without the refund the third would be rate_limited.
    d.write(scenario([{ ...NOTEPAD, rect: [150, 150, 400, 400] }, paintedRuffle({ z: 1 })]));
    for (let i = 0; i < 4; i++) expect((await grab()).code).toBe("occluded");
    d.write(scenario([paintedRuffle({ iconic: true })]));
    expect((await grab()).code).toBe("minimized");
    // The whole budget is still there: two captures pass, and the third is refused.
    d.write(scenario([paintedRuffle()]));
    expect((await grab()).isError).toBe(false);
    expect((await grab()).isError).toBe(false);
    expect((await grab()).code).toBe("rate_limited");
  });
});

describe("a region past the edge of the visible screen", () => {
  it("is out_of_bounds with no image and its pixels given back; a region on screen of the same window passes", async () => {
    const { d, h } = await twoStageCapturesPerMinute();
    const grab = () => h.call("screenshot_window", { hwnd: 1001, region_name: "stage" });
    const used = async () =>
      ((await h.ok("get_rate_limit_state")).applications as Array<{ screenshot_pixels: { used: number } }>)[0]
        ?.screenshot_pixels.used;
    // The window reaches past the 1920×1080 screen; stage [10,50,330,290] is screen
    // [1510,750,1830,990]: fully on screen, so it is captured.
    d.write(scenario([paintedRuffle({ rect: [1500, 700, 2324, 1340] })]));
    const inside = await grab();
    expect(inside.isError, JSON.stringify(inside.structured)).toBe(false);
    expect(decode(inside).at(290, 150)).toEqual(RED);
    expect(await used()).toBe(320 * 240);
    // Stage crossing the right edge (screen [1700,750,2020,990]), the bottom edge
    // ([1510,900,1830,1140]) and both: refused, never clipped or clamped.
    for (const rect of [
      [1690, 700, 2514, 1340],
      [1500, 850, 2324, 1490],
      [1700, 900, 2524, 1540],
    ]) {
      d.write(scenario([paintedRuffle({ rect })]));
      const r = await grab();
      expect(r.code, `window at ${rect.join(",")}`).toBe("out_of_bounds");
      expect(r.content.some((c) => c.type === "image")).toBe(false);
      expect(JSON.stringify(r.structured)).toContain("past the edge of the visible screen");
    }
    // Each refusal gave its pixels back: one capture's worth is used, one is left.
    expect(await used()).toBe(320 * 240);
    expect((await h.ok("get_rate_limit_state")).memory).toMatchObject({ in_use_bytes: 0 });
    d.write(scenario([paintedRuffle({ rect: [1500, 700, 2324, 1340] })]));
    expect((await grab()).isError).toBe(false);
    expect((await grab()).code).toBe("rate_limited");
  });
});

describe("coordinate-profile captures are budgeted like screenshots", () => {
  it("record and check count screenshot pixels per application", async () => {
    const { h } = await twoStageCapturesPerMinute();
    const record = () =>
      h.call("record_coordinate_profile", {
        hwnd: 1001,
        profile_id: "p",
        reference_region_name: "stage",
        safe_regions: [],
        verification_points: [],
      });
    expect((await record()).isError).toBe(false);
    expect((await record()).isError).toBe(false);
    expect((await record()).code).toBe("rate_limited");
    expect((await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" })).code).toBe(
      "rate_limited",
    );
  });

  it("the hashed frame is reserved from the memory budget", async () => {
    const d = new FakeDesktop(scenario([paintedRuffle()]));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle - *",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: RUFFLE,
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe",
      DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "true",
      DESKTOP_AUTOMATION_SCREENSHOT_MEMORY_BUDGET_BYTES: String(1024 * 1024),
    });
    await h.ok("request_access", { hwnd: 1001 });
    const record = (rect: number[]) =>
      h.call("record_coordinate_profile", {
        hwnd: 1001,
        profile_id: "p",
        reference_region_name: "ref",
        safe_regions: [{ name: "ref", rect }],
        verification_points: [],
      });
    // 600 × 500 RGBA is more than the whole 1 MiB budget: refused before any capture.
    expect((await record([0, 0, 600, 500])).code).toBe("memory_budget_exceeded");
    // 200 × 200 fits.
    expect((await record([0, 0, 200, 200])).isError).toBe(false);
    const mem = (await h.ok("get_rate_limit_state")).memory as { peak_bytes: number; in_use_bytes: number };
    expect(mem.peak_bytes).toBe(200 * 200 * 4);
    expect(mem.in_use_bytes).toBe(0);
  });
});

describe("screenshot_window in environment-policy mode", () => {
  const envPolicy = {
    DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle - *",
    DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: RUFFLE,
    DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe",
  };

  it("refuses without DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS", async () => {
    const d = new FakeDesktop(scenario([paintedRuffle()]));
    const h = await start({ UIINSPECT_FAKE_DESKTOP: d.path, ...envPolicy });
    await h.ok("request_access", { hwnd: 1001 });
    const r = await h.call("screenshot_window", { hwnd: 1001 });
    expect(r.code).toBe("action_not_allowed");
    expect(r.content.some((c) => c.type === "image")).toBe(false);
  });

  it("with it, crops 12/40/12/12 by default and takes explicit crops", async () => {
    const d = new FakeDesktop(scenario([paintedRuffle()]));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      ...envPolicy,
      DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "true",
    });
    await h.ok("request_access", { hwnd: 1001 });
    const r = await h.call("screenshot_window", { hwnd: 1001 });
    expect(r.isError).toBe(false);
    const img = decode(r);
    // The window is 824×640.
    expect([img.width, img.height]).toEqual([800, 588]);
    expect(r.meta).toMatchObject({ window_offset: [12, 40], image_size: [800, 588] });
    expect(img.at(0, 0)).toEqual(FILL);
    expect(img.at(300 - 12, 200 - 40)).toEqual(RED);
    expect(img.at(299 - 12, 200 - 40)).toEqual(FILL);
    // No masks in env mode: window (20, 100) is plain fill.
    expect(img.at(20 - 12, 100 - 40)).toEqual(FILL);

    const c = await h.call("screenshot_window", {
      hwnd: 1001,
      crop_left: 300,
      crop_top: 200,
      crop_right: 0,
      crop_bottom: 0,
    });
    const ci = decode(c);
    expect([ci.width, ci.height]).toEqual([524, 440]);
    expect(c.meta).toMatchObject({ window_offset: [300, 200], image_size: [524, 440] });
    expect(ci.at(0, 0)).toEqual(RED);
    expect(ci.at(29, 89)).toEqual(RED);
    expect(ci.at(30, 0)).toEqual(FILL);
    expect(ci.at(523, 439)).toEqual(FILL);

    for (const bad of [
      { crop_left: true },
      { crop_bottom: false },
      { crop_top: -1 },
      { crop_right: 1.5 },
      { crop_left: "12" },
    ])
      expect((await h.call("screenshot_window", { hwnd: 1001, ...bad })).code, JSON.stringify(bad)).toBe(
        "invalid_argument",
      );
    expect((await h.call("screenshot_window", { hwnd: 1001, crop_left: 500, crop_right: 400 })).code).toBe(
      "invalid_argument",
    );
  });
});

describe("coordinate profiles", () => {
  it("record → file → validate-profile → check matches; resize, repaint; resolve points", async () => {
    const d = new FakeDesktop(scenario([paintedRuffle()]));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy({ profiles_dir: d.dir })),
    });
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    const rec = await h.ok("record_coordinate_profile", {
      hwnd: 1001,
      profile_id: "ruffle-game",
      reference_region_name: "stage",
      safe_regions: [{ name: "play", rect: [20, 60, 120, 90] }],
      verification_points: [{ name: "logo", x: 15, y: 57 }],
      app_version: "0.1",
    });
    expect(rec.correlation_id).toMatch(/^[0-9a-f]{12}$/);
    const profile = rec.profile as Record<string, unknown>;
    expect(profile).toMatchObject({
      schema_version: 1,
      profile_id: "ruffle-game",
      window_size: [824, 640],
      reference_region: { name: "stage", rect: [10, 50, 330, 290] },
      application: { executable_path: RUFFLE },
      verification_points: [{ name: "logo", x: 15, y: 57, color: expect.stringMatching(/^#[0-9a-f]{6}$/) }],
    });
    expect(profile.reference_hash).toMatch(/^[0-9a-f]{64}$/);
    const file = join(d.dir, "profile.json");
    writeFileSync(file, JSON.stringify(profile, null, 2));
    const out = execFileSync(process.execPath, [CLI, "validate-profile", file], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    expect(out).toContain("valid coordinate profile");
    // A broken copy exits non-zero.
    const broken = join(d.dir, "broken.json");
    writeFileSync(broken, JSON.stringify({ ...profile, reference_hash: "xyz" }));
    expect(() =>
      execFileSync(process.execPath, [CLI, "validate-profile", broken], { stdio: "pipe" }),
    ).toThrow();

    const check = () => h.ok("check_coordinate_profile", { hwnd: 1001, profile_path: file });
    expect(await check()).toMatchObject({ matches: true, reason: "ok" });

    // Repainting inside the policy mask does not change the masked hash.
    d.write(
      scenario([
        paintedRuffle({
          paint: [
            { rect: [300, 200, 330, 290], fill: "#ff0000" },
            { rect: [20, 100, 200, 130], fill: "#123456" },
          ],
        }),
      ]),
    );
    expect(await check()).toMatchObject({ matches: true, reason: "ok" });
    // Repainting the unmasked reference region does.
    d.write(scenario([paintedRuffle({ paint: [{ rect: [300, 200, 330, 290], fill: "#fe0000" }] })]));
    expect(await check()).toMatchObject({ matches: false, reason: "hash_mismatch" });
    // Another window size is a size mismatch (no pixels compared).
    d.write(scenario([paintedRuffle({ rect: [100, 100, 900, 700] })]));
    expect(await check()).toMatchObject({
      matches: false,
      reason: "size_mismatch",
      expected_size: [824, 640],
      actual_size: [800, 600],
    });
    // Back as recorded: matches again.
    d.write(scenario([paintedRuffle({ rect: [300, 200, 1124, 840] })]));
    expect(await check()).toMatchObject({ matches: true, reason: "ok" });

    expect(
      await h.ok("resolve_coordinate_profile_point", { profile_path: file, region_name: "play" }),
    ).toMatchObject({ x: 69, y: 74, kind: "safe_region", window_size: [824, 640] });
    expect(
      await h.ok("resolve_coordinate_profile_point", { profile_path: file, region_name: "logo" }),
    ).toMatchObject({ x: 15, y: 57, kind: "verification_point" });
    const unknown = await h.call("resolve_coordinate_profile_point", {
      profile_path: file,
      region_name: "nope",
    });
    expect(unknown.code).toBe("invalid_argument");
    expect(String((unknown.structured.error as { message: string }).message)).toMatch(/play.*logo/);
    expect((await h.call("check_coordinate_profile", { hwnd: 1001, profile_path: broken })).code).toBe(
      "invalid_argument",
    );
    // The check goes through the same capture chain: a covered reference region is refused.
    d.write(scenario([{ ...NOTEPAD, rect: [300, 300, 500, 500] }, paintedRuffle({ z: 1 })]));
    expect((await h.call("check_coordinate_profile", { hwnd: 1001, profile_path: file })).code).toBe(
      "occluded",
    );
    // A reference region outside the policy's safe regions is never captured.
    const outside = await h.call("record_coordinate_profile", {
      hwnd: 1001,
      profile_id: "outside",
      reference_region_name: "wide",
      safe_regions: [{ name: "wide", rect: [0, 0, 600, 400] }],
      verification_points: [],
    });
    expect(outside.code).toBe("action_not_allowed");
  });
});
