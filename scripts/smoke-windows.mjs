#!/usr/bin/env node
// Operator-supervised smoke test for a real Windows machine (npm run smoke:windows).
//
// It proves what only real Windows can show (Wine does not implement it, or implements it
// differently; docs/win32.md, "What only real Windows can prove"): integrity levels and UIPI,
// per-monitor-v2 DPI on the thread, DWM frame bounds, real UIA providers (Notepad, Calculator),
// the consent dialog's low-level hooks refusing input the system flags injected
// (LLKHF_INJECTED / LLMHF_INJECTED), GetGUIThreadInfo's real menu-mode flags under another
// process's popup menu (GUI_POPUPMENUMODE), and SendInput refused on the secure desktop.
// Every step prints PASS, FAIL or SKIP with the reason. Under Wine or on another OS it says so
// and proves nothing (exit 2).
//
// The flow: starts Notepad and Calculator, finds their real process paths, starts the built
// server (node dist/cli.js serve) with an environment policy allowing exactly those two
// executables, and walks the tool flow through an MCP client over stdio:
//   health_check → list_windows → request_access (injected clicks first, then YOU click
//   "Approve") → screenshot_window (saved to out/smoke/) → inspect_tree / find_elements (UIA3) →
//   click_window + send_text + send_key (Notepad) → another process's menu and capture over
//   Notepad (input_grabbed) → invoke_element on Calculator's buttons (7 + 8 =, result read from
//   the display's accessible name) → close_window (Notepad).
// It prints a report at the end. Nothing is sent anywhere; screenshots stay in out/smoke/.
//
// Run from the repository root after `npm run build`, in a normal (not elevated) session.
// Optional: UIINSPECT_SMOKE_SECURE_DESKTOP=1 adds the secure-desktop step (you lock the screen
// with Win+L when asked and unlock it again).
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { release } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const outDir = join(root, "out", "smoke");
const report = [];
const say = (s) => process.stdout.write(`${s}\n`);

/** The claims only real Windows can prove, in the order the run reaches them. */
const REAL_WINDOWS_ONLY = [
  "integrity: the server runs at medium integrity, so UIPI applies to it",
  "UIPI: a window of a higher-integrity process is refused (target_not_allowed)",
  "DPI: per-monitor v2 awareness on the worker thread",
  "DWM: extended frame bounds are the rect source",
  "consent dialog: injected clicks and keys (LLKHF_INJECTED / LLMHF_INJECTED) do not answer it",
  "UIA3 against real providers (Notepad's tree, Calculator's buttons)",
  "menu mode: another process's popup menu in the target's queue shows GUI_POPUPMENUMODE and makes click_window input_grabbed, nothing delivered",
  "capture: another process's mouse capture in the target's queue makes click_window input_grabbed",
  "secure desktop: SendInput is refused while the screen is locked (the call fails with a code)",
];

function record(step, status, detail = "") {
  report.push({ step, status, detail });
  say(`${status.padEnd(4)}  ${step}${detail ? `  — ${detail}` : ""}`);
}
const skip = (name, reason) => record(name, "SKIP", reason);

async function step(name, fn) {
  try {
    const detail = await fn();
    record(name, "PASS", typeof detail === "string" ? detail : "");
    return true;
  } catch (e) {
    if (e instanceof Skip) record(name, "SKIP", e.message);
    else record(name, "FAIL", e?.message ?? String(e));
    return false;
  }
}
/** Thrown by a step that cannot run here; the reason is printed. */
class Skip extends Error {}

function notRealWindows(what) {
  say(`NOT REAL WINDOWS: ${what}. smoke:windows proves nothing here; the claims below need real Windows.`);
  say("(The Win32 backend's Wine suite is .ci/wine-run.sh; docs/win32.md says what it proves.)");
  for (const name of REAL_WINDOWS_ONLY) skip(name, `not real Windows (${what})`);
  say(`0 passed, 0 failed, ${REAL_WINDOWS_ONLY.length} skipped: not real Windows`);
  process.exit(2);
}

if (process.platform !== "win32") notRealWindows(`this is ${process.platform}`);
const koffi = (await import("koffi")).default;
let wine = null;
try {
  wine = koffi.load("ntdll.dll").func("const char * __cdecl wine_get_version()")();
} catch {
  wine = null;
}
if (wine) notRealWindows(`Wine ${wine} (ntdll exports wine_get_version)`);
say(`Windows ${release()}, node ${process.version}, ${process.arch}`);

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
const found = (w) => (w ? "PASS" : "FAIL");
record(
  "Notepad window appeared",
  found(notepad),
  notepad ? `pid ${notepad.pid}, ${notepad.instance.exe_path}` : "",
);
record("Calculator window appeared", found(calc), calc ? `pid ${calc.pid}, ${calc.instance.exe_path}` : "");
if (!notepad) process.exit(1);
const health = await platform.desktop.health();
say(`backend facts: ${JSON.stringify(health)}`);
const [INTEGRITY, UIPI, DPI, DWM, INJECTED, UIA, MENU, CAPTURE, SECURE] = REAL_WINDOWS_ONLY;
const { ourIntegrity, processIntegrity } = await import(
  new URL("../dist/os/win32/identity.js", import.meta.url).href
);
const { CONSENT_DIALOG_TITLE } = await import(
  new URL("../dist/platforms/win32/consentDialog.js", import.meta.url).href
);
const MEDIUM_RID = 0x2000;
const mine = ourIntegrity();
const medium = mine === MEDIUM_RID;
await step(INTEGRITY, async () => {
  if (mine === null) throw new Error("our token's integrity level is unreadable");
  if (!medium) throw new Error(`integrity RID 0x${mine.toString(16)}: run the smoke unelevated`);
  return "RID 0x2000 (medium)";
});
await step(UIPI, async () => {
  if (!medium) throw new Skip("the server is not at medium integrity (see the step above)");
  const higher = (await platform.desktop.listWindows()).find((w) => {
    if (!w.visible || w.pid <= 4) return false;
    const theirs = processIntegrity(w.pid);
    return theirs !== null && theirs > mine;
  });
  if (!higher)
    throw new Skip(
      "no window of an elevated process is open: start one (e.g. Task Manager, elevated) and re-run",
    );
  try {
    await platform.desktop.restoreWindow(higher.hwnd);
  } catch (e) {
    if (e?.code === "target_not_allowed")
      return `pid ${higher.pid} (RID 0x${processIntegrity(higher.pid).toString(16)}) refused`;
    throw new Error(`refused with ${e?.code ?? e}, expected target_not_allowed`);
  }
  throw new Error(`the window of elevated pid ${higher.pid} was accepted as a target`);
});
await step(DPI, async () => {
  if (health.win32_dpi_thread !== "per_monitor_v2" || health.win32_dpi_thread_verified !== true)
    throw new Error(
      `thread awareness ${health.win32_dpi_thread}, verified ${health.win32_dpi_thread_verified}`,
    );
  return "per_monitor_v2, read back from the thread";
});
await step(DWM, async () => {
  if (health.win32_dwm !== "ok")
    throw new Error(`DwmGetWindowAttribute: ${health.win32_dwm} (${health.win32_dwm_last_hresult})`);
  return String(health.win32_rect_source);
});

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
    // The default: injected input never answers the dialog (the step above depends on it).
    UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT: "",
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

/** The server's consent dialog (its top-level window, by title and the server's pid), or null. */
async function consentDialog(ms) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const d = (await platform.desktop.listWindows()).find(
      (w) => w.pid === transport.pid && w.visible && w.title === CONSENT_DIALOG_TITLE,
    );
    if (d) return d;
    await sleep(200);
  }
  return null;
}

/**
 * Injected input aimed at the open dialog, after its security delay: Tab/Space/Enter (Enter
 * alone is Deny, the default) and a click at its centre. The hooks must swallow all of it,
 * so the request is still open afterwards.
 */
async function injectIntoDialog(pending) {
  const dlg = await consentDialog(15000);
  if (!dlg) throw new Error("no consent dialog of the server's process appeared");
  await sleep(1500);
  await platform.desktop.activateWindow(dlg.hwnd).catch(() => undefined);
  const { input } = platform;
  for (const key of ["tab", "space", "enter", "tab", "tab", "space"]) {
    await input.keyDown(key);
    await input.keyUp(key);
    await sleep(50);
  }
  await input.moveTo(
    Math.floor((dlg.rect[0] + dlg.rect[2]) / 2),
    Math.floor((dlg.rect[1] + dlg.rect[3]) / 2),
  );
  await input.buttonDown("left");
  await sleep(50);
  await input.buttonUp("left");
  await sleep(2000);
  if (pending.settled) throw new Error("the dialog was answered by injected input");
  return "6 injected keys and a click after the delay: the dialog is still open";
}

async function access(w, label, checkInjected) {
  say(`\n>>> A consent dialog for ${label} is about to open. Check that it shows the executable path,`);
  say(">>> pid and start time but NOT the window title, that Deny is the default.");
  if (checkInjected)
    say(">>> Do not touch it for a few seconds: the smoke first sends it injected keys and a click.");
  say(">>> Then click Approve.\n");
  const pending = { settled: false };
  const answer = call("request_access", { hwnd: w.hwnd }).finally(() => {
    pending.settled = true;
  });
  // Awaited in the step below; until then a rejection must not count as unhandled.
  answer.catch(() => undefined);
  if (checkInjected) {
    await step(INJECTED, () => injectIntoDialog(pending));
    say(">>> Now click Approve yourself.");
  }
  return step(`request_access ${label} (operator approves)`, async () => {
    const r = (await answer).structuredContent;
    if (r.decision !== "approved") throw new Error(`decision ${r.decision}`);
    return `capabilities ${r.capabilities.join(",")}, source ${r.source}`;
  });
}

/** The error code of a tool call that must fail, or a thrown Error when it succeeded. */
async function failsWith(name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
  if (!r.isError) throw new Error(`${name} succeeded`);
  return r.structuredContent?.error?.code;
}

/**
 * Another process (test/win32/grabber.mjs) attaches to Notepad's input queue and opens a popup
 * menu there, or takes the mouse capture: GetGUIThreadInfo(0) as Windows reports it, and
 * click_window refused with input_grabbed while its low-level hooks see no event at all.
 */
async function grabSteps() {
  const client32 = await import(new URL("../test/win32/grabberClient.mjs", import.meta.url).href);
  const { GRAB_ATTACH_CAPTURE, GRAB_END_MENU, GRAB_MENU, GRAB_RELEASE, GUI_INMENUMODE, GUI_POPUPMENUMODE } =
    client32;
  const { foregroundGui, pidOf, win32 } = client32;
  const waitFor = async (fn, ms) => {
    const until = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (v || Date.now() > until) return v;
      await sleep(100);
    }
  };
  const assert = (c, m) => {
    if (!c) throw new Error(m);
  };
  // In the bottom-right corner, so neither it nor its menu covers the point clicked in Notepad.
  const vs = await platform.desktop.virtualScreen();
  const grabber = await client32.startGrabber({
    listWindows: () => platform.desktop.listWindows(),
    waitFor,
    assert,
    x: vs[2] - 420,
    y: vs[3] - 320,
  });
  try {
    const tid = win32.GetWindowThreadProcessId(Number(notepad.hwnd), null);
    const front = async () => {
      await platform.desktop.activateWindow(notepad.hwnd).catch(() => undefined);
      return waitFor(() => win32.GetForegroundWindow() === Number(notepad.hwnd), 5000);
    };
    await step(MENU, async () => {
      if (!(await front())) throw new Error("Notepad could not be brought to the front");
      grabber.post(GRAB_MENU, tid);
      const gui = await waitFor(() => {
        const i = foregroundGui();
        return i && (i.flags & (GUI_INMENUMODE | GUI_POPUPMENUMODE)) !== 0 ? i : null;
      }, 10000);
      if (!gui) throw new Error("GetGUIThreadInfo(0) shows no menu mode while the grabber's menu is open");
      const facts = `flags 0x${gui.flags.toString(16)}, menu owner pid ${pidOf(gui.menuOwner)} (grabber ${grabber.child.pid})`;
      if ((gui.flags & GUI_POPUPMENUMODE) === 0) throw new Error(`no GUI_POPUPMENUMODE: ${facts}`);
      grabber.reset();
      const code = await failsWith("click_window", { hwnd: notepad.hwnd, x: 120, y: 120 });
      await sleep(300);
      const seen = grabber.lowLevel();
      grabber.send(GRAB_END_MENU);
      if (code !== "input_grabbed")
        throw new Error(`click_window: ${code}, expected input_grabbed (${facts})`);
      if (seen !== 0) throw new Error(`${seen} input events were delivered`);
      return `${facts}; click_window input_grabbed, 0 events delivered`;
    });
    await step(CAPTURE, async () => {
      if (!(await front())) throw new Error("Notepad could not be brought to the front");
      if (grabber.send(GRAB_ATTACH_CAPTURE, tid) !== 1)
        throw new Error("the grabber could not take the capture");
      const gui = foregroundGui();
      grabber.reset();
      const code = await failsWith("click_window", { hwnd: notepad.hwnd, x: 120, y: 120 });
      await sleep(300);
      const seen = grabber.lowLevel();
      grabber.send(GRAB_RELEASE);
      if (!gui || gui.capture !== grabber.hwnd)
        throw new Error("GetGUIThreadInfo(0).hwndCapture is not the grabber's window");
      if (code !== "input_grabbed") throw new Error(`click_window: ${code}, expected input_grabbed`);
      if (seen !== 0) throw new Error(`${seen} input events were delivered`);
      return "hwndCapture = the grabber's window; click_window input_grabbed, 0 events delivered";
    });
  } finally {
    grabber.stop();
  }
}

/** With the screen locked (the secure desktop), SendInput inserts nothing: the key fails with a code. */
async function secureDesktopStep() {
  if (process.env.UIINSPECT_SMOKE_SECURE_DESKTOP !== "1")
    return skip(SECURE, "operator step: set UIINSPECT_SMOKE_SECURE_DESKTOP=1 to lock the screen when asked");
  return step(SECURE, async () => {
    say(">>> Lock the screen now (Win+L), wait ~20 s, then unlock it. The smoke presses Shift meanwhile.");
    const codes = new Map();
    let accepted = 0;
    const until = Date.now() + 60000;
    while (Date.now() < until) {
      try {
        await platform.input.keyDown("shift");
        await platform.input.keyUp("shift");
        accepted += 1;
      } catch (e) {
        codes.set(e?.code ?? "uncoded", (codes.get(e?.code ?? "uncoded") ?? 0) + 1);
      }
      if (codes.size > 0 && accepted > 0 && Date.now() > until - 40000) break;
      await sleep(500);
    }
    if (codes.size === 0) throw new Error("no key was refused: was the screen locked?");
    if (codes.has("uncoded")) throw new Error("a refusal without a stable code");
    return `refused while locked: ${JSON.stringify(Object.fromEntries(codes))}; accepted otherwise: ${accepted}`;
  });
}

mkdirSync(outDir, { recursive: true });
if (await access(notepad, "Notepad", true)) {
  await step("screenshot_window Notepad (saved)", async () => {
    const r = await call("screenshot_window", { hwnd: notepad.hwnd });
    const img = r.content.find((c) => c.type === "image");
    const file = join(outDir, "notepad.png");
    writeFileSync(file, Buffer.from(img.data, "base64"));
    return `${JSON.stringify(r._meta?.image_size)} → ${file}`;
  });
  let editRef = null;
  await step(`${UIA}: inspect_tree Notepad`, async () => {
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
  await grabSteps();
} else {
  for (const name of [MENU, CAPTURE]) skip(name, "Notepad was not approved");
}
await secureDesktopStep();

if (calc && (await access(calc, "Calculator", false))) {
  await step(`${UIA}: Calculator 7 + 8 = through invoke patterns`, async () => {
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
await platform.desktop.dispose();

const count = (status) => report.filter((r) => r.status === status).length;
say("\n=== uiinspect-mcp Windows smoke report ===");
say(
  `machine: ${process.env.COMPUTERNAME ?? "?"}, Windows ${release()}, node ${process.version}, ${process.arch}`,
);
for (const r of report) say(`${r.status.padEnd(4)}  ${r.step}${r.detail ? `\n      ${r.detail}` : ""}`);
say(`${count("PASS")} passed, ${count("FAIL")} failed, ${count("SKIP")} skipped`);
process.exit(count("FAIL") ? 1 : 0);
