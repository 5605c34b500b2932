import { describe, expect, it } from "vitest";
import { closeServersAfterEach, Desk, IN_STAGE, win } from "../support/consent.js";
import { startInProcess } from "../support/inProcess.js";

describe("in-process harness", () => {
  closeServersAfterEach();
  it("lists, grants and clicks through the inline workers", async () => {
    const desk = new Desk([win(1)]);
    const h = await startInProcess({ platform: "fake", scenario: desk.fake, policy: desk.policy() });
    try {
      const list = await h.ok("list_windows");
      expect(list).toBeTruthy();
      expect(await h.ok("request_access", { hwnd: 1001 })).toMatchObject({ decision: "approved" });
      await h.ok("click_window", { hwnd: 1001, ...IN_STAGE });
      expect(desk.effects().length).toBeGreaterThan(0);
    } finally {
      await h.close();
    }
  });
});
