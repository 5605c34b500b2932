import { describe, expect, it } from "vitest";
import { FakeDesktop, filePolicy, ruffleWindow } from "../support/mcp.js";
import { closeServersAfterEach, serveFake } from "../support/servers.js";

closeServersAfterEach();

describe("UIINSPECT_WORKER_ISOLATION=process", () => {
  it("a native segfault kills only that worker process; it is restarted and the server keeps serving", async () => {
    const faulty = ruffleWindow({
      hwnd: 2001,
      title: "Ruffle - faulty.swf",
      pid: 9001,
      z: 1,
      rect: [1000, 100, 1400, 400],
      faults: { capture: "segv" },
    });
    const d = new FakeDesktop({
      session: 1,
      foreground: 1001,
      windows: [ruffleWindow()],
      consent: { answer: "approve" },
    });
    const h = await serveFake(d, {
      via: "stdio",
      policy: filePolicy(),
      env: { UIINSPECT_WORKER_ISOLATION: "process" },
    });
    await h.ok("request_access", { hwnd: 1001 });
    const before = (await h.ok("health_check")).workers as Array<{ kind: string; isolation: string }>;
    expect(before.every((w) => w.isolation === "process")).toBe(true);

    d.write({
      session: 1,
      foreground: 1001,
      windows: [ruffleWindow(), faulty],
      consent: { answer: "approve" },
    });
    const r = await h.call("list_windows");
    expect(r.code).toBe("worker_crashed");

    // The other workers never noticed; the input worker still acts on the granted window.
    d.write({ session: 1, foreground: 1001, windows: [ruffleWindow()], consent: { answer: "approve" } });
    expect((await h.ok("click_window", { hwnd: 1001, x: 20, y: 20 })).correlation_id).toMatch(
      /^[0-9a-f]{12}$/,
    );
    expect((await h.ok("list_windows")).windows).toHaveLength(1);
    const after = (await h.ok("health_check")).workers as Array<{
      kind: string;
      crashes: number;
      restarts: number;
    }>;
    expect(after.find((w) => w.kind === "capture")).toMatchObject({ crashes: 1 });
    expect(after.find((w) => w.kind === "input")).toMatchObject({ crashes: 0 });
  });

  it("in thread mode the same fault would end the whole server (why process isolation exists)", async () => {
    const d = new FakeDesktop({
      session: 1,
      foreground: 1001,
      windows: [ruffleWindow({ faults: { capture: "segv" } })],
      consent: { answer: "approve" },
    });
    const h = await serveFake(d, { via: "stdio", policy: filePolicy() });
    await expect(h.call("list_windows")).rejects.toThrow();
  });
});
