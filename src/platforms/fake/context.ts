import { uiError } from "../../shared/errors.js";
import type { ProcessInstance } from "../../shared/identity.js";
import type { WindowInfo } from "../../shared/platform.js";
import { EffectsLog } from "./effects.js";
import { type FaultHandler, type FaultWorkerKind, faultFor, triggerFault } from "./faults.js";
import { stackingOrder } from "./render.js";
import { type LoadedScenario, type Scenario, ScenarioReader, type ScenarioWindow } from "./scenario.js";

/** Shared state of one fake platform instance (one per worker). */
export class FakeContext {
  readonly reader: ScenarioReader;
  readonly effects: EffectsLog;

  constructor(
    scenarioPath: string,
    readonly workerKind: FaultWorkerKind,
    private readonly onFault: FaultHandler = triggerFault,
  ) {
    this.reader = new ScenarioReader(scenarioPath);
    this.effects = new EffectsLog(this.reader);
  }

  loaded(): LoadedScenario {
    return this.reader.current();
  }

  scenario(): Scenario {
    return this.reader.current().scenario;
  }

  /** Suffers the window's fault for this worker kind, if it has one (never returns then). */
  async touch(w: ScenarioWindow | null | undefined): Promise<void> {
    const kind = faultFor(w, this.workerKind);
    if (kind !== null) await this.onFault(kind);
  }

  async touchAll(ws: readonly ScenarioWindow[]): Promise<void> {
    for (const w of ws) await this.touch(w);
  }
}

/** The hwnd of the port (decimal string) as the file's number, or null when it is not one. */
export function hwndNumber(hwnd: string): number | null {
  if (!/^\d{1,15}$/.test(hwnd)) return null;
  return Number(hwnd);
}

export function findWindow(s: Scenario, hwnd: string): ScenarioWindow | null {
  const n = hwndNumber(hwnd);
  if (n === null) return null;
  return s.windows.find((w) => w.hwnd === n) ?? null;
}

export function instanceOf(s: Scenario, w: ScenarioWindow): ProcessInstance {
  return {
    pid: w.pid,
    start_time: new Date(w.process_start).toISOString(),
    exe_path: w.process_path,
    session: String(s.session),
  };
}

/** WindowInfo of every window, topmost first; `z` is the position in that order. */
export function windowInfos(s: Scenario): WindowInfo[] {
  return stackingOrder(s).map((w, z) => ({
    hwnd: String(w.hwnd),
    title: w.title,
    window_class: w.class,
    pid: w.pid,
    instance: instanceOf(s, w),
    rect: [w.rect[0], w.rect[1], w.rect[2], w.rect[3]],
    visible: w.visible,
    iconic: w.iconic,
    foreground: s.foreground === w.hwnd,
    on_top: w.on_top ?? false,
    z,
  }));
}

export function requireWindow(s: Scenario, hwnd: string): ScenarioWindow {
  const w = findWindow(s, hwnd);
  if (w === null) throw uiError("target_gone");
  return w;
}
