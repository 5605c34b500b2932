import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { ScenarioReader } from "./scenario.js";

/** One line of the effects log, before `seq` and `t` are added. */
export type Effect =
  | { type: "move"; x: number; y: number }
  | { type: "button_down"; button: string }
  /** `by: "guardian"`: released by the release guardian after the worker that pressed it died. */
  | { type: "button_up"; button: string; by?: "guardian" }
  | { type: "wheel"; notches: number }
  | { type: "key_down"; key: string }
  | { type: "key_up"; key: string; by?: "guardian" }
  | { type: "text"; hwnd: string; text: string; mode: string }
  | { type: "restore" | "activate" | "close"; hwnd: string }
  | {
      type: "a11y";
      hwnd: string;
      action: string;
      automation_id: string | null;
      value?: string;
      /** select_option: the automation_id of the option chosen by name. */
      option_automation_id?: string | null;
    };

/**
 * The simulated screen's record of what was emitted: one JSON line per effect, appended
 * synchronously (a test reading the file right after a call sees everything, in order).
 * `seq` increases per platform instance (each worker has its own); file order is the global order.
 */
export class EffectsLog {
  private seq = 0;
  private readonly made = new Set<string>();

  constructor(private readonly reader: ScenarioReader) {}

  append(effect: Effect): void {
    const path = this.reader.current().effectsLogPath;
    if (path === null) return;
    if (!this.made.has(path)) {
      mkdirSync(dirname(path), { recursive: true });
      this.made.add(path);
    }
    this.seq += 1;
    appendFileSync(path, `${JSON.stringify({ ...effect, seq: this.seq, t: Date.now() })}\n`);
  }
}
