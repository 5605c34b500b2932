import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkerHost as WorkerHostType } from "../../src/supervisor/hosting/workerHost.js";
import { FakeDesktop, ruffleWindow } from "../support/mcp.js";

/**
 * A caller that waits less than the worker's deadline (health_check, an instance's liveness, the
 * windows shown at consent: 5 s) gives up on its own: the call fails with worker_timeout, the
 * worker is asked to cancel, and it is not torn down. Before, such a call's short wait was the
 * worker's deadline, and a worker that was slow for everyone (behind another program's grab of
 * the X server, test/x11/health-grab.test.ts) was killed with every call in flight there. Here
 * the simulated desktop's listing takes 1.5 s (listing_delay_ms) in a real capture worker thread.
 */

const WORKER_HOST = pathToFileURL(
  resolve(import.meta.dirname, "../../dist/supervisor/hosting/workerHost.js"),
).href;
const SLOW_MS = 1500;
const RESTART_BACKOFF_MS = 3000;

describe("a caller's shorter wait does not tear the worker down", () => {
  const desktop = new FakeDesktop({
    session: 1,
    foreground: 1001,
    windows: [ruffleWindow()],
    listing_delay_ms: SLOW_MS,
  });
  let host: WorkerHostType;

  beforeAll(async () => {
    const { WorkerHost } = (await import(WORKER_HOST)) as { WorkerHost: typeof WorkerHostType };
    host = new WorkerHost({
      init: { kind: "capture", platform: "fake", fake_desktop: desktop.path, log_level: "silent" },
      isolation: "thread",
      logger: pino({ level: "silent" }),
      // A restart after a teardown waits 3 s: the last case waits less than that.
      backoffBaseMs: RESTART_BACKOFF_MS,
      backoffMaxMs: RESTART_BACKOFF_MS,
    });
    await host.call("ping", {}, { deadlineMs: 30_000 });
  }, 60_000);

  afterAll(async () => {
    await host?.close();
  });

  it("waitMs: worker_timeout for that caller, the worker and another call in flight live on", async () => {
    const other = host.call("desktop.list", {}, { deadlineMs: 20_000 });
    const impatient = host.call("desktop.list", {}, { deadlineMs: 20_000, waitMs: 200 });
    await expect(impatient).rejects.toMatchObject({ code: "worker_timeout" });
    expect(host.stats()).toMatchObject({ state: "ready", timeouts: 0, restarts: 0 });
    const listed = await other;
    expect(listed.windows.map((w) => w.hwnd)).toContain("1001");
    expect(host.stats()).toMatchObject({ state: "ready", timeouts: 0, restarts: 0, crashes: 0 });
  }, 30_000);

  it("the same short wait as the deadline, as before: the worker is torn down, and the call in flight fails with it", async () => {
    const other = host.call("desktop.list", {}, { deadlineMs: 20_000 }).catch((e: unknown) => e);
    const short = host.call("desktop.list", {}, { deadlineMs: 200 });
    await expect(short).rejects.toMatchObject({ code: "worker_timeout" });
    expect(await other).toMatchObject({ code: "worker_timeout" });
    expect(host.stats().timeouts).toBe(1);
  }, 30_000);

  it("the wait covers the worker's start too: worker_timeout within it, and the start goes on for the next call", async () => {
    // Torn down by the case before: the next start waits out its backoff.
    const impatient = host.call("ping", {}, { deadlineMs: 20_000, waitMs: 200 });
    await expect(impatient).rejects.toMatchObject({ code: "worker_timeout" });
    expect(host.stats().state).not.toBe("ready");
    await host.call("ping", {}, { deadlineMs: 20_000 });
    expect(host.stats()).toMatchObject({ state: "ready", timeouts: 1 });
  }, 30_000);
});
