import { join } from "node:path";
import type { ScenarioInput, ScenarioNode, ScenarioWindow } from "./scenario.js";

export const RUFFLE_PATH = "C:\\Program Files\\ruffle\\bin\\ruffle.exe";
export const NOTEPAD_PATH = "C:\\Windows\\System32\\notepad.exe";
export const KEEPASS_PATH = "C:\\Program Files\\KeePass Password Safe 2\\KeePass.exe";

/** A control of the scripted trees: its role, name, automation id, rect and patterns. */
function control(
  role: string,
  name: string,
  automationId: string,
  rect: NonNullable<ScenarioNode["rect"]>,
  patterns: NonNullable<ScenarioNode["patterns"]>,
  more: Partial<ScenarioNode> = {},
): ScenarioNode {
  return { role, name, automation_id: automationId, rect, patterns, ...more };
}

/** Level n of the game's list, 25 px a row from the list's top. */
function level(n: number, more: Partial<ScenarioNode> = {}): ScenarioNode {
  const top = 230 + (n - 1) * 25;
  return control("list_item", `Level ${n}`, `level-${n}`, [20, top, 220, top + 25], ["selection_item"], more);
}

/** The game's accessibility tree: a button, a password field, a checkbox, a combo box, a list. */
function ruffleTree(): ScenarioNode {
  return {
    role: "window",
    name: "Ruffle",
    class_name: "RuffleWindow",
    patterns: ["window"],
    children: [
      control("button", "Play", "play", [20, 60, 120, 90], ["invoke"]),
      control("edit", "Password", "password", [20, 100, 220, 130], ["value"], { is_password: true }),
      control("checkbox", "Sound", "sound", [20, 140, 40, 160], ["toggle"]),
      control("combobox", "Quality", "quality", [20, 180, 220, 210], ["expand_collapse", "value"]),
      control("list", "Levels", "levels", [20, 230, 220, 330], ["selection"], {
        children: [level(1), level(2), level(3, { enabled: false })],
      }),
    ],
  };
}

/** The game: foreground, topmost, with a scripted accessibility tree. */
function ruffle(): ScenarioWindow {
  return {
    hwnd: 1001,
    title: "Ruffle - game.swf",
    class: "RuffleWindow",
    pid: 4242,
    process_start: "2026-11-30T08:00:00Z",
    process_path: RUFFLE_PATH,
    rect: [100, 100, 924, 740],
    visible: true,
    iconic: false,
    z: 0,
    fill: "#3366cc",
    paint: [
      { rect: [0, 0, 824, 32], fill: "#1a1a1a" },
      { rect: [20, 60, 120, 90], fill: "#33aa33" },
      { rect: [20, 100, 220, 130], fill: "#ffffff" },
      { rect: [20, 140, 40, 160], fill: "#eeeeee" },
      { rect: [20, 180, 220, 210], fill: "#dddddd" },
      { rect: [20, 230, 220, 330], fill: "#f0f0f0" },
      { rect: [20, 230, 220, 255], fill: "#99bbff" },
    ],
    tree: ruffleTree(),
  };
}

/** The editor, partly under Ruffle's right edge. */
function notepad(): ScenarioWindow {
  return {
    hwnd: 2002,
    title: "Notepad - notes.txt",
    class: "Notepad",
    pid: 5150,
    process_start: "2026-11-30T08:05:00.250Z",
    process_path: NOTEPAD_PATH,
    rect: [900, 150, 1600, 800],
    visible: true,
    iconic: false,
    z: 1,
    fill: "#ffffff",
    paint: [
      { rect: [0, 0, 700, 32], fill: "#f3f3f3" },
      { rect: [0, 32, 700, 56], fill: "#e8e8e8" },
    ],
    tree: {
      role: "window",
      name: "Notepad",
      class_name: "Notepad",
      children: [
        {
          role: "menu_bar",
          name: "Application",
          automation_id: "menubar",
          rect: [0, 32, 700, 56],
          children: [control("menu_item", "File", "file", [4, 32, 44, 56], ["expand_collapse"])],
        },
        control("document", "Text editor", "15", [0, 56, 700, 650], ["value", "text"], {
          class_name: "Edit",
          focused: true,
        }),
      ],
    },
  };
}

/** A password manager that a policy for the first two does not allow. */
function keepass(): ScenarioWindow {
  return {
    hwnd: 3003,
    title: "Passwords.kdbx - KeePass",
    class: "WindowsForms10.Window.8.app.0.1",
    pid: 6066,
    process_start: "2026-11-30T07:55:00Z",
    process_path: KEEPASS_PATH,
    rect: [600, 500, 1300, 1000],
    visible: true,
    iconic: false,
    z: 2,
    fill: "#f5f5dc",
    tree: {
      role: "window",
      name: "KeePass",
      children: [{ role: "edit", name: "Master password", is_password: true, patterns: ["value"] }],
    },
  };
}

/**
 * A demo desktop: "Ruffle - game.swf" (foreground, topmost, with a scripted accessibility tree),
 * "Notepad - notes.txt" (partly under Ruffle's right edge) and a password manager that a policy
 * for the first two does not allow. Logs go to `dir` (effects.jsonl, prompts.jsonl).
 */
export function sampleScenario(dir: string): ScenarioInput {
  return {
    session: 1,
    foreground: 1001,
    background: "#204060",
    virtual_screen: [0, 0, 1920, 1080],
    windows: [ruffle(), notepad(), keepass()],
    consent: { answer: "approve", delay_ms: 0, log: join(dir, "prompts.jsonl") },
    effects_log: join(dir, "effects.jsonl"),
  };
}
