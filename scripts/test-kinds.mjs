#!/usr/bin/env node
// Test files that spawn the CLI (dist/cli.js through McpHarness, ServerProcess, CLI, spawn) and
// those that run in process only. Usage: node scripts/test-kinds.mjs [--list]
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const repo = resolve(new URL(import.meta.url).pathname, "..", "..");
function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.test\.(ts|mts)$/.test(name)) out.push(p);
  }
  return out;
}
const SPAWNS =
  /new McpHarness\(|McpHarness\.start\(|new ServerProcess\(|ServerProcess\.start\(|\bCLI\b|dist\/cli\.js|via: "stdio"|spawnCli\(|runCli\(/;
const spawning = [];
const inProcess = [];
for (const f of walk(join(repo, "test"))) {
  (SPAWNS.test(readFileSync(f, "utf8")) ? spawning : inProcess).push(relative(repo, f));
}
process.stdout.write(`test files spawning the CLI: ${spawning.length}; in process: ${inProcess.length}\n`);
if (process.argv.includes("--list")) for (const f of spawning.sort()) process.stdout.write(`  ${f}\n`);
