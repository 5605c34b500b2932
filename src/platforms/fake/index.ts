import type { Platform } from "../../shared/platform.js";
import { FakeAccessibility } from "./a11y.js";
import { FakeContext } from "./context.js";
import { FakeCapture, FakeDesktop } from "./desktop.js";
import type { FaultHandler, FaultWorkerKind } from "./faults.js";
import { FakeInput } from "./input.js";

export { sampleScenario } from "./sample.js";
export {
  type LoadedScenario,
  parseScenario,
  type Scenario,
  type ScenarioInput,
  ScenarioReader,
  ScenarioSchema,
  writeScenarioFile,
} from "./scenario.js";

export interface FakePlatformOptions {
  /** The scenario file (docs/spec.md §10), re-read whenever it changes. */
  scenarioPath: string;
  /** Which worker runs this instance: decides which of a window's `faults` apply. */
  workerKind: FaultWorkerKind;
  /**
   * Tests of the fault targeting only: called instead of really throwing/exiting/hanging.
   * Never set in production code.
   */
  faultHandler?: FaultHandler;
}

/**
 * The simulated desktop (UIINSPECT_PLATFORM=fake). One instance per worker; instances share
 * nothing but the scenario file and the effects log.
 *
 * Faults (`faults[workerKind]` of a window) fire when a method touches that window:
 * listWindows (every window), isInstanceAlive (the windows of that pid),
 * getWindow/restoreWindow/activateWindow/closeWindow (the named window), captureScreen (every
 * drawn window meeting the rect), moveTo (the window under the point), buttons and wheel (the
 * window under the cursor), keys (the foreground window), typeText (the named window),
 * openSession and every session call (the session's window). virtualScreen and health never
 * fault. Only the kind of this instance counts: an "input" fault never fires in the capture
 * worker.
 */
export function createFakePlatform(opts: FakePlatformOptions): Platform {
  const ctx = new FakeContext(opts.scenarioPath, opts.workerKind, opts.faultHandler);
  const desktop = new FakeDesktop(ctx);
  return {
    desktop,
    capture: new FakeCapture(ctx),
    input: new FakeInput(ctx),
    accessibility: new FakeAccessibility(ctx),
    // Nothing is held between calls (the scenario is read per call); sessions end on their own.
    dispose: () => desktop.dispose(),
  };
}
