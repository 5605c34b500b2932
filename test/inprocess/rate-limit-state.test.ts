import { describe, expect, it } from "vitest";
import { instanceKey } from "../../src/shared/identity.js";
import { FakeDesktop, filePolicy, RUFFLE, ruffleWindow, type ServerHarness } from "../support/mcp.js";
import { closeServersAfterEach, serveFake } from "../support/servers.js";

/**
 * get_rate_limit_state reports the per-application budgets too (docs/spec.md §6: limits and usage, never
 * keys): the policy's limits, and the usage of each application this client holds a grant on,
 * named by hwnd and pid only.
 */

const OTHER = ruffleWindow({
  hwnd: 1002,
  title: "Ruffle - other.swf",
  pid: 4343,
  process_start: "2026-11-30T09:00:00Z",
  rect: [1000, 100, 1824, 740],
});

/** The keys the server uses internally for the two instances (fake desktop: session "1"). */
const KEYS = [
  { pid: 4242, start: "2026-11-30T08:00:00Z" },
  { pid: 4343, start: "2026-11-30T09:00:00Z" },
].map(({ pid, start }) =>
  instanceKey({ pid, start_time: new Date(start).toISOString(), exe_path: RUFFLE, session: "1" }),
);

const STAGE_PIXELS = 320 * 240;

closeServersAfterEach();

async function start(): Promise<{ h: ServerHarness; d: FakeDesktop }> {
  const d = new FakeDesktop({
    session: 1,
    foreground: 1001,
    windows: [ruffleWindow(), OTHER],
    consent: { answer: "approve", delay_ms: 0 },
  });
  const h = await serveFake(d, {
    // The file sets two limits; the third comes from the environment (file fields override env ones).
    policy: filePolicy({
      limits: { max_actions_per_minute: 50, max_screenshot_pixels_per_minute: 5 * STAGE_PIXELS },
    }),
    env: {
      DESKTOP_AUTOMATION_MAX_TEXT_CHARS_PER_MINUTE: "777",
      DESKTOP_AUTOMATION_MAX_ACTIONS_PER_MINUTE: "9999",
    },
  });
  return { h, d };
}

interface AppEntry {
  hwnd: string;
  pid: number;
  actions: { used: number; limit: number };
  text_chars: { used: number; limit: number };
  screenshot_pixels: { used: number; limit: number };
}

describe("get_rate_limit_state: per-application limits and usage", () => {
  it("shows the policy's limits, and usage after a screenshot and a click under the right hwnd", async () => {
    const { h } = await start();

    // No grant yet: the limits are there, no application is listed.
    const before = await h.ok("get_rate_limit_state");
    expect(before.application_limits).toEqual({
      max_actions_per_minute: 50,
      max_text_chars_per_minute: 777,
      max_screenshot_pixels_per_minute: 5 * STAGE_PIXELS,
    });
    expect(before.applications).toEqual([]);

    await h.ok("request_access", { hwnd: 1002, capabilities: ["observe"] });
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe", "click"] });
    const shot = await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" });
    expect(shot.isError, JSON.stringify(shot.structured)).toBe(false);
    const click = await h.call("click_window", { hwnd: 1001, x: 40, y: 80 });
    expect(click.isError, JSON.stringify(click.structured)).toBe(false);

    const r = await h.call("get_rate_limit_state");
    expect(r.isError).toBe(false);
    const apps = r.structured.applications as AppEntry[];
    expect(apps).toEqual([
      {
        hwnd: "1001",
        pid: 4242,
        actions: { used: 1, limit: 50 },
        text_chars: { used: 0, limit: 777 },
        screenshot_pixels: { used: STAGE_PIXELS, limit: 5 * STAGE_PIXELS },
      },
      {
        hwnd: "1002",
        pid: 4343,
        actions: { used: 0, limit: 50 },
        text_chars: { used: 0, limit: 777 },
        screenshot_pixels: { used: 0, limit: 5 * STAGE_PIXELS },
      },
    ]);
    // The client's own budgets still count the calls: one inspection, one action.
    expect(r.structured.client).toMatchObject({ inspection: { used: 1 }, action: { used: 1 } });

    // A screenshot of the other window lands under its own hwnd.
    expect((await h.call("screenshot_window", { hwnd: 1002, region_name: "stage" })).isError).toBe(false);
    const after = (await h.ok("get_rate_limit_state")).applications as AppEntry[];
    expect(after.map((a) => [a.hwnd, a.screenshot_pixels.used, a.actions.used])).toEqual([
      ["1001", STAGE_PIXELS, 1],
      ["1002", STAGE_PIXELS, 0],
    ]);

    // Never the instance key (nor any key-like hex), never a title: in structured content and text.
    const everything = JSON.stringify({ structured: r.structured, content: r.content });
    for (const k of KEYS) {
      expect(k).toMatch(/^[0-9a-f]{32}$/);
      expect(everything).not.toContain(k);
    }
    expect(everything).not.toMatch(/[0-9a-f]{16,}/i);
    expect(everything).not.toContain("Ruffle");
    expect(everything).not.toContain("ruffle.exe");
  });

  it("lists only applications this client still holds a grant on", async () => {
    const { h } = await start();
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    await h.ok("request_access", { hwnd: 1002, capabilities: ["observe"] });
    expect((await h.call("screenshot_window", { hwnd: 1002, region_name: "stage" })).isError).toBe(false);
    expect((await h.ok("release_access", { hwnd: 1002 })).released).toBe(true);
    const apps = (await h.ok("get_rate_limit_state")).applications as AppEntry[];
    expect(apps.map((a) => [a.hwnd, a.pid])).toEqual([["1001", 4242]]);
    expect(apps[0].screenshot_pixels.used).toBe(0);
  });
});
