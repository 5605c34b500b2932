// `npm run bench`: runs every benchmark one after another (they share 2 cores badly) and
// prints their JSON figures; also writes them to bench/results/latest.json (git-ignored).
// Each script can be run alone too: `node bench/<name>.mjs`.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const here = import.meta.dirname;
const only = process.argv.slice(2);
const SCRIPTS = [
  ["startup", "cold start: spawn → initialize, tools/list, first list_windows; manager CLI"],
  ["foundation", "supervisor overhead per call over stdio, worker restart after a crash"],
  ["authz", "authorization chain latency with 1/10/100 grants, cached request_access throughput"],
  ["mcp-capture", "800×600 screenshots through the full MCP path"],
  ["streams", "16 concurrent screenshot streams under a 64 MiB budget: peak RSS"],
  ["capture", "PNG encode by compression level, ours vs sharp vs pngjs"],
  ["input", "actions per second through MCP, verification overhead"],
  ["mcp-a11y", "tree nodes per second through MCP, event-loop delay under 32 concurrent walks"],
  ["a11y", "tree walk in the uia handler alone"],
  [
    "tree-check",
    "the supervisor's check of a 4,681-node tree: one piece vs slices, longest event-loop stall",
  ],
  ["lease", "lease validation round trip, 8 concurrent clients"],
  ["remote", "remote mode: 32 authenticated HTTP sessions, inspect_tree + screenshots for 2 min"],
  [
    "remote-attack",
    "remote mode: 31 honest identities alone, then with one attacker (slow bodies + long waits)",
  ],
  [
    "burst-soak",
    "simulated desktop: 8 lanes + bursts of 64 calls in flight for 10 min, RSS (SOAK_MINUTES to shorten)",
  ],
  ["x11", "X11 under Xvfb: screenshots/s and AT-SPI nodes/s (needs the X11 packages)"],
  ["x11-checks", "X11 last-moment checks from the X server: cost per click, key and screenshot"],
  [
    "x11-floor",
    "X11: our walk vs pyatspi and the Cache.GetItems floor, our shot vs XShm+encode (needs python3-pyatspi)",
  ],
  [
    "x11-shared-turns",
    "X11: one identity's walk alone and under another's backlog of 24 walks of the same app (remote)",
  ],
  [
    "x11-shared-turns",
    "X11: one identity's screenshot alone and under another's backlog of 24, memory for two at once",
    { key: "x11-shared-shots", env: { BENCH_TOOL: "screenshot_window", BENCH_MEMORY_BYTES: "8388608" } },
  ],
  ["x11-png-encodes", "X11: ways to deflate one 800×600 frame's PNG rows, timed in turn"],
  ["soak", "X11: 10-minute mixed soak, RSS per isolation mode (SOAK_MINUTES to shorten)"],
  [
    "ab-screenshot",
    "X11: this build's screenshot_window against another build's, interleaved (only with BENCH_BASELINE=its dist/cli.js)",
  ],
];

const results = {};
for (const [name, what, variant] of SCRIPTS) {
  // A variant runs the same script with more settings, its figures under their own key.
  const key = variant?.key ?? name;
  if (only.length > 0 && !only.includes(name) && !only.includes(key)) continue;
  // A comparison needs the other build; without it there is nothing to compare.
  if (name === "ab-screenshot" && !process.env.BENCH_BASELINE) continue;
  const file = join(here, `${name}.mjs`);
  if (!existsSync(file)) continue;
  process.stderr.write(`bench ${key}: ${what}\n`);
  const r = spawnSync(process.execPath, [file], {
    env: { ...process.env, ...(variant?.env ?? {}) },
    encoding: "utf8",
    timeout: 15 * 60_000,
    maxBuffer: 64 << 20,
  });
  const out = r.stdout.trim();
  try {
    results[key] = JSON.parse(out.slice(out.indexOf("{")));
  } catch {
    // Scripts that print several JSON lines or a human report: keep what they said.
    const lines = `${r.stdout}\n${r.stderr}`.split("\n").filter((l) => l.trim() !== "");
    const json = lines.flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        return [];
      }
    });
    results[key] =
      r.status === 0
        ? { lines: json.length > 0 ? json : lines }
        : { error: `exit ${r.status ?? r.signal}`, tail: lines.slice(-8) };
  }
}
results.machine = {
  node: process.version,
  cpus: (await import("node:os")).cpus().length,
  loadavg: (await import("node:os")).loadavg(),
  date: new Date().toISOString(),
};
mkdirSync(join(here, "results"), { recursive: true });
writeFileSync(join(here, "results", "latest.json"), `${JSON.stringify(results, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
