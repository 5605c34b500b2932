import type { Platform } from "../shared/platform.js";
import type { PressLedger } from "../shared/pressLedger.js";
import type { WorkerInit } from "../shared/protocol.js";
import { SETTINGS } from "../shared/settings.js";
import { readSetting } from "../shared/settingsReader.js";

/**
 * Loads the platform implementation a worker runs on. Imported lazily so that the
 * native bindings of one platform are never loaded on another (and never on the
 * supervisor thread, which does not import this module). `ledger`: where the X11 port records
 * the keycodes it presses and remaps while typing text (keys and buttons are recorded above it).
 */
export async function loadPlatform(init: WorkerInit, ledger?: PressLedger): Promise<Platform> {
  switch (init.platform) {
    case "fake": {
      if (!init.fake_desktop) throw new Error("UIINSPECT_FAKE_DESKTOP is not set");
      const { createFakePlatform } = await import("./fake/index.js");
      return createFakePlatform({ scenarioPath: init.fake_desktop, workerKind: init.kind });
    }
    case "x11": {
      const { createX11Platform } = await import("./x11/index.js");
      return createX11Platform({
        workerKind: init.kind,
        ledger,
        // A test switch, read here only: the X11 input checks as without libX11-xcb.
        withoutXlibXcb: readSetting(process.env, SETTINGS.x11TestWithoutXlibXcb) === "1",
        ...(init.orphan_segments ? { orphanSegments: init.orphan_segments } : {}),
      });
    }
    case "wayland": {
      const { createWaylandPlatform } = await import("./wayland/index.js");
      return createWaylandPlatform({ workerKind: init.kind });
    }
    case "win32": {
      const { createWin32Platform } = await import("./win32/index.js");
      return createWin32Platform({ workerKind: init.kind });
    }
  }
}
