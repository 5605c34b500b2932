import { afterEach, describe, expect, it, vi } from "vitest";
import type { OpResult } from "../../src/shared/protocol.js";
import { audit, closeServersAfterEach, Desk, serve, win } from "../support/consent.js";
import type { InProcessHarness } from "../support/inProcess.js";

/**
 * screenshot_window by hwnd and a named region is one capture-worker message (capture.window):
 * the worker lists, checks, reads, checks again and encodes, and the supervisor authorizes the
 * process instance that listing shows before the frame is looked at. Here the worker's answers
 * are watched on their way to the chain: a refused identity must leave no image in the result,
 * nothing about the frame in the audit, and the frame itself zeroed.
 */

closeServersAfterEach();
afterEach(() => {
  vi.restoreAllMocks();
});

const shot = { hwnd: 1001, region_name: "stage" };

type WindowReply = OpResult<"capture.window">;

/** The capture worker's capture.window answers (the same objects the chain holds, in process). */
function watchReplies(h: InProcessHarness): { replies: WindowReply[]; ops: string[] } {
  const capture = h.sup.workers.capture;
  const real = capture.call.bind(capture);
  const replies: WindowReply[] = [];
  const ops: string[] = [];
  vi.spyOn(capture, "call").mockImplementation(((op, args, opts) => {
    ops.push(op);
    const p = real(op, args, opts);
    if (op === "capture.window") void p.then((r) => replies.push(r as WindowReply)).catch(() => undefined);
    return p;
  }) as typeof capture.call);
  return { replies, ops };
}

function png(r: WindowReply | undefined): Uint8Array {
  const bytes = r?.shot?.png;
  if (!bytes) throw new Error("the worker produced no image");
  return bytes;
}

const allZero = (b: Uint8Array) => b.every((v) => v === 0);

describe("screenshot_window in one worker message", () => {
  it("a granted shot is one message and its image arrives", async () => {
    const desk = new Desk([win(1)]);
    const h = (await serve(desk)) as InProcessHarness;
    await h.ok("request_access", { hwnd: 1001 });
    const { replies, ops } = watchReplies(h);
    const r = await h.call("screenshot_window", shot);
    expect(r.isError).toBe(false);
    expect(ops).toEqual(["capture.window"]);
    const image = r.content.find((c) => c.type === "image");
    expect(image).toBeDefined();
    expect(replies).toHaveLength(1);
    expect(r.structured.png_bytes).toBe(png(replies[0]).byteLength);
  });

  it("another process instance behind the granted window: target_changed, no pixel released, the frame zeroed", async () => {
    const desk = new Desk([win(1)]);
    const h = (await serve(desk)) as InProcessHarness;
    await h.ok("request_access", { hwnd: 1001 });
    // Same hwnd, same pid, another process start: the worker reports the new instance.
    desk.reusePid(1001);
    const { replies } = watchReplies(h);
    const r = await h.call("screenshot_window", shot);
    expect(r.code).toBe("target_changed");
    expect(r.content.some((c) => c.type === "image")).toBe(false);
    expect(JSON.stringify(r.structured)).not.toMatch(/png_bytes|hash/);
    // The worker did read and encode it (one hop); nothing of it survives the refusal.
    expect(replies).toHaveLength(1);
    const bytes = png(replies[0]);
    expect(bytes.byteLength).toBeGreaterThan(0);
    expect(allZero(bytes)).toBe(true);
    const ev = (await audit(h)).find((e) => e.tool === "screenshot_window");
    expect(ev).toMatchObject({ reason: "target_changed" });
    expect(ev?.outcome).not.toBe("allow");
    expect(JSON.stringify(ev)).not.toMatch(/png_bytes|pixels/);
  });

  it("a window never granted: consent_required, the frame zeroed, the budget untouched", async () => {
    const desk = new Desk([win(1), win(2)]);
    const h = (await serve(desk)) as InProcessHarness;
    await h.ok("request_access", { hwnd: 1001 });
    const { replies } = watchReplies(h);
    const r = await h.call("screenshot_window", { hwnd: 1002, region_name: "stage" });
    expect(r.code).toBe("consent_required");
    expect(r.content.some((c) => c.type === "image")).toBe(false);
    expect(replies).toHaveLength(1);
    expect(allZero(png(replies[0]))).toBe(true);
    const apps = (await h.ok("get_rate_limit_state")).applications as Array<{
      hwnd: string;
      screenshot_pixels: { used: number };
    }>;
    expect(apps.find((a) => a.hwnd === "1002")?.screenshot_pixels.used ?? 0).toBe(0);
  });

  it("a check's refusal is answered only after authorization: an ungranted covered window says consent_required", async () => {
    const cover = win(3, { rect: [0, 0, 400, 320], z: 0, process_path: "C:\\Tools\\cover.exe" });
    const desk = new Desk([win(1), cover]);
    const h = (await serve(desk)) as InProcessHarness;
    const { replies } = watchReplies(h);
    expect((await h.call("screenshot_window", shot)).code).toBe("consent_required");
    expect(replies[0]?.refused?.code).toBe("occluded");
    await h.ok("request_access", { hwnd: 1001 });
    expect((await h.call("screenshot_window", shot)).code).toBe("occluded");
  });

  it("a title, or the env crops, take the chain's own listing first (two messages)", async () => {
    const desk = new Desk([win(1)]);
    const h = (await serve(desk)) as InProcessHarness;
    await h.ok("request_access", { hwnd: 1001 });
    const { ops } = watchReplies(h);
    expect(
      (await h.call("screenshot_window", { title_contains: "game1", region_name: "stage" })).isError,
    ).toBe(false);
    expect(ops).toEqual(["desktop.list", "capture.region"]);
  });
});
