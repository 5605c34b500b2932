import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createFakePlatform, type ScenarioInput, writeScenarioFile } from "../../src/platforms/fake/index.js";
import type { ProcessInstance } from "../../src/shared/identity.js";
import type { Platform } from "../../src/shared/platform.js";
import { OPS, type OpName, type OpResult, type TargetExpectation } from "../../src/shared/protocol.js";
import type { HandlerContext, HandlerTable } from "../../src/workers/handlers.js";
import { createUiaRuntime, type UiaOptions, type UiaRuntime } from "../../src/workers/uia/handlers.js";
import { scratchDir } from "../support/scratch.js";

export const CANARY = "CANARY-7f3a9c-hunter2";
export const RUFFLE = "C:\\Program Files\\ruffle\\bin\\ruffle.exe";
export const NOTEPAD = "C:\\Windows\\System32\\notepad.exe";
export const START = "2026-11-30T08:00:00.000Z";

type WindowInput = ScenarioInput["windows"][number];
type TreeInput = NonNullable<WindowInput["tree"]>;

export function ruffleTree(): TreeInput {
  return {
    role: "window",
    name: "Ruffle",
    class_name: "RuffleWindow",
    rect: [0, 0, 824, 640],
    patterns: ["window"],
    children: [
      { role: "button", name: "Play", automation_id: "play", rect: [20, 60, 120, 90], patterns: ["invoke"] },
      {
        role: "edit",
        name: CANARY,
        automation_id: "password",
        is_password: true,
        rect: [20, 100, 220, 130],
        patterns: ["value"],
      },
      {
        role: "checkbox",
        name: "Sound",
        automation_id: "sound",
        rect: [20, 140, 40, 160],
        patterns: ["toggle"],
      },
      { role: "text", name: "Score: 10", rect: [300, 60, 400, 80] },
      {
        role: "list",
        name: "Levels",
        automation_id: "levels",
        rect: [20, 230, 220, 330],
        children: [
          { role: "list_item", name: "Level 1", rect: [20, 230, 220, 255], patterns: ["selection_item"] },
          {
            role: "list_item",
            name: "Level 2",
            rect: [20, 255, 220, 280],
            patterns: ["selection_item"],
            children: [
              { role: "button", name: "Deep play", automation_id: "deep", rect: [30, 260, 60, 275] },
            ],
          },
        ],
      },
      { role: "button", name: "Hidden", automation_id: "hidden", rect: [20, 700, 120, 720], offscreen: true },
      {
        role: "button",
        name: "Outside",
        automation_id: "outside",
        rect: [900, 60, 960, 90],
        patterns: ["invoke"],
      },
      { role: "button", name: "Off", automation_id: "off", rect: [140, 60, 200, 90], enabled: false },
    ],
  };
}

export function ruffle(extra: Partial<WindowInput> = {}): WindowInput {
  return {
    hwnd: 1001,
    title: "Ruffle - game.swf",
    class: "RuffleWindow",
    pid: 4242,
    process_start: START,
    process_path: RUFFLE,
    rect: [100, 100, 924, 740],
    visible: true,
    iconic: false,
    z: 0,
    fill: "#3366cc",
    tree: ruffleTree(),
    ...extra,
  };
}

export function notepad(extra: Partial<WindowInput> = {}): WindowInput {
  return {
    hwnd: 2002,
    title: "Notepad - notes.txt",
    class: "Notepad",
    pid: 5151,
    process_start: START,
    process_path: NOTEPAD,
    rect: [600, 200, 1400, 800],
    visible: true,
    iconic: false,
    z: 1,
    fill: "#ffffff",
    tree: {
      role: "window",
      name: "Notepad",
      children: [
        {
          role: "menu_bar",
          name: "Menu",
          children: [{ role: "menu_item", name: "File", patterns: ["expand_collapse"] }],
        },
        { role: "document", name: "Text editor", automation_id: "15", rect: [0, 50, 800, 600] },
      ],
    },
    ...extra,
  };
}

export function instanceFor(w: WindowInput): ProcessInstance {
  return {
    pid: w.pid,
    start_time: new Date(w.process_start).toISOString(),
    exe_path: w.process_path,
    session: "1",
  };
}

export function targetFor(w: WindowInput): TargetExpectation {
  return { hwnd: String(w.hwnd), instance: instanceFor(w) };
}

/** A fake desktop in a temp dir, a uia runtime on it, and handler calls as the worker makes them. */
export class Harness {
  readonly dir: string;
  readonly scenarioPath: string;
  readonly effectsPath: string;
  readonly platform: Platform;
  readonly runtime: UiaRuntime;

  constructor(windows: WindowInput[], opts: UiaOptions = {}) {
    this.dir = scratchDir("a11y");
    this.scenarioPath = join(this.dir, "desktop.json");
    this.effectsPath = join(this.dir, "effects.jsonl");
    this.write(windows);
    this.platform = createFakePlatform({ scenarioPath: this.scenarioPath, workerKind: "uia" });
    this.runtime = createUiaRuntime({ env: () => ({}), ...opts });
  }

  write(windows: WindowInput[], foreground: number | null = 1001): void {
    writeScenarioFile(this.scenarioPath, { session: 1, foreground, windows, effects_log: "effects.jsonl" });
  }

  ctx(signal: AbortSignal = new AbortController().signal, budgetMs = 10_000): HandlerContext {
    return {
      signal,
      deadline: Date.now() + budgetMs,
      init: { kind: "uia", platform: "fake", fake_desktop: this.scenarioPath, log_level: "silent" },
      platform: this.platform,
    };
  }

  /** Parses args with the protocol schema (as the worker does), runs the handler, checks the result schema. */
  async call<K extends OpName>(op: K, args: unknown, ctx: HandlerContext = this.ctx()): Promise<OpResult<K>> {
    const parsed = OPS[op].args.parse(args);
    const table: HandlerTable = this.runtime.handlers;
    const h = table[op] as unknown as (a: unknown, c: HandlerContext) => Promise<unknown>;
    const result = await h(parsed, ctx);
    return OPS[op].result.parse(result) as OpResult<K>;
  }

  effects(): Record<string, unknown>[] {
    try {
      return readFileSync(this.effectsPath, "utf8")
        .split("\n")
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    } catch {
      return [];
    }
  }

  async close(): Promise<void> {
    await this.runtime.shutdown();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export function inspectArgs(
  sessionKey: string,
  target: TargetExpectation,
  over: Record<string, unknown> = {},
) {
  return {
    session_key: sessionKey,
    target,
    max_depth: 8,
    max_nodes: 500,
    deadline_ms: 5000,
    root_ref: null,
    ...over,
  };
}

export function findArgs(sessionKey: string, target: TargetExpectation, over: Record<string, unknown> = {}) {
  return {
    session_key: sessionKey,
    target,
    name_contains: null,
    role: null,
    automation_id: null,
    max_results: 50,
    deadline_ms: 5000,
    ...over,
  };
}

/** Rejects with the UiError a promise throws (or fails the test when it resolves). */
export async function failure(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (e) {
    const err = e as { code?: unknown; message?: unknown };
    return { code: String(err.code), message: String(err.message) };
  }
  throw new Error("expected a failure");
}

/** Every node of a tree, depth first. */
export function flatten<T extends { children: T[] }>(root: T): T[] {
  const out: T[] = [];
  const stack = [root];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    out.push(n);
    for (let i = n.children.length - 1; i >= 0; i -= 1) stack.push(n.children[i] as T);
  }
  return out;
}
