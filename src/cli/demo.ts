import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { RUFFLE_PATH, sampleScenario } from "../platforms/fake/sample.js";

type Structured = Record<string, unknown>;

type Call = (name: string, args?: Record<string, unknown>) => Promise<{ r: CallResult; s: Structured }>;
type CallResult = Awaited<ReturnType<Client["callTool"]>>;

const say = (s: string) => process.stdout.write(`${s}\n`);

/** The simulated desktop and a policy for its Ruffle window, written into `dir`. */
function writeDemoFiles(dir: string): { scenarioPath: string; policyPath: string } {
  const scenarioPath = join(dir, "desktop.json");
  writeFileSync(scenarioPath, JSON.stringify(sampleScenario(dir), null, 2));
  const policyPath = join(dir, "policy.json");
  writeFileSync(
    policyPath,
    JSON.stringify(
      {
        schema_version: 1,
        policy_id: "demo",
        application: { executable_path: RUFFLE_PATH, title_patterns: ["Ruffle - *"] },
        allowed_actions: ["observe", "inspect", "click", "key", "interact"],
        safe_regions: [{ name: "stage", rect: [10, 50, 330, 290], description: "game stage" }],
        screenshot_masks: [{ rect: [10, 90, 230, 140] }],
      },
      null,
      2,
    ),
  );
  return { scenarioPath, policyPath };
}

/** Steps 1–3: list, consent, the tree. Returns the window's hwnd. */
async function listAccessInspect(call: Call): Promise<string> {
  say("1. list_windows (the policy allows only Ruffle windows)");
  const { s: list } = await call("list_windows");
  const windows = list.windows as Array<{ hwnd: string; title: string; pid: number }>;
  for (const w of windows) say(`   hwnd=${w.hwnd} pid=${w.pid} "${w.title}"`);
  const hwnd = windows[0]?.hwnd;
  if (!hwnd) throw new Error("no allowed window");

  say("2. request_access → the consent dialog (SIMULATED: answered by the scenario's consent script)");
  const { s: access } = await call("request_access", { hwnd });
  say(
    `   decision=${access.decision} source=${access.source} capabilities=${(access.capabilities as string[]).join(",")}`,
  );

  say("3. inspect_tree (password fields redacted)");
  const { r: tree } = await call("inspect_tree", { hwnd, max_depth: 4 });
  const blocks = tree.content as Array<{ type: string; text?: string }>;
  const text = blocks.find((c) => c.type === "text");
  for (const line of (text && "text" in text ? String(text.text) : "").split("\n")) say(`   ${line}`);
  return hwnd;
}

/** Steps 4–7: a screenshot, a semantic action, a click and a key, the audit. */
async function shootActAudit(call: Call, hwnd: string): Promise<void> {
  say("4. screenshot_window region 'stage' (mask painted black)");
  const { s: shot } = await call("screenshot_window", { hwnd, region_name: "stage", grid: true });
  say(
    `   ${shot.width}×${shot.height} PNG, ${shot.png_bytes} bytes, window_offset=${JSON.stringify(shot.window_offset)}`,
  );

  say("5. find_elements name~'play' then invoke_element");
  const { s: found } = await call("find_elements", { hwnd, name_contains: "play", detail: "full" });
  const play = (found.elements as Array<{ ref: string; name: string }>)[0];
  if (!play) throw new Error("Play button not found");
  await call("invoke_element", { ref: play.ref });
  say(`   invoked ${play.ref}`);

  say("6. click_window at (70, 75), then send_key enter");
  const { s: click } = await call("click_window", { hwnd, x: 70, y: 75 });
  say(`   clicked at screen (${click.screen_x}, ${click.screen_y})`);
  await call("send_key", { hwnd, key: "enter" });
  say("   pressed enter");

  say("7. get_audit_events (redacted: codes and counts only)");
  const { s: audit } = await call("get_audit_events", { limit: 8 });
  for (const e of audit.events as Array<Structured>)
    say(`   ${e.tool} ${e.outcome} ${e.reason} ${e.duration_ms} ms`);
}

/**
 * `uiinspect-mcp demo`: starts the server on a simulated desktop and drives it with
 * the SDK's own client, printing each step. Consent is the simulated desktop's
 * scripted answer, and says so.
 */
export async function runDemo(_argv: string[]): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "uiinspect-demo-"));
  const { scenarioPath, policyPath } = writeDemoFiles(dir);
  const cli = fileURLToPath(new URL("../cli.js", import.meta.url));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, "serve"],
    env: {
      ...(process.env as Record<string, string>),
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: scenarioPath,
      DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
      UIINSPECT_LOG_LEVEL: "warn",
    },
    stderr: "inherit",
  });
  const client = new Client({ name: "uiinspect-demo", version: "1.0.0" });
  const call: Call = async (name, args = {}) => {
    const r = await client.callTool({ name, arguments: args });
    const s = (r.structuredContent ?? {}) as Structured;
    if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(s.error)}`);
    return { r, s };
  };
  await client.connect(transport);
  try {
    say(`Simulated desktop: ${scenarioPath}`);
    const hwnd = await listAccessInspect(call);
    await shootActAudit(call, hwnd);
    say(`Effects emitted on the simulated desktop: ${join(dir, "effects.jsonl")}`);
    return 0;
  } finally {
    await client.close();
  }
}
