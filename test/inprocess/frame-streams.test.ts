import { writeFileSync } from "node:fs";
import {
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { PNG } from "pngjs";
import { describe, expect, it } from "vitest";
import { streamMemoryUse } from "../../src/supervisor/screenshot/streamMemory.js";
import { InProcessHarness } from "../support/inProcess.js";
import { FakeDesktop, filePolicy, LOOSE_BUDGETS, ruffleWindow } from "../support/mcp.js";
import { closeServersAfterEach, track } from "../support/servers.js";

/**
 * Frame streams as MCP resources in process on the simulated desktop: the scenario file is
 * rewritten to change the window's pixels (a block that moves).
 */

closeServersAfterEach();

function scenario(x: number | null): Record<string, unknown> {
  return {
    session: 1,
    foreground: 1001,
    windows: [ruffleWindow({ paint: x === null ? [] : [{ rect: [x, 200, x + 30, 290], fill: "#ff0000" }] })],
    consent: { answer: "approve", delay_ms: 0 },
  };
}

const URI = "uiinspect://window/1001/region/stage";

async function granted(env: Record<string, string> = {}) {
  const d = new FakeDesktop(scenario(null));
  const policyPath = d.writePolicy(
    filePolicy({ safe_regions: [{ name: "stage", rect: [10, 50, 330, 290] }] }),
  );
  const h = await track(
    InProcessHarness.start({
      UIINSPECT_PLATFORM: "fake",
      ...LOOSE_BUDGETS,
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
      UIINSPECT_VISUAL_SAMPLE_RATE: "10",
      UIINSPECT_POLICY_WATCH_MS: "100",
      ...env,
    }),
  );
  const updates: Array<{ uri: string; meta: Record<string, unknown> }> = [];
  h.client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => {
    updates.push({ uri: n.params.uri, meta: (n.params._meta ?? {}) as Record<string, unknown> });
  });
  const listChanges = { n: 0 };
  h.client.setNotificationHandler(ResourceListChangedNotificationSchema, async () => {
    listChanges.n += 1;
  });
  expect((await h.client.listResources()).resources).toEqual([]);
  await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
  // The grant adds the window's regions: the client hears the list changed.
  await until("resources/list_changed", () => listChanges.n >= 1);
  return { d, h, updates, policyPath, listChanges };
}

async function until<T>(what: string, f: () => T | null | undefined, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("frame streams", () => {
  it("lists the granted window's regions, reads frames with _meta, and tells of changed pixels only", async () => {
    const { d, h, updates } = await granted();
    const { resources } = await h.client.listResources();
    expect(resources.map((r) => r.uri)).toEqual([URI]);
    const { resourceTemplates } = await h.client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toContain(
      "uiinspect://window/{hwnd}/region/{region_name}",
    );

    await h.client.subscribeResource({ uri: URI });
    await until("first update", () => updates.length >= 1);
    const first = await h.client.readResource({ uri: URI });
    const c = first.contents[0] as { blob: string; mimeType: string; _meta: Record<string, unknown> };
    expect(c.mimeType).toBe("image/png");
    const png = PNG.sync.read(Buffer.from(c.blob, "base64"));
    expect([png.width, png.height]).toEqual([320, 240]);
    expect(c._meta).toMatchObject({ sequence: 1 });
    expect(c._meta.hash).toMatch(/^[0-9a-f]{32}$/);
    expect(typeof c._meta.captured_at).toBe("string");
    // Nothing changes: no update however long it samples.
    const before = updates.length;
    await new Promise((r) => setTimeout(r, 400));
    expect(updates.length).toBe(before);

    d.write(scenario(200));
    await until("update on change", () => updates.length > before);
    const second = await h.client.readResource({ uri: URI });
    const meta = (second.contents[0] as { _meta: Record<string, unknown> })._meta;
    expect(meta.sequence).toBe(2);
    expect(meta.hash).not.toBe(c._meta.hash);
    const rects = meta.changed_rects as number[][];
    expect(rects.length).toBeGreaterThan(0);
    // Every changed rectangle lies around the block (window x 200–230, y 200–290), in 32-px tiles.
    for (const [l, t, r, b] of rects) {
      expect(l).toBeGreaterThanOrEqual(200 - 32);
      expect(r).toBeLessThanOrEqual(230 + 32);
      expect(t).toBeGreaterThanOrEqual(200 - 32);
      expect(b).toBeLessThanOrEqual(290);
    }
    await h.client.unsubscribeResource({ uri: URI });
    await until("ended", () => updates.find((u) => u.meta.ended === "unsubscribed"));
    // Audited: the subscription (as the screenshot it authorizes) and the stream's end.
    const events = (await h.ok("get_audit_events", { limit: 20 })).events as Array<Record<string, unknown>>;
    const ofStreams = events.filter((e) => e.tool === "screenshot_window");
    expect(ofStreams.some((e) => (e.counters as Record<string, unknown>).stream === true)).toBe(true);
    const end = ofStreams.find((e) => (e.counters as Record<string, unknown>).stream_end === true);
    expect(end).toMatchObject({ outcome: "allow", reason: "ok", counters: { frames: 2 } });
    expect(JSON.stringify(events)).not.toContain("stage");
  });

  it("a silent reader hears of one frame and holds at most one undelivered frame, the newest", async () => {
    const { d, h, updates } = await granted();
    await h.client.subscribeResource({ uri: URI });
    await until("first update", () => updates.length >= 1);
    for (let i = 0; i < 8; i++) {
      d.write(scenario(20 + i * 30));
      await new Promise((r) => setTimeout(r, 150));
    }
    // One notification for the undelivered frame, whatever happened after it.
    expect(updates.filter((u) => u.meta.sequence !== undefined)).toHaveLength(1);
    const use = streamMemoryUse(h.sup);
    const r = await h.client.readResource({ uri: URI });
    const meta = (r.contents[0] as { _meta: Record<string, unknown> })._meta;
    // Frames 2…9 replaced each other; the read gets the newest.
    expect(meta.sequence as number).toBeGreaterThan(5);
    const blob = Buffer.from((r.contents[0] as { blob: string }).blob, "base64").length;
    // One PNG kept (the undelivered one) before the read, at most two ever.
    expect(use.in_use).toBeLessThanOrEqual(blob * 1.5);
    expect(use.peak).toBeLessThanOrEqual(blob * 3);
  });

  it("ends on release_access and on a policy change, and reads are refused after release", async () => {
    const { h, updates, policyPath, d } = await granted();
    await h.client.subscribeResource({ uri: URI });
    await until("first update", () => updates.length >= 1);
    await h.ok("release_access", { hwnd: 1001 });
    await until("ended on release", () => updates.find((u) => u.meta.ended === "released"));
    await expect(h.client.readResource({ uri: URI })).rejects.toThrow();
    expect(streamMemoryUse(h.sup).in_use).toBe(0);

    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    await h.client.subscribeResource({ uri: URI });
    await until(
      "second stream's update",
      () => updates.filter((u) => u.meta.sequence !== undefined).length >= 2,
    );
    writeFileSync(
      policyPath,
      JSON.stringify(filePolicy({ safe_regions: [{ name: "stage", rect: [10, 50, 200, 200] }] })),
    );
    await until("ended on policy change", () => updates.find((u) => u.meta.ended === "policy_changed"));
    const n = updates.length;
    d.write(scenario(100));
    await new Promise((r) => setTimeout(r, 400));
    expect(updates.length).toBe(n);
  });
});
