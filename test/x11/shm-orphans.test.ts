import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform, WindowInfo } from "../../src/shared/platform.js";
import type { WorkerInit } from "../../src/shared/protocol.js";
import type { WorkerHost as WorkerHostType } from "../../src/supervisor/hosting/workerHost.js";
import { startApp, startSession, waitFor, waitForWindow, type X11Session, x11CliSuite } from "./support.js";

/** This process's System V shared-memory mappings (start addresses) as the kernel lists them. */
function sysvMappings(): string[] {
  return readFileSync("/proc/self/maps", "utf8")
    .split("\n")
    .filter((l) => /\s\/SYSV[0-9a-f]{8}/.test(l))
    .map((l) => l.split("-")[0] ?? "");
}

/**
 * A capture worker thread attaches one MIT-SHM segment for its screen reads. Terminated (a
 * teardown, a shutdown), it runs none of its clean-up and the mapping stays in the process: the
 * host hands it to the next capture worker, which detaches it (src/platforms/x11/shmOrphans.ts).
 * Real worker threads of the built code, in this process, so /proc/self/maps is theirs.
 */
describe.skipIf(!x11CliSuite("shm-orphans"))(
  "x11 capture worker threads leave no MIT-SHM segment behind",
  () => {
    let session: X11Session;
    let p: Platform;
    let win: WindowInfo;
    let WorkerHost: typeof WorkerHostType;
    const init: WorkerInit = { kind: "capture", platform: "x11", fake_desktop: null, log_level: "silent" };
    const logger = pino({ level: "silent" });

    beforeAll(async () => {
      session = startSession();
      const { createX11Platform } = await import("../../src/platforms/x11/index.js");
      p = await createX11Platform({ workerKind: "other" });
      startApp("zenity", ["--entry", "--title=uix shm entry", "--text=Type here"]);
      win = await waitForWindow(p, "uix shm entry");
      const url = pathToFileURL(
        resolve(import.meta.dirname, "../../dist/supervisor/hosting/workerHost.js"),
      ).href;
      ({ WorkerHost } = (await import(url)) as { WorkerHost: typeof WorkerHostType });
    }, 60_000);

    afterAll(async () => {
      await p?.dispose();
      session?.stop();
    });

    const shot = (host: WorkerHostType) =>
      host.call(
        "capture.region",
        {
          target: {
            hwnd: win.hwnd,
            instance: win.instance ?? { pid: 0, start_time: "", exe_path: "", session: "" },
          },
          region: [0, 0, 60, 40],
          masks: [],
          grid_spacing: null,
          output: "sha256",
          max_png_bytes: 1 << 20,
          compression_level: 2,
          listing: null,
        },
        { deadlineMs: 20_000 },
      );

    it("a terminated worker's segment stays mapped until the next worker detaches it", async () => {
      const before = new Set(sysvMappings());
      const first = new WorkerHost({ init, isolation: "thread", logger });
      await shot(first);
      const mine = sysvMappings().filter((a) => !before.has(a));
      expect(mine).toHaveLength(1);
      await first.close();
      // The thread is gone; its mapping is not (the leak this fixes, as it was).
      expect(sysvMappings()).toContain(mine[0]);

      const second = new WorkerHost({ init, isolation: "thread", logger });
      await second.call("ping", {}, { deadlineMs: 20_000 });
      await waitFor("the orphan detached", async () =>
        sysvMappings().includes(mine[0] ?? "") ? null : true,
      );
      // The second worker's own segment, and nothing else, after a shot of its own.
      await shot(second);
      const now = sysvMappings().filter((a) => !before.has(a));
      expect(now).toHaveLength(1);
      await second.close();

      // Handed over once: a third worker gets the second's segment only.
      const third = new WorkerHost({ init, isolation: "thread", logger });
      await third.call("ping", {}, { deadlineMs: 20_000 });
      await waitFor("the second orphan detached", async () =>
        sysvMappings().some((a) => !before.has(a)) ? null : true,
      );
      await third.close();
    }, 90_000);
  },
);
