import { describe, expect, it } from "vitest";
import { InProcessHarness } from "../support/inProcess.js";
import { FakeDesktop, filePolicy, LOOSE_BUDGETS, ruffleWindow } from "../support/mcp.js";
import { closeServersAfterEach, track } from "../support/servers.js";

/**
 * screenshot_window's if_changed_since and wait_for_visual_change in process on the simulated
 * desktop: the scenario file is rewritten to change the window's pixels.
 */

closeServersAfterEach();

function scenario(paint: Array<Record<string, unknown>>): Record<string, unknown> {
  return {
    session: 1,
    foreground: 1001,
    windows: [ruffleWindow({ paint })],
    consent: { answer: "approve", delay_ms: 0 },
  };
}

const BLOCK = { rect: [300, 200, 330, 290], fill: "#ff0000" };

async function granted() {
  const d = new FakeDesktop(scenario([]));
  const policy = d.writePolicy(filePolicy({ safe_regions: [{ name: "stage", rect: [10, 50, 330, 290] }] }));
  const h = await track(
    InProcessHarness.start({
      UIINSPECT_PLATFORM: "fake",
      ...LOOSE_BUDGETS,
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: policy,
      UIINSPECT_VISUAL_SAMPLE_RATE: "10",
    }),
  );
  await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
  return { d, h };
}

describe("visual change without subscriptions", () => {
  it("if_changed_since: a small unchanged answer with no image while the pixels are the same", async () => {
    const { d, h } = await granted();
    const first = await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" });
    const hash = first.structured.hash as string;
    expect(hash).toMatch(/^[0-9a-f]{32}$/);
    const same = await h.call("screenshot_window", {
      hwnd: 1001,
      region_name: "stage",
      if_changed_since: hash,
    });
    expect(same.structured).toMatchObject({ unchanged: true, hash, png_bytes: 0, width: 320, height: 240 });
    expect(same.content.some((c) => c.type === "image")).toBe(false);
    // A grid is another image of the same pixels.
    const grid = await h.call("screenshot_window", {
      hwnd: 1001,
      region_name: "stage",
      grid: true,
      if_changed_since: hash,
    });
    expect(grid.content.some((c) => c.type === "image")).toBe(true);
    d.write(scenario([BLOCK]));
    const changed = await h.call("screenshot_window", {
      hwnd: 1001,
      region_name: "stage",
      if_changed_since: hash,
    });
    expect(changed.structured.unchanged).toBeUndefined();
    expect(changed.structured.hash).not.toBe(hash);
    expect(changed.content.some((c) => c.type === "image")).toBe(true);
  });

  it("wait_for_visual_change returns the changed rectangles (and the frame when asked), or changed false at the timeout", async () => {
    const { d, h } = await granted();
    const first = await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" });
    const since = first.structured.hash as string;
    const quiet = await h.call("wait_for_visual_change", {
      hwnd: 1001,
      region_name: "stage",
      since,
      timeout_ms: 300,
    });
    expect(quiet.structured).toMatchObject({ changed: false, hash: since });
    expect(quiet.content.some((c) => c.type === "image")).toBe(false);

    const pending = h.call("wait_for_visual_change", {
      hwnd: 1001,
      region_name: "stage",
      since,
      timeout_ms: 10_000,
      include_frame: true,
    });
    await new Promise((r) => setTimeout(r, 200));
    d.write(scenario([BLOCK]));
    const r = await pending;
    expect(r.isError).toBe(false);
    expect(r.structured.changed).toBe(true);
    expect(r.structured.hash).not.toBe(since);
    // The block [300,200,330,290] lies in the region's 32-px tiles from window (298, 178) on
    // (the region starts at (10, 50)); the rectangles cover it and nothing far from it.
    const rects = r.structured.changed_rects as number[][];
    expect(rects.length).toBeGreaterThan(0);
    for (const [l, t, rr, b] of rects) {
      expect(l).toBeGreaterThanOrEqual(298 - 32);
      expect(t).toBeGreaterThanOrEqual(178 - 32);
      expect(rr).toBeLessThanOrEqual(330);
      expect(b).toBeLessThanOrEqual(290);
    }
    const covers = (x: number, y: number) =>
      rects.some(([l, t, rr, b]) => x >= l && x < rr && y >= t && y < b);
    expect(covers(300, 200) && covers(329, 289)).toBe(true);
    expect(r.content.some((c) => c.type === "image")).toBe(true);
  });

  it("wait_for_visual_change since a screenshot taken before the change: the rectangles come from that screenshot's tiles", async () => {
    const { d, h } = await granted();
    // The screenshot's tiles are hashed after its answer, in the capture worker (tiles "later"),
    // and asked for by the wait: its first frame already differs, so only they locate the change.
    const first = await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" });
    const since = first.structured.hash as string;
    d.write(scenario([BLOCK]));
    const r = await h.call("wait_for_visual_change", {
      hwnd: 1001,
      region_name: "stage",
      since,
      timeout_ms: 5_000,
    });
    expect(r.structured.changed).toBe(true);
    const rects = r.structured.changed_rects as number[][];
    expect(rects.length).toBeGreaterThan(0);
    // Not the whole region ([10, 50, 330, 290], what a frame without tiles would give).
    for (const [l, t] of rects) {
      expect(l).toBeGreaterThanOrEqual(298 - 32);
      expect(t).toBeGreaterThanOrEqual(178 - 32);
    }
    // The same with the two-message path (a title instead of the hwnd).
    d.write(scenario([]));
    const second = await h.call("screenshot_window", { title_contains: "Ruffle", region_name: "stage" });
    d.write(scenario([BLOCK]));
    const again = await h.call("wait_for_visual_change", {
      hwnd: 1001,
      region_name: "stage",
      since: second.structured.hash as string,
      timeout_ms: 5_000,
    });
    expect(again.structured.changed).toBe(true);
    for (const [l, t] of again.structured.changed_rects as number[][]) {
      expect(l).toBeGreaterThanOrEqual(298 - 32);
      expect(t).toBeGreaterThanOrEqual(178 - 32);
    }
  });

  it("wait_for_visual_change ends with the grant: release_access during the wait", async () => {
    const { h } = await granted();
    const pending = h.call("wait_for_visual_change", {
      hwnd: 1001,
      region_name: "stage",
      timeout_ms: 10_000,
    });
    await new Promise((r) => setTimeout(r, 300));
    await h.ok("release_access", { hwnd: 1001 });
    expect((await pending).code).toBe("consent_required");
  });
});
