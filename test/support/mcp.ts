import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { scratchDir } from "./scratch.js";

export const CLI = resolve(import.meta.dirname, "../../dist/cli.js");

export interface ToolCall {
  isError: boolean;
  structured: Record<string, unknown>;
  content: Array<{ type: string; text?: string; data?: string; mimeType?: string }>;
  meta: Record<string, unknown> | undefined;
  code: string | undefined;
}

/** One tool call through any connected SDK client, its result unpacked for assertions. */
export async function callToolOn(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  opts: { signal?: AbortSignal; onprogress?: (p: unknown) => void } = {},
): Promise<ToolCall> {
  const r = await client.callTool({ name, arguments: args }, undefined, {
    signal: opts.signal,
    onprogress: opts.onprogress,
    timeout: 120_000,
  });
  const structured = (r.structuredContent ?? {}) as Record<string, unknown>;
  const err = structured.error as { code?: string } | undefined;
  return {
    isError: r.isError === true,
    structured,
    content: r.content as ToolCall["content"],
    meta: r._meta as Record<string, unknown> | undefined,
    code: r.isError ? err?.code : undefined,
  };
}

/** A tool call that must succeed; its structured result. */
export async function okOn(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const r = await callToolOn(client, name, args);
  if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.structured)}`);
  return r.structured;
}

/** A connected server a test drives: the built CLI over stdio, or the in-process one. */
export interface ServerHarness {
  readonly client: Client;
  /** What the server logged (stderr of the CLI, the log stream in process). */
  readonly stderr: string[];
  call(
    name: string,
    args?: Record<string, unknown>,
    opts?: { signal?: AbortSignal; onprogress?: (p: unknown) => void },
  ): Promise<ToolCall>;
  ok(name: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** call/ok over a connected SDK client; subclasses say how the server runs and ends. */
export abstract class ClientHarness implements ServerHarness {
  constructor(
    readonly client: Client,
    readonly stderr: string[] = [],
  ) {}

  call(
    name: string,
    args: Record<string, unknown> = {},
    opts: { signal?: AbortSignal; onprogress?: (p: unknown) => void } = {},
  ): Promise<ToolCall> {
    return callToolOn(this.client, name, args, opts);
  }

  ok(name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    return okOn(this.client, name, args);
  }

  abstract close(): Promise<void>;
}

/** The built CLI as a child process, driven by the SDK's own Client over stdio. */
export class McpHarness extends ClientHarness {
  static async start(
    env: Record<string, string>,
    clientInfo = { name: "uiinspect-test", version: "1.0.0" },
  ): Promise<McpHarness> {
    const base: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      // The test decides the policy; nothing leaks in from the runner's environment.
      if (v !== undefined && !k.startsWith("DESKTOP_AUTOMATION_") && !k.startsWith("UIINSPECT_")) base[k] = v;
    }
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, "serve"],
      env: { ...base, UIINSPECT_LOG_LEVEL: "warn", ...env },
      stderr: "pipe",
    });
    const client = new Client(clientInfo);
    const h = new McpHarness(client);
    transport.stderr?.on("data", (d: Buffer) => h.stderr.push(d.toString("utf8")));
    await client.connect(transport);
    return h;
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** A scratch folder with a scenario file that tests rewrite between calls. */
export class FakeDesktop {
  readonly dir: string;
  readonly path: string;
  readonly effects: string;
  readonly prompts: string;

  constructor(scenario: Record<string, unknown>) {
    this.dir = scratchDir("fake");
    mkdirSync(this.dir, { recursive: true });
    this.path = join(this.dir, "desktop.json");
    this.effects = join(this.dir, "effects.jsonl");
    this.prompts = join(this.dir, "prompts.jsonl");
    this.write(scenario);
  }

  write(scenario: Record<string, unknown>): void {
    const s: Record<string, unknown> = { effects_log: this.effects, ...scenario };
    if (s.consent && typeof s.consent === "object") s.consent = { log: this.prompts, ...s.consent };
    writeFileSync(this.path, JSON.stringify(s));
  }

  readLines(path: string): Array<Record<string, unknown>> {
    try {
      return readFileSync(path, "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    } catch {
      return [];
    }
  }

  effectsLog(): Array<Record<string, unknown>> {
    return this.readLines(this.effects);
  }

  promptLog(): Array<Record<string, unknown>> {
    return this.readLines(this.prompts);
  }

  writePolicy(policy: Record<string, unknown>, name = "policy.json"): string {
    const p = join(this.dir, name);
    writeFileSync(p, JSON.stringify(policy));
    return p;
  }
}

export const RUFFLE = "C:\\Program Files\\ruffle\\bin\\ruffle.exe";

export function ruffleWindow(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    hwnd: 1001,
    title: "Ruffle - game.swf",
    class: "RuffleWindow",
    pid: 4242,
    process_start: "2026-11-30T08:00:00Z",
    process_path: RUFFLE,
    rect: [100, 100, 924, 740],
    visible: true,
    iconic: false,
    z: 0,
    fill: "#3366cc",
    tree: {
      role: "window",
      name: "Ruffle",
      children: [
        {
          role: "button",
          name: "Play",
          automation_id: "play",
          rect: [20, 60, 120, 90],
          patterns: ["invoke"],
        },
        { role: "edit", name: "Password", is_password: true, rect: [20, 100, 220, 130], patterns: ["value"] },
      ],
    },
    ...over,
  };
}

/** A desktop with these windows (1001 in front) whose consent dialog approves at once. */
export function approvingDesktop(windows: Array<Record<string, unknown>> = [ruffleWindow()]): FakeDesktop {
  return new FakeDesktop({
    session: 1,
    foreground: 1001,
    windows,
    consent: { answer: "approve", delay_ms: 0 },
  });
}

/** Another process's window (never allowed by the e2e policy): it covers a target or takes the focus. */
export function otherWindow(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    hwnd: 2002,
    title: "Other app",
    class: "Other",
    pid: 7777,
    process_start: "2026-11-30T07:00:00Z",
    process_path: "C:\\Other\\other.exe",
    rect: [0, 0, 400, 400],
    visible: true,
    iconic: false,
    z: 0,
    fill: "#aa0000",
    ...over,
  };
}

export function filePolicy(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    schema_version: 1,
    policy_id: "e2e",
    application: { executable_path: RUFFLE, title_patterns: ["Ruffle - *"] },
    allowed_actions: ["observe", "inspect", "hover", "click", "interact", "key", "text", "close", "drag"],
    safe_regions: [{ name: "stage", rect: [10, 50, 330, 290] }],
    screenshot_masks: [{ rect: [10, 90, 230, 140] }],
    ...over,
  };
}

/** Generous budgets so functional tests are not rate limited (rate tests set their own). */
export const LOOSE_BUDGETS: Record<string, string> = {
  UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "10000",
  UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: "10000",
  UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE: "10000",
  DESKTOP_AUTOMATION_MAX_ACTIONS_PER_MINUTE: "10000",
};
