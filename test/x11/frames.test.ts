import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform, WindowInfo } from "../../src/shared/platform.js";
import { CLI, LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import {
  approveConsentDialog,
  startApp,
  startSession,
  UNSAFE_XTEST,
  waitFor,
  waitForWindow,
  X11_AVAILABLE,
  X11_REQUIRED,
  type X11Session,
  xdotool,
} from "./support.js";

/**
 * Frames that change on a real X11 desktop, through the built CLI: a pulsating GTK progress bar
 * (zenity --progress --pulsate) animates without end, an idle zenity dialog stands still.
 * screenshot_window's if_changed_since, wait_for_visual_change, and frame streams (resources):
 * a stream of the changing window, a stalled reader under the stream memory cap, and the stream
 * ending on release and on a policy change.
 */

const HAVE_CLI = existsSync(CLI);

interface Update {
  uri: string;
  meta: Record<string, unknown>;
}

async function until<T>(what: string, f: () => T | null | undefined | false, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.skipIf(!X11_AVAILABLE || (!HAVE_CLI && !X11_REQUIRED))("x11 frames that change (built CLI)", () => {
  let session: X11Session;
  let barApp: ChildProcess | undefined;
  let p: Platform;
  let h: McpHarness;
  let bar: WindowInfo;
  let still: WindowInfo;
  let policyPath: string;
  const updates: Update[] = [];
  const CAP = 1024 * 1024;

  const policy = (regions: Array<{ name: string; rect: number[] }>) => ({
    schema_version: 1,
    policy_id: "x11-frames",
    application: { executable_path: bar.instance!.exe_path, title_patterns: ["uix frames *"] },
    allowed_actions: ["observe"],
    safe_regions: regions,
    limits: { max_screenshot_pixels_per_minute: 1e12 },
  });
  const body = () => ({ name: "body", rect: [0, 0, bar.rect[2] - bar.rect[0], bar.rect[3] - bar.rect[1]] });
  const stillBody = () => ({
    name: "calm",
    rect: [0, 0, still.rect[2] - still.rect[0], still.rect[3] - still.rect[1]],
  });
  const uri = (w: WindowInfo, name: string) => `uiinspect://window/${w.hwnd}/region/${name}`;

  beforeAll(async () => {
    session = startSession();
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "other" });
    // stdin stays open (a pipe from sleep): at its end zenity's progress stops pulsing.
    barApp = spawn(
      "sh",
      [
        "-c",
        "sleep 600 | exec zenity --progress --pulsate --title='uix frames bar' --text=working --width=360",
      ],
      { env: process.env, stdio: "ignore", detached: true },
    );
    startApp("zenity", ["--info", "--title=uix frames calm", "--text=calm", "--width=300"]);
    // Apart, so neither covers the other (both open centred).
    xdotool("windowmove", String((await waitForWindow(p, "uix frames bar")).hwnd), "20", "20");
    xdotool("windowmove", String((await waitForWindow(p, "uix frames calm")).hwnd), "500", "400");
    bar = await waitFor("the bar moved", async () => {
      const w = await waitForWindow(p, "uix frames bar");
      return w.rect[0] < 200 && w.rect[1] < 200 ? w : null;
    });
    still = await waitFor("the calm window moved", async () => {
      const w = await waitForWindow(p, "uix frames calm");
      return w.rect[0] >= 400 ? w : null;
    });
    const dir = scratchDir("frames");
    policyPath = join(dir, "policy.json");
    writeFileSync(policyPath, JSON.stringify(policy([body(), stillBody()])));
    h = await McpHarness.start({
      ...UNSAFE_XTEST,
      ...LOOSE_BUDGETS,
      DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
      UIINSPECT_POLICY_WATCH_MS: "200",
      UIINSPECT_VISUAL_SAMPLE_RATE: "10",
      UIINSPECT_STREAM_MEMORY_BYTES: String(CAP),
    });
    h.client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => {
      updates.push({ uri: n.params.uri, meta: (n.params._meta ?? {}) as Record<string, unknown> });
    });
    for (const w of [bar, still]) {
      const pending = h.call("request_access", { hwnd: w.hwnd });
      await approveConsentDialog();
      expect((await pending).structured.decision).toBe("approved");
    }
  }, 90_000);

  afterAll(async () => {
    if (barApp?.pid) process.kill(-barApp.pid, "SIGKILL");
    await h?.close();
    await p?.dispose();
    session?.stop();
  });

  it("if_changed_since: no image for a window that stands still, an image for one that changes", async () => {
    const first = await h.call("screenshot_window", { hwnd: still.hwnd, region_name: "calm" });
    const hash = first.structured.hash as string;
    const again = await h.call("screenshot_window", {
      hwnd: still.hwnd,
      region_name: "calm",
      if_changed_since: hash,
    });
    expect(again.structured).toMatchObject({ unchanged: true, hash, png_bytes: 0 });
    expect(again.content.some((c) => c.type === "image")).toBe(false);

    const b1 = await h.call("screenshot_window", { hwnd: bar.hwnd, region_name: "body" });
    await new Promise((r) => setTimeout(r, 300));
    const b2 = await h.call("screenshot_window", {
      hwnd: bar.hwnd,
      region_name: "body",
      if_changed_since: b1.structured.hash,
    });
    expect(b2.structured.unchanged).toBeUndefined();
    expect(b2.structured.hash).not.toBe(b1.structured.hash);
    expect(b2.content.some((c) => c.type === "image")).toBe(true);
  }, 30_000);

  it("wait_for_visual_change: the bar's change inside the bar's rows; the calm window times out unchanged", async () => {
    const r = await h.call("wait_for_visual_change", {
      hwnd: bar.hwnd,
      region_name: "body",
      timeout_ms: 5000,
      include_frame: true,
    });
    expect(r.isError).toBe(false);
    expect(r.structured.changed).toBe(true);
    const rects = r.structured.changed_rects as number[][];
    expect(rects.length).toBeGreaterThan(0);
    // The pulsing block moves inside the progress bar, not across the whole dialog.
    const area = rects.reduce((a, [l, t, rr, b]) => a + (rr - l) * (b - t), 0);
    expect(area).toBeLessThan((bar.rect[2] - bar.rect[0]) * (bar.rect[3] - bar.rect[1]) * 0.5);
    const img = r.content.find((c) => c.type === "image");
    expect(PNG.sync.read(Buffer.from(img?.data ?? "", "base64")).width).toBe(bar.rect[2] - bar.rect[0]);

    const calm = await h.call("wait_for_visual_change", {
      hwnd: still.hwnd,
      region_name: "calm",
      timeout_ms: 800,
    });
    expect(calm.structured).toMatchObject({ changed: false });
  }, 30_000);

  it("streams the changing window; a stalled reader stays under the cap and hears of one frame", async () => {
    const { resources } = await h.client.listResources();
    expect(resources.map((x) => x.uri)).toEqual(
      expect.arrayContaining([uri(bar, "body"), uri(still, "calm")]),
    );
    const mark = updates.length;
    await h.client.subscribeResource({ uri: uri(bar, "body") });
    await until("first frame", () => updates.slice(mark).some((u) => u.meta.sequence !== undefined));
    // Read a few frames as a fast reader would.
    const seqs: number[] = [];
    for (let i = 0; i < 4; i++) {
      const before = updates.length;
      const r = await h.client.readResource({ uri: uri(bar, "body") });
      const c = r.contents[0] as { blob: string; _meta: Record<string, unknown> };
      expect(PNG.sync.read(Buffer.from(c.blob, "base64")).height).toBe(bar.rect[3] - bar.rect[1]);
      seqs.push(c._meta.sequence as number);
      await until("next frame", () => updates.length > before);
    }
    expect(new Set(seqs).size).toBe(seqs.length);
    // Now stall for 2 s (about 20 samples, most of them changed): one notification at most.
    const stalled = updates.length;
    await new Promise((r) => setTimeout(r, 2000));
    expect(updates.slice(stalled).filter((u) => u.meta.sequence !== undefined).length).toBeLessThanOrEqual(1);
    const health = await h.ok("health_check");
    const kept = (health as { streams?: { in_use: number; peak: number } }).streams;
    expect(kept?.peak ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(CAP);
    const r = await h.client.readResource({ uri: uri(bar, "body") });
    expect((r.contents[0] as { _meta: Record<string, unknown> })._meta.sequence as number).toBeGreaterThan(
      seqs.at(-1) ?? 0,
    );
  }, 60_000);

  it("the stream ends on release_access: no frame after it", async () => {
    await h.ok("release_access", { hwnd: bar.hwnd });
    await until("ended", () =>
      updates.find((u) => u.uri === uri(bar, "body") && u.meta.ended === "released"),
    );
    const after = updates.length;
    await new Promise((r) => setTimeout(r, 800));
    expect(updates.slice(after).filter((u) => u.uri === uri(bar, "body"))).toEqual([]);
    await expect(h.client.readResource({ uri: uri(bar, "body") })).rejects.toThrow();
  }, 30_000);

  it("the stream ends when the policy changes", async () => {
    // Asked again after the release: approved in the dialog if one opens.
    const pending = h.call("request_access", { hwnd: bar.hwnd });
    await Promise.race([pending, approveConsentDialog().catch(() => undefined)]);
    expect((await pending).structured.decision).toBe("approved");
    const mark = updates.length;
    await h.client.subscribeResource({ uri: uri(bar, "body") });
    await until("frame", () => updates.slice(mark).some((u) => u.meta.sequence !== undefined));
    writeFileSync(policyPath, JSON.stringify(policy([body()])));
    await until("ended on policy change", () =>
      updates.slice(mark).find((u) => u.uri === uri(bar, "body") && u.meta.ended === "policy_changed"),
    );
    const after = updates.length;
    await new Promise((r) => setTimeout(r, 800));
    expect(updates.slice(after).filter((u) => u.uri === uri(bar, "body"))).toEqual([]);
  }, 60_000);
});
