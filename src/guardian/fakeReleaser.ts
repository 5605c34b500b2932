import { readFileSync } from "node:fs";
import { EffectsLog } from "../platforms/fake/effects.js";
import { ScenarioReader } from "../platforms/fake/scenario.js";
import type { HeldEntry } from "../shared/pressLedger.js";
import type { Releaser } from "./guardian.js";

/** Keys and buttons down according to an effects log (the simulated desktop's input state). */
export function downInEffects(lines: ReadonlyArray<Record<string, unknown>>): {
  keys: string[];
  buttons: string[];
} {
  const keys: string[] = [];
  const buttons: string[] = [];
  const drop = (list: string[], v: unknown) => {
    const i = list.lastIndexOf(String(v));
    if (i >= 0) list.splice(i, 1);
  };
  for (const e of lines) {
    if (e.type === "key_down") keys.push(String(e.key));
    if (e.type === "key_up") drop(keys, e.key);
    if (e.type === "button_down") buttons.push(String(e.button));
    if (e.type === "button_up") drop(buttons, e.button);
  }
  return { keys, buttons };
}

/**
 * The simulated desktop's releaser: appends key_up / button_up lines (marked `by: "guardian"`)
 * for what its effects log still shows down. Touches no window, so no scenario fault fires here.
 */
export class FakeReleaser implements Releaser {
  private readonly reader: ScenarioReader;
  private readonly effects: EffectsLog;

  constructor(scenarioPath: string) {
    this.reader = new ScenarioReader(scenarioPath);
    this.effects = new EffectsLog(this.reader);
  }

  private currentLines(): Array<Record<string, unknown>> {
    const path = this.reader.current().effectsLogPath;
    if (path === null) return [];
    try {
      return readFileSync(path, "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    } catch {
      return [];
    }
  }

  async release(entries: readonly HeldEntry[]): Promise<void> {
    let down: ReturnType<typeof downInEffects>;
    try {
      down = downInEffects(this.currentLines());
    } catch {
      return; // no scenario: nothing was emitted
    }
    for (const e of entries) {
      try {
        if (e.kind === "key" && down.keys.includes(e.key)) {
          this.effects.append({ type: "key_up", key: e.key, by: "guardian" });
          down.keys.splice(down.keys.lastIndexOf(e.key), 1);
        } else if (e.kind === "button" && down.buttons.includes(e.button)) {
          this.effects.append({ type: "button_up", button: e.button, by: "guardian" });
          down.buttons.splice(down.buttons.lastIndexOf(e.button), 1);
        }
      } catch {
        // one failed release does not stop the others
      }
    }
  }

  close(): void {}
}
