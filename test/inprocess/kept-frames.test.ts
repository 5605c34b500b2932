import { describe, expect, it } from "vitest";
import { InProcessHarness } from "../support/inProcess.js";
import { FakeDesktop, filePolicy, LOOSE_BUDGETS, ruffleWindow, type ServerHarness } from "../support/mcp.js";
import { closeServersAfterEach, track } from "../support/servers.js";

/**
 * The screenshots the capture worker keeps for a later visual wait's tiles
 * (src/workers/capture/laterTiles.ts) end with the grant they were taken under: a wait since
 * such a frame after the grant ended (and was given again) knows nothing of it and reports the
 * whole region, while another identity's copy of the same pixels stays its own.
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
/** filePolicy's named region, in window coordinates: what a frame never seen reports as changed. */
const STAGE = [10, 50, 330, 290];

async function start() {
  const d = new FakeDesktop(scenario([]));
  const policy = d.writePolicy(filePolicy());
  const h = await track(
    InProcessHarness.start({
      UIINSPECT_PLATFORM: "fake",
      ...LOOSE_BUDGETS,
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: policy,
      UIINSPECT_VISUAL_SAMPLE_RATE: "10",
    }),
  );
  return { d, h };
}

/** The changed rectangles a wait since `since` reports once the block is painted. */
async function changedSince(h: ServerHarness, since: string): Promise<number[][]> {
  const r = await h.call("wait_for_visual_change", {
    hwnd: 1001,
    region_name: "stage",
    since,
    timeout_ms: 5_000,
  });
  expect(r.structured.changed).toBe(true);
  return r.structured.changed_rects as number[][];
}

/** Rectangles near the block only (the frame's tiles were known). */
function local(rects: number[][]): boolean {
  return rects.length > 0 && rects.every(([l, t]) => (l ?? 0) >= 298 - 32 && (t ?? 0) >= 178 - 32);
}

describe("kept screenshots end with their grant", () => {
  it("release_access drops the identity's kept frames; another identity's copy of the same pixels stays", async () => {
    const { d, h } = await start();
    const b = await h.join({ name: "other-agent", version: "1.0.0" });
    for (const c of [h, b]) await c.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    // One hop (by hwnd) for one, two messages (by title) for the other: both paths keep a copy.
    const mine = (await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" })).structured
      .hash as string;
    const theirs = (await b.call("screenshot_window", { title_contains: "Ruffle", region_name: "stage" }))
      .structured.hash as string;
    expect(theirs).toBe(mine);
    expect(await h.ok("release_access", { hwnd: 1001 })).toMatchObject({ released: true });
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    d.write(scenario([BLOCK]));
    // The released identity's frame is gone: the whole region, as for a frame never seen.
    expect(await changedSince(h, mine)).toEqual([STAGE]);
    // The other identity kept its grant, and its own copy: the change is located.
    expect(local(await changedSince(b, theirs))).toBe(true);
  });

  it("a policy reload drops every kept frame", async () => {
    const { d, h } = await start();
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe"] });
    const since = (await h.call("screenshot_window", { hwnd: 1001, region_name: "stage" })).structured
      .hash as string;
    d.writePolicy(filePolicy({ policy_id: "reloaded" }));
    h.sup.checkPolicyNow();
    d.write(scenario([BLOCK]));
    expect(await changedSince(h, since)).toEqual([STAGE]);
  });
});
