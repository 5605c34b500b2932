// Lease broker benchmark: validation round trips (p50/p99) and validations/s from 8 concurrent
// client processes (each a stand-in for one MCP server with its own LeaseClient connection)
// against a real broker process with an approved lease. Linux only (Xvfb, zenity, xdotool).
//   node bench/lease.mjs [--clients 8] [--per-client 2000]
import { execFile, execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(ROOT, "out", "lease-test");
const DIALOG_TITLE = "uiinspect-mcp: unattended access lease";

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}

if (process.argv[2] === "client") {
  // Child: validate `n` times after "go", print the round trips (µs) as one JSON line.
  const { LeaseClient } = await import(`${OUT}/lease/client.js`);
  const instance = JSON.parse(process.env.BENCH_INSTANCE);
  const n = Number(process.env.BENCH_N);
  const client = new LeaseClient({ timeoutMs: 5000 });
  for (let i = 0; i < 200; i++) await client.validate("inspect", instance);
  process.stdout.write("ready\n");
  const rl = createInterface({ input: process.stdin });
  for await (const _ of rl) break;
  const lat = new Float64Array(n);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const s = process.hrtime.bigint();
    await client.validate("inspect", instance);
    lat[i] = Number(process.hrtime.bigint() - s) / 1000;
  }
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  process.stdout.write(`${JSON.stringify({ wall_ms: wall, lat: Array.from(lat) })}\n`);
  client.close();
  process.exit(0);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const xdo = (display, args) =>
  new Promise((res, rej) =>
    execFile("xdotool", args, { env: { ...process.env, DISPLAY: display }, timeout: 15000 }, (e, out) =>
      e ? rej(e) : res(out),
    ),
  );

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function runClients(env, instance, count, perClient) {
  const kids = [];
  for (let i = 0; i < count; i++) {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "client"], {
      env: { ...env, BENCH_INSTANCE: JSON.stringify(instance), BENCH_N: String(perClient) },
      stdio: ["pipe", "pipe", "inherit"],
    });
    const lines = createInterface({ input: child.stdout });
    const it = lines[Symbol.asyncIterator]();
    kids.push({ child, it });
  }
  for (const k of kids) if ((await k.it.next()).value !== "ready") throw new Error("client failed");
  const t0 = process.hrtime.bigint();
  for (const k of kids) k.child.stdin.write("go\n");
  const results = [];
  for (const k of kids) results.push(JSON.parse((await k.it.next()).value));
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const all = results.flatMap((r) => r.lat).sort((a, b) => a - b);
  return {
    n: all.length,
    wallMs,
    p50: pct(all, 50),
    p99: pct(all, 99),
    perSec: (all.length / wallMs) * 1000,
  };
}

async function main() {
  const clients = arg("--clients", 8);
  const perClient = arg("--per-client", 2000);
  spawnSync(
    process.execPath,
    [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "test/lease/tsconfig.build.json"],
    {
      cwd: ROOT,
      stdio: "ignore",
    },
  );
  if (!existsSync(join(OUT, "lease", "brokerMain.js"))) throw new Error("lease build failed");

  const displayN = 147;
  const xvfb = spawn("Xvfb", [`:${displayN}`, "-screen", "0", "1024x768x24", "-nolisten", "tcp"], {
    stdio: "ignore",
  });
  const root = mkdtempSync(join(tmpdir(), "lease-bench-"));
  const run = join(root, "run");
  mkdirSync(run, { mode: 0o700 });
  const display = `:${displayN}`;
  const env = {
    PATH: process.env.PATH,
    HOME: root,
    DISPLAY: display,
    XDG_RUNTIME_DIR: run,
    XDG_STATE_HOME: join(root, "state"),
  };
  let broker;
  const target = spawn("sleep", ["600"], { stdio: "ignore" });
  try {
    while (!existsSync(`/tmp/.X11-unix/X${displayN}`)) await sleep(50);
    broker = spawn(process.execPath, [join(OUT, "lease", "brokerMain.js")], { env, stdio: "ignore" });
    const { LeaseClient } = await import(`${OUT}/lease/client.js`);
    const { resolveLinuxScope } = await import(`${OUT}/lease/endpoint.js`);
    const scope = resolveLinuxScope(env);
    const c = new LeaseClient({ env, scope });
    for (let i = 0; i < 50 && !(await c.status()).reachable; i++) await sleep(100);
    const pending = c.request({ op: "activate", hours: 1, capabilities: ["inspect"] }, 30000);
    const found = await xdo(display, ["search", "--sync", "--onlyvisible", "--name", DIALOG_TITLE]);
    const wid = found.trim().split("\n").at(-1);
    await sleep(400);
    const geo = await xdo(display, ["getwindowgeometry", "--shell", wid]);
    const v = (k) => Number(new RegExp(`^${k}=(-?\\d+)$`, "m").exec(geo)[1]);
    await xdo(display, ["mousemove", String(v("X") + v("WIDTH") - 50), String(v("Y") + v("HEIGHT") - 24)]);
    await sleep(100);
    await xdo(display, ["click", "1"]);
    await pending;
    c.close();

    const stat = readFileSync(`/proc/${target.pid}/stat`, "utf8");
    const ticks = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
    const hz = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    const btime = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))[1]);
    const instance = {
      pid: target.pid,
      start_time: new Date(btime * 1000 + Math.round((ticks * 1000) / hz)).toISOString(),
      exe_path: readlinkSync(`/proc/${target.pid}/exe`),
      session: scope.instance_session,
    };

    const one = await runClients(env, instance, 1, perClient);
    const many = await runClients(env, instance, clients, perClient);
    const f = (n) => n.toFixed(0);
    process.stdout.write(
      [
        `lease broker validation (Node ${process.version}, ${cpus().length} cores, real broker process, /proc re-resolution each call)`,
        `  1 client : ${one.n} validations, p50 ${f(one.p50)} µs, p99 ${f(one.p99)} µs, ${f(one.perSec)} validations/s`,
        `  ${clients} clients: ${many.n} validations, p50 ${f(many.p50)} µs, p99 ${f(many.p99)} µs, ${f(many.perSec)} validations/s`,
        "",
      ].join("\n"),
    );
  } finally {
    target.kill("SIGKILL");
    broker?.kill("SIGTERM");
    xvfb.kill("SIGTERM");
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
