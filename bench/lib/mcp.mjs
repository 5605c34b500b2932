// Shared helpers for benchmarks that drive the built server over stdio with the SDK client.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export const CLI = resolve(import.meta.dirname, "../../dist/cli.js");
export const RUFFLE = "C:\\Program Files\\ruffle\\bin\\ruffle.exe";

export const LOOSE = {
  UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "100000",
  UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: "100000",
  UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE: "100000",
  DESKTOP_AUTOMATION_MAX_ACTIONS_PER_MINUTE: "100000",
};

export function scratch(scenario, policy) {
  const dir = mkdtempSync(join(tmpdir(), "uiinspect-bench-"));
  const scenarioPath = join(dir, "desktop.json");
  const policyPath = join(dir, "policy.json");
  const write = (s) =>
    writeFileSync(scenarioPath, JSON.stringify({ effects_log: join(dir, "effects.jsonl"), ...s }));
  write(scenario);
  writeFileSync(policyPath, JSON.stringify(policy));
  return { dir, scenarioPath, policyPath, write };
}

/** The bench's own environment without any UIINSPECT_/DESKTOP_AUTOMATION_ setting leaking in. */
export function cleanEnv() {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith("UIINSPECT_") && !k.startsWith("DESKTOP_AUTOMATION_"),
    ),
  );
}

/** BENCH_SERVER_CPU_PROF=DIR: node flags for a V8 CPU profile of the server and each worker thread. */
export function cpuProfArgs() {
  const dir = process.env.BENCH_SERVER_CPU_PROF;
  return dir ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : [];
}

/** `cli`: another build's dist/cli.js (bench/ab-screenshot.mjs compares two builds). */
export async function startServer(env, cli = CLI) {
  const clean = cleanEnv();
  const transport = new StdioClientTransport({
    command: process.execPath,
    // BENCH_SERVER_CPU_PROF=DIR: a V8 CPU profile of the server and of each worker thread in DIR
    // (the server refuses --cpu-prof in NODE_OPTIONS, so it is passed on the command line).
    args: [...cpuProfArgs(), cli, "serve"],
    env: { ...clean, UIINSPECT_LOG_LEVEL: "error", ...env },
    stderr: "ignore",
  });
  const client = new Client({ name: "uiinspect-bench", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport, pid: transport.pid };
}

/**
 * bench/lib/replay-server.mjs with `results` ({ key: CallToolResult }, see there): the same SDK
 * over stdio answering with recorded results, so a bench can time the transport of the very
 * bytes our server sends.
 */
export async function startReplayServer(results) {
  const dir = mkdtempSync(join(tmpdir(), "uiinspect-replay-"));
  const file = join(dir, "results.json");
  writeFileSync(file, JSON.stringify(results));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [resolve(import.meta.dirname, "replay-server.mjs"), file],
    env: cleanEnv(),
    stderr: "inherit",
  });
  const client = new Client({ name: "uiinspect-bench", version: "1.0.0" });
  await client.connect(transport);
  return { client, close: () => client.close(), dir };
}

/** The whole result of one call (content, structuredContent, _meta), as the client got it. */
export async function rawCall(client, name, args = {}) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent)}`);
  return r;
}

export async function call(client, name, args = {}) {
  return (await rawCall(client, name, args)).structuredContent;
}

export function percentiles(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
  const r = (v) => Math.round(v * 1000) / 1000;
  return { n: s.length, p50_ms: r(at(50)), p99_ms: r(at(99)), min_ms: r(s[0]), max_ms: r(s[s.length - 1]) };
}

export function ruffle(over = {}) {
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
    ...over,
  };
}

export function policy(over = {}) {
  return {
    schema_version: 1,
    policy_id: "bench",
    application: { executable_path: RUFFLE, title_patterns: ["Ruffle - *"] },
    allowed_actions: ["observe", "inspect", "hover", "click", "interact", "key", "text", "close", "drag"],
    safe_regions: [{ name: "stage", rect: [10, 10, 810, 610] }],
    ...over,
  };
}
