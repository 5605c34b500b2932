import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { FaultHandler } from "../../src/platforms/fake/faults.js";
import { createFakePlatform, sampleScenario, writeScenarioFile } from "../../src/platforms/fake/index.js";
import type { ScenarioInput } from "../../src/platforms/fake/scenario.js";
import { scratchDir } from "../support/scratch.js";

export interface Fixture {
  dir: string;
  file: string;
  scenario: ScenarioInput;
  write(s: ScenarioInput): void;
  effects(): Record<string, unknown>[];
  cleanup(): void;
}

export function fixture(s?: (dir: string) => ScenarioInput): Fixture {
  const dir = scratchDir("fake");
  const file = join(dir, "desktop.json");
  const scenario = (s ?? sampleScenario)(dir);
  writeScenarioFile(file, scenario);
  return {
    dir,
    file,
    scenario,
    write: (next) => writeScenarioFile(file, next),
    effects: () => {
      let text = "";
      try {
        text = readFileSync(join(dir, "effects.jsonl"), "utf8");
      } catch {
        return [];
      }
      return text
        .split("\n")
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export function platform(
  f: Fixture,
  workerKind: "capture" | "input" | "uia" | "other" = "other",
  faultHandler?: FaultHandler,
) {
  return createFakePlatform({ scenarioPath: f.file, workerKind, faultHandler });
}

/** A deep copy of the sample, to edit. */
export function clone(s: ScenarioInput): ScenarioInput {
  return JSON.parse(JSON.stringify(s)) as ScenarioInput;
}
