import { PNG } from "pngjs";
import { afterAll, describe, expect, it } from "vitest";
import { FakeDesktop, McpHarness, type ToolCall } from "../support/mcp.js";

/**
 * 16 concurrent screenshot streams on 8 windows (3 processes) under a 64 MiB memory budget,
 * through the built CLI over stdio. Every call succeeds or fails cleanly with a budget code;
 * the budget's high-water mark never passes its limit; every image shows only its own
 * window's fill; the supervisor's event-loop delay is recorded (no timing assertion).
 */

const MIB = 1024 * 1024;
const BUDGET = 64 * MIB;
const STREAMS = 16;
const SHOTS_PER_STREAM = 3;
const EXE = "C:\\Apps\\stream\\stream.exe";

const COLS = 4;
const W = 1000;
const H = 900;
/** Window i: a distinct fill; three processes share the eight windows. */
const windows = Array.from({ length: 8 }, (_, i) => {
  const col = i % COLS;
  const row = Math.floor(i / COLS);
  const pid = 5001 + (i % 3);
  return {
    hwnd: 4001 + i,
    title: `Stream ${i}`,
    class: "StreamWindow",
    pid,
    process_start: "2026-11-30T08:00:00Z",
    process_path: EXE,
    rect: [col * W, row * H, col * W + W, row * H + H],
    visible: true,
    iconic: false,
    z: i,
    fill: `#${(0x10 + i * 0x1c).toString(16).padStart(2, "0")}${(0xf0 - i * 0x16).toString(16).padStart(2, "0")}${(0x30 + i * 0x11).toString(16).padStart(2, "0")}`,
  };
});
/** Too big for the whole budget on its own: 2976 × 2848 × 8 bytes > 64 MiB. */
const huge = {
  ...windows[0],
  hwnd: 4100,
  title: "Stream huge",
  rect: [0, 2 * H, 3000, 2 * H + 2900],
  z: 20,
  fill: "#777777",
};

function rgbOf(hex: string): [number, number, number] {
  return [
    Number.parseInt(hex.slice(1, 3), 16),
    Number.parseInt(hex.slice(3, 5), 16),
    Number.parseInt(hex.slice(5, 7), 16),
  ];
}

let h: McpHarness | undefined;
afterAll(async () => {
  await h?.close();
});

interface EventLoop {
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

describe("concurrent screenshot streams under a 64 MiB budget", () => {
  it("stay inside the budget, never mix pixels, and fail only cleanly", async () => {
    const d = new FakeDesktop({
      session: 1,
      foreground: 4001,
      virtual_screen: [0, 0, 4000, 2 * H + 2900],
      windows: [...windows, huge],
      consent: { answer: "approve", delay_ms: 0 },
    });
    h = await McpHarness.start({
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "Stream *",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: EXE,
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe",
      DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "true",
      DESKTOP_AUTOMATION_SCREENSHOT_MEMORY_BUDGET_BYTES: String(BUDGET),
      DESKTOP_AUTOMATION_MAX_SCREENSHOT_PIXELS_PER_MINUTE: String(1_000_000_000),
      UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: "10000",
      UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "10000",
    });
    const harness = h;
    // One grant per process instance covers all its windows.
    for (const hwnd of [4001, 4002, 4003]) await harness.ok("request_access", { hwnd });

    const tooBig = await harness.call("screenshot_window", { hwnd: huge.hwnd });
    expect(tooBig.code).toBe("memory_budget_exceeded");
    expect(tooBig.content.some((c) => c.type === "image")).toBe(false);

    const outcomes: Array<{ window: number; r: ToolCall }> = [];
    const loops: EventLoop[] = [];
    let streaming = true;
    const sampler = (async () => {
      while (streaming) {
        const hc = await harness.ok("health_check");
        loops.push(hc.event_loop as EventLoop);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await Promise.all(
      Array.from({ length: STREAMS }, async (_, s) => {
        const w = s % windows.length;
        for (let k = 0; k < SHOTS_PER_STREAM; k++) {
          const r = await harness.call("screenshot_window", { hwnd: windows[w].hwnd });
          outcomes.push({ window: w, r });
        }
      }),
    );
    streaming = false;
    await sampler;

    expect(outcomes).toHaveLength(STREAMS * SHOTS_PER_STREAM);
    let ok = 0;
    for (const { window, r } of outcomes) {
      if (r.isError) {
        expect(["memory_budget_exceeded", "rate_limited"]).toContain(r.code);
        continue;
      }
      ok++;
      const img = r.content.find((c) => c.type === "image");
      const png = PNG.sync.read(Buffer.from(img?.data ?? "", "base64"));
      // Default crops 12/40/12/12 of a 1000×900 window.
      expect([png.width, png.height]).toEqual([976, 848]);
      expect(r.meta).toMatchObject({ image_size: [976, 848], window_offset: [12, 40] });
      const want = rgbOf(windows[window].fill);
      for (let y = 0; y < png.height; y += 53) {
        for (let x = 0; x < png.width; x += 61) {
          const i = (y * png.width + x) * 4;
          const got = [png.data[i], png.data[i + 1], png.data[i + 2]];
          if (got.join() !== want.join()) expect(got, `window ${window} pixel ${x},${y}`).toEqual(want);
        }
      }
      // The last row and column too.
      const i = (png.height * png.width - 1) * 4;
      expect([png.data[i], png.data[i + 1], png.data[i + 2]]).toEqual(want);
    }
    // With a budget that fits every single request and FIFO waiting, all of them succeed.
    expect(ok).toBe(outcomes.length);

    const state = await harness.ok("get_rate_limit_state");
    const mem = state.memory as { limit_bytes: number; in_use_bytes: number; peak_bytes: number };
    const perShot = 976 * 848 * 8;
    expect(mem.limit_bytes).toBe(BUDGET);
    expect(mem.peak_bytes).toBeLessThanOrEqual(BUDGET);
    // The streams really overlapped (more than one frame was reserved at once)…
    expect(mem.peak_bytes).toBeGreaterThanOrEqual(2 * perShot);
    // …and every reservation was given back.
    expect(mem.in_use_bytes).toBe(0);

    const after = (await harness.ok("health_check")).event_loop as EventLoop;
    for (const l of [...loops, after]) {
      expect(Number.isFinite(l.p99_ms)).toBe(true);
      expect(l.p99_ms).toBeGreaterThanOrEqual(0);
    }
    const during = Math.max(...loops.map((l) => l.p99_ms));
    process.stderr.write(
      `${JSON.stringify({
        streams: STREAMS,
        shots: outcomes.length,
        peak_bytes: mem.peak_bytes,
        budget_bytes: BUDGET,
        event_loop_p99_ms_during_max: during,
        event_loop_after: after,
        health_samples: loops.length,
      })}\n`,
    );
  });
});
