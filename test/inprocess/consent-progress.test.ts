import { describe, expect, it } from "vitest";
import { closeServersAfterEach, Desk, serve, win } from "../support/consent.js";

// While request_access waits for the person at the dialog, a client that sent a progressToken
// gets notifications/progress with a fixed message; an answer kept from before sends none.

closeServersAfterEach();

interface Progress {
  progress: number;
  total?: number;
  message?: string;
}

describe("progress while the consent dialog is open", () => {
  it("reports 'waiting for a person' until the answer, then nothing for a kept answer", async () => {
    // The dialog stays up 3 s: the first report comes after 0.25 s, then one a second.
    const desk = new Desk([win(1)], { answer: "approve", delay_ms: 3000 });
    const h = await serve(desk, { env: { UIINSPECT_CONSENT_TIMEOUT_MS: "60000" } });
    const seen: Progress[] = [];
    const r = await h.call("request_access", { hwnd: 1001 }, { onprogress: (p) => seen.push(p as Progress) });
    expect(r.structured).toMatchObject({ decision: "approved", source: "dialog" });
    expect(seen.length).toBeGreaterThan(0);
    for (const p of seen) {
      expect(p.message).toBe("Waiting for a person to answer the access dialog");
      expect(p.total).toBe(60000);
      expect(p.progress).toBeGreaterThanOrEqual(0);
      expect(p.progress).toBeLessThanOrEqual(60000);
    }
    // Progress never goes backwards.
    expect(seen.map((p) => p.progress)).toEqual([...seen.map((p) => p.progress)].sort((a, b) => a - b));

    const again: Progress[] = [];
    const cached = await h.call(
      "request_access",
      { hwnd: 1001 },
      { onprogress: (p) => again.push(p as Progress) },
    );
    expect(cached.structured).toMatchObject({ decision: "approved", source: "cached" });
    expect(again).toEqual([]);
  });
});
