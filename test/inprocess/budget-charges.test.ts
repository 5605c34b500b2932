import { afterEach, describe, expect, it, vi } from "vitest";
import { uiError } from "../../src/shared/errors.js";
import { closeServersAfterEach, Desk, serve, until, win } from "../support/consent.js";
import type { InProcessHarness } from "../support/inProcess.js";
import type { ServerHarness } from "../support/mcp.js";

/**
 * What a failing call gives back to the application's volume budgets, through the real chain on
 * the in-process server: a screenshot or a coordinate profile that produced no image returns its
 * pixels, send_text keeps its characters once the request went out. Where the fake desktop cannot
 * make the worker fail that way (a deadline, a crash), the worker host's answer is replaced.
 */

closeServersAfterEach();
afterEach(() => {
  vi.restoreAllMocks();
});

const STAGE_PIXELS = 320 * 240;
const LIMITS = {
  max_actions_per_minute: 100,
  max_text_chars_per_minute: 100,
  max_screenshot_pixels_per_minute: 2 * STAGE_PIXELS,
  max_png_bytes: 1024 * 1024,
};

interface AppEntry {
  hwnd: string;
  actions: { used: number };
  text_chars: { used: number } | null;
  screenshot_pixels: { used: number };
}

async function used(h: ServerHarness, hwnd = "1001") {
  const apps = (await h.ok("get_rate_limit_state")).applications as AppEntry[];
  const app = apps.find((a) => a.hwnd === hwnd);
  if (!app) throw new Error("no application entry");
  return {
    pixels: app.screenshot_pixels.used,
    chars: app.text_chars?.used ?? null,
    actions: app.actions.used,
  };
}

async function start(windows = [win(1)]) {
  const desk = new Desk(windows);
  const h = (await serve(desk, { policy: { limits: LIMITS } })) as InProcessHarness;
  await h.ok("request_access", { hwnd: 1001 });
  return { desk, h };
}

const shot = { hwnd: 1001, region_name: "stage" };

/** send_text (a protected class) with a fresh confirmation token. */
async function sendText(h: ServerHarness, hwnd: number, text: string) {
  const token = await h.ok("request_confirmation", { hwnd, action_class: "text" }).catch(() => null);
  return h.call("send_text", {
    hwnd,
    text,
    ...(token ? { confirmation_token: String(token.token_id) } : {}),
  });
}

describe("screenshot_window gives its pixels back when it fails", () => {
  it("covered (occluded) or too large for max_png_bytes: the pixels go back", async () => {
    const { desk, h } = await start();
    const cover = win(2, { rect: [0, 0, 400, 320], z: 0, process_path: "C:\\Tools\\cover.exe" });
    desk.set({ windows: [win(1), cover] });
    expect((await h.call("screenshot_window", shot)).code).toBe("occluded");
    desk.set({ windows: [win(1)] });
    expect(await used(h)).toMatchObject({ pixels: 0 });
    // The budget still holds exactly two stage captures.
    expect((await h.call("screenshot_window", shot)).isError).toBe(false);
    expect((await h.call("screenshot_window", shot)).isError).toBe(false);
    expect(await used(h)).toMatchObject({ pixels: 2 * STAGE_PIXELS });
    expect((await h.call("screenshot_window", shot)).code).toBe("rate_limited");
  });

  it("a worker deadline, a crash or a vanished window: the pixels go back", async () => {
    const { h } = await start();
    const capture = h.sup.workers.capture;
    const real = capture.call.bind(capture);
    for (const code of ["worker_timeout", "worker_crashed", "target_gone", "image_too_large"] as const) {
      const spy = vi
        .spyOn(capture, "call")
        .mockImplementation(((op, args, opts) =>
          op === "capture.region" || op === "capture.window"
            ? Promise.reject(uiError(code))
            : real(op, args, opts)) as typeof capture.call);
      expect((await h.call("screenshot_window", shot)).code).toBe(code);
      spy.mockRestore();
    }
    expect(await used(h)).toMatchObject({ pixels: 0 });
    expect((await h.call("screenshot_window", shot)).isError).toBe(false);
    expect(await used(h)).toMatchObject({ pixels: STAGE_PIXELS });
  });

  it("cancelled while waiting for image memory: the pixels go back, nothing was captured", async () => {
    const { h } = await start();
    const capture = h.sup.workers.capture;
    const captures = vi.spyOn(capture, "call");
    const held = h.sup.memory.tryReserve(h.sup.memory.limitBytes);
    expect(held).not.toBeNull();
    const ac = new AbortController();
    const call = h.call("screenshot_window", shot, { signal: ac.signal });
    await until(() => h.sup.memory.waiting === 1, "the capture to wait for memory");
    ac.abort();
    await expect(call).rejects.toThrow();
    await until(() => h.sup.memory.waiting === 0, "the wait to end");
    held?.release();
    expect(captures.mock.calls.filter(([op]) => op === "capture.region" || op === "capture.window")).toEqual(
      [],
    );
    expect(await used(h)).toMatchObject({ pixels: 0 });
    const audited = (await h.ok("get_audit_events", { limit: 10 })).events as Array<Record<string, unknown>>;
    expect(audited.find((e) => e.tool === "screenshot_window")).toMatchObject({ reason: "cancelled" });
  });
});

describe("send_text keeps its characters once the request went out", () => {
  it("a refusal from the worker keeps the charge: an earlier chunk may have been typed", async () => {
    // 1002 behind 1001 (passive focus): the input worker refuses with not_foreground.
    const { desk, h } = await start([win(1), win(2)]);
    await h.ok("request_access", { hwnd: 1002 });
    // The token is issued while 1002 is in front; 1001 comes back in front before the call.
    desk.set({ windows: [win(2), win(1)] });
    const token = String((await h.ok("request_confirmation", { hwnd: 1002, action_class: "text" })).token_id);
    desk.set({ windows: [win(1), win(2)] });
    const refused = await h.call("send_text", {
      hwnd: 1002,
      text: "x".repeat(40),
      confirmation_token: token,
    });
    expect(refused.code).toBe("not_foreground");
    expect(await used(h, "1002")).toEqual({ pixels: 0, chars: 40, actions: 1 });
    const input = h.sup.workers.input;
    vi.spyOn(input, "call").mockRejectedValue(uiError("worker_timeout"));
    expect((await sendText(h, 1001, "x".repeat(40))).code).toBe("worker_timeout");
    expect(await used(h, "1001")).toEqual({ pixels: 0, chars: 40, actions: 1 });
  });
});

describe("record_coordinate_profile gives its pixels back when the reference capture fails", () => {
  it("a refused capture gives the pixels back; a recorded profile keeps them", async () => {
    const { desk, h } = await start();
    const args = {
      hwnd: 1001,
      profile_id: "p1",
      reference_region_name: "stage",
      safe_regions: [],
      verification_points: [],
    };
    desk.set({
      windows: [win(1), win(2, { rect: [0, 0, 400, 320], z: 0, process_path: "C:\\x\\cover.exe" })],
    });
    expect((await h.call("record_coordinate_profile", args)).code).toBe("occluded");
    expect(await used(h)).toMatchObject({ pixels: 0 });
    desk.set({ windows: [win(1)] });
    const recorded = await h.call("record_coordinate_profile", args);
    expect(recorded.isError, JSON.stringify(recorded.structured)).toBe(false);
    expect(await used(h)).toMatchObject({ pixels: STAGE_PIXELS });
  });
});

describe("get_rate_limit_state never shows another client's typing", () => {
  it("reports typed characters only while no other client holds a grant on the instance", async () => {
    const { h } = await start();
    expect((await sendText(h, 1001, "x".repeat(12))).isError).toBe(false);
    expect(await used(h)).toMatchObject({ chars: 12, actions: 1 });

    const other = await h.join({ name: "other-agent", version: "1.0.0" });
    try {
      await other.ok("request_access", { hwnd: 1001 });
      expect((await sendText(other, 1001, "y".repeat(9))).isError).toBe(false);
      for (const client of [h, other]) {
        const app = ((await client.ok("get_rate_limit_state")).applications as AppEntry[])[0];
        expect(app.text_chars).toBeNull();
        expect(app.actions.used).toBe(2);
      }
    } finally {
      await other.close();
    }
  });
});
