#!/usr/bin/env node
// Operator-supervised smoke test for a real Windows machine (npm run smoke:windows).
//
// What it does: starts Notepad and Calculator, finds their real process paths, starts the
// built server (node dist/cli.js serve) with an environment policy allowing exactly those two
// executables, and walks the whole tool flow through an MCP client over stdio:
//   health_check → list_windows → request_access (YOU click "Approve" in the dialog) →
//   screenshot_window (saved to out/smoke/) → inspect_tree / find_elements (UIA3) →
//   click_window + send_text + send_key (Notepad) → invoke_element on Calculator's buttons
//   (7 + 8 =, result read from the display's accessible name) → close_window (Notepad).
// It prints a report at the end. Nothing is sent anywhere; screenshots stay in out/smoke/.
//
// Run from the repository root after `npm run build`, in a normal (not elevated) session.
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const outDir = join(root, "out", "smoke");
const report = [];
const say = (s) => process.stdout.write(`${s}\n`);

function record(step, ok, detail = "") {
  report.push({ step, ok, detail });
  say(`${ok ? "PASS" : "FAIL"}  ${step}${detail ? `  — ${detail}` : ""}`);
}

async function step(name, fn) {
  try {
    const detail = await fn();
    record(name, true, typeof detail === "string" ? detail : "");
    return true;
  } catch (e) {
    record(name, false, e?.message ?? String(e));
    return false;
  }
}

if (process.platform !== "win32") {
  say("smoke:windows runs on Windows only (under Wine, use .ci/wine-run.sh).");
  process.exit(2);
}

// 1. Start the two applications and find their windows with the backend itself. -------------
const { createWin32Platform } = await import(
  new URL("../dist/platforms/win32/index.js", import.meta.url).href
);
const platform = await createWin32Platform({ workerKind: "other" });
const before = new Set((await platform.desktop.listWindows()).map((w) => w.hwnd));
spawn("notepad.exe", [], { detached: true, stdio: "ignore" }).unref();
spawn("calc.exe", [], { detached: true, stdio: "ignore" }).unref();

async function findNew(re, ms = 20000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const w = (await platform.desktop.listWindows()).find(
      (x) => x.visible && !before.has(x.hwnd) && re.test(x.title) && x.instance,
    );
    if (w) return w;
    await sleep(300);
  }
  return null;
}
const notepad = await findNew(/notepad/i);
const calc = await findNew(/calculator|rechner|calculatrice|calcolatrice|calculadora/i);
record(
  "Notepad window appeared",
  !!notepad,
  notepad ? `pid ${notepad.pid}, ${notepad.instance.exe_path}` : "",
);
record("Calculator window appeared", !!calc, calc ? `pid ${calc.pid}, ${calc.instance.exe_path}` : "");
const health = await platform.desktop.health();
say(`backend facts: ${JSON.stringify(health)}`);
await platform.desktop.dispose();
if (!notepad) process.exit(1);

// 2. The server, with a policy for exactly these executables. -----------------------------------
const paths = [notepad.instance.exe_path, calc?.instance.exe_path].filter(Boolean);
const titles = [notepad.title, calc?.title].filter(Boolean).map((t) => `*${t.replace(/[*?]/g, "")}*`);
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [join(root, "dist", "cli.js"), "serve"],
  cwd: root,
  env: {
    ...process.env,
    UIINSPECT_PLATFORM: "",
    DESKTOP_AUTOMATION_ALLOWED_TITLES: titles.join(","),
    DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: paths.join(";"),
    DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe,inspect,click,interact,key,text,close",
    UIINSPECT_CONSENT_TIMEOUT_MS: "120000",
    UIINSPECT_LOG_LEVEL: "warn",
  },
  stderr: "inherit",
});
const client = new Client({ name: "uiinspect-smoke-windows", version: "1.0.0" });
await client.connect(transport);
const call = async (name, args = {}) => {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 180000 });
  if (r.isError)
    throw new Error(`${name}: ${r.structuredContent?.error?.code} ${r.structuredContent?.error?.message}`);
  return r;
};

await step("health_check", async () => {
  const h = (await call("health_check")).structuredContent;
  return `platform ${h.platform ?? "?"}; ${JSON.stringify(h).slice(0, 300)}`;
});
await step("list_windows shows both, with process paths", async () => {
  const ws = (await call("list_windows")).structuredContent.windows;
  const np = ws.find((w) => w.hwnd === notepad.hwnd);
  if (!np) throw new Error("Notepad not listed");
  if (calc && !ws.some((w) => w.hwnd === calc.hwnd)) throw new Error("Calculator not listed");
  return `${ws.length} allowed window(s)`;
});

async function access(w, label) {
  say(`\n>>> A consent dialog for ${label} is about to open. Check that it shows the executable path,`);
  say(">>> pid and start time but NOT the window title, that Deny is the default, then click Approve.\n");
  return step(`request_access ${label} (operator approves)`, async () => {
    const r = (await call("request_access", { hwnd: w.hwnd })).structuredContent;
    if (r.decision !== "approved") throw new Error(`decision ${r.decision}`);
    return `capabilities ${r.capabilities.join(",")}, source ${r.source}`;
  });
}

mkdirSync(outDir, { recursive: true });
if (await access(notepad, "Notepad")) {
  await step("screenshot_window Notepad (saved)", async () => {
    const r = await call("screenshot_window", { hwnd: notepad.hwnd });
    const img = r.content.find((c) => c.type === "image");
    const file = join(outDir, "notepad.png");
    writeFileSync(file, Buffer.from(img.data, "base64"));
    return `${JSON.stringify(r._meta?.image_size)} → ${file}`;
  });
  let editRef = null;
  await step("inspect_tree Notepad (UIA3)", async () => {
    const r = (await call("inspect_tree", { hwnd: notepad.hwnd, max_depth: 6, max_nodes: 300 }))
      .structuredContent;
    const roles = new Map();
    const walk = (n) => {
      roles.set(n.role, (roles.get(n.role) ?? 0) + 1);
      if (!editRef && (n.role === "edit" || n.role === "document")) editRef = n.ref;
      for (const c of n.children ?? []) walk(c);
    };
    walk(r.root);
    return `${r.node_count} nodes, truncated ${r.truncated}; roles ${JSON.stringify(Object.fromEntries(roles))}`;
  });
  await step("click into the text area, send_text, send_key", async () => {
    const w = (await call("get_window_state", { hwnd: notepad.hwnd })).structuredContent;
    const rect = w.rect ?? w.window?.rect;
    const cx = rect ? Math.floor((rect[2] - rect[0]) / 2) : 200;
    const cy = rect ? Math.floor((rect[3] - rect[1]) / 2) : 200;
    if (editRef) await call("click_element", { ref: editRef });
    else await call("click_window", { hwnd: notepad.hwnd, x: cx, y: cy });
    const tok = (await call("request_confirmation", { action_class: "text", hwnd: notepad.hwnd }))
      .structuredContent;
    await call("send_text", {
      hwnd: notepad.hwnd,
      text: "uiinspect smoke ✓ 😀",
      confirmation_token: tok.token_id,
    });
    await call("send_key", { hwnd: notepad.hwnd, key: "enter" });
    const r = await call("screenshot_window", { hwnd: notepad.hwnd });
    const file = join(outDir, "notepad-typed.png");
    writeFileSync(file, Buffer.from(r.content.find((c) => c.type === "image").data, "base64"));
    return `check ${file}: the text "uiinspect smoke ✓ 😀" must be visible`;
  });
}

if (calc && (await access(calc, "Calculator"))) {
  await step("Calculator: invoke 7 + 8 = through UIA patterns", async () => {
    const find = async (id) => {
      const els = (await call("find_elements", { hwnd: calc.hwnd, automation_id: id, max_results: 1 }))
        .structuredContent.elements;
      if (!els.length) throw new Error(`no element ${id}`);
      return els[0];
    };
    await call("invoke_element", {
      ref: (await find("clearButton").catch(() => find("clearEntryButton"))).ref,
    });
    for (const id of ["num7Button", "plusButton", "num8Button", "equalButton"])
      await call("invoke_element", { ref: (await find(id)).ref });
    await sleep(300);
    const display = await find("CalculatorResults");
    if (!/15/.test(display.name ?? "")) throw new Error(`display name ${JSON.stringify(display.name)}`);
    return `display: ${display.name}`;
  });
  await step("Calculator screenshot (saved)", async () => {
    const r = await call("screenshot_window", { hwnd: calc.hwnd });
    const file = join(outDir, "calculator.png");
    writeFileSync(file, Buffer.from(r.content.find((c) => c.type === "image").data, "base64"));
    return file;
  });
}

say("\n>>> Notepad will now be asked to close (WM_CLOSE). If it asks to save, choose Don't Save.\n");
await step("close_window Notepad (confirmation token)", async () => {
  const tok = (await call("request_confirmation", { action_class: "close", hwnd: notepad.hwnd }))
    .structuredContent;
  await call("close_window", { hwnd: notepad.hwnd, confirmation_token: tok.token_id });
  return "WM_CLOSE posted";
});
await step("get_audit_events (redacted)", async () => {
  const ev = (await call("get_audit_events", { limit: 50 })).structuredContent.events;
  const leaked = ev.some((e) => JSON.stringify(e).includes("uiinspect smoke"));
  if (leaked) throw new Error("typed text appears in the audit");
  return `${ev.length} events, no typed text`;
});
await client.close();

const passed = report.filter((r) => r.ok).length;
const failed = report.length - passed;
say("\n=== uiinspect-mcp Windows smoke report ===");
say(`machine: ${process.env.COMPUTERNAME ?? "?"}, node ${process.version}, ${process.arch}`);
for (const r of report) say(`${r.ok ? "PASS" : "FAIL"}  ${r.step}${r.detail ? `\n      ${r.detail}` : ""}`);
say(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
