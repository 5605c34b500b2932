import { cpSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkerInit, WorkerKind } from "../../src/shared/protocol.js";
import type { WorkerHost as WorkerHostType } from "../../src/supervisor/hosting/workerHost.js";
import { approvingDesktop, ruffleWindow } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";

/**
 * Worker threads of the built code that fail to start or die, many times over, in this process
 * (so /proc/self is theirs): descriptors, threads, shared-memory mappings and resident memory
 * stay where they were. The build is copied with its own `node_modules` link, which the test
 * moves away to make every worker's modules unloadable, as a dependency folder that is briefly
 * missing does.
 */

interface Counts {
  fds: number;
  threads: number;
  shm: number;
  rssMiB: number;
}

function counts(): Counts {
  const maps = readFileSync("/proc/self/maps", "utf8").split("\n");
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? "0";
  return {
    fds: readdirSync("/proc/self/fd").length,
    threads: readdirSync("/proc/self/task").length,
    shm: maps.filter((l) => /\s(\/SYSV[0-9a-f]{8}|\/dev\/shm\/)/.test(l)).length,
    rssMiB: Math.round(Number(rss) / 1024),
  };
}

const settle = () => new Promise((r) => setTimeout(r, 200));
/** Deaths before the baseline: resident memory reaches its plateau within a few dozen. */
const WARM_DEATHS = 60;
/** Resident memory may wander this much around its plateau (a worker's isolate is ~40 MiB). */
const RSS_SLACK_MIB = 8;

describe.skipIf(process.platform !== "linux")("worker restarts leave nothing behind", () => {
  let root: string;
  let modules: string;
  let WorkerHost: typeof WorkerHostType;
  let witness: WorkerHostType | undefined;
  const logger = pino({ level: "silent" });
  const desktop = approvingDesktop([
    ruffleWindow(),
    ruffleWindow({ hwnd: 2001, pid: 9001, faults: { capture: "exit" } }),
  ]);
  const init = (kind: WorkerKind): WorkerInit => ({
    kind,
    platform: "fake",
    fake_desktop: desktop.path,
    log_level: "silent",
  });
  const host = (kind: WorkerKind) =>
    new WorkerHost({ init: init(kind), isolation: "thread", logger, backoffBaseMs: 0, backoffMaxMs: 0 });
  // Listing the desktop touches the faulty window: the capture thread exits (code 70).
  const listFaulty = (h: WorkerHostType) => h.call("desktop.list", {}, { deadlineMs: 20_000 });

  beforeAll(async () => {
    root = scratchDir("restarts");
    cpSync(resolve(import.meta.dirname, "../../dist"), join(root, "dist"), { recursive: true });
    writeFileSync(join(root, "package.json"), JSON.stringify({ type: "module", version: "0.0.0" }));
    modules = join(root, "node_modules");
    symlinkSync(resolve(import.meta.dirname, "../../node_modules"), modules);
    const url = pathToFileURL(join(root, "dist/supervisor/hosting/workerHost.js")).href;
    ({ WorkerHost } = (await import(url)) as { WorkerHost: typeof WorkerHostType });
    // What the first workers bring once is not a leak: the thread pool, the loaded addons, and
    // the allocator's high water of one worker thread's life (malloc keeps its arenas' top).
    for (const kind of ["capture", "uia"] as const) {
      const h = host(kind);
      await h.call("ping", {}, { deadlineMs: 20_000 });
      await h.close();
    }
    // A worker that lives through every test: when one ends, the live one hands what malloc
    // holds free back to the system (malloc_trim is process-wide), as in a running server.
    witness = host("uia");
    await witness.call("ping", {}, { deadlineMs: 20_000 });
    const warm = host("capture");
    for (let i = 0; i < WARM_DEATHS; i += 1) await listFaulty(warm).catch(() => undefined);
    await warm.close();
    await settle();
  }, 60_000);

  afterAll(async () => {
    await witness?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("a thousand failed starts (modules missing) leave descriptors, threads, shm and RSS as they were", async () => {
    const h = host("capture");
    const before = counts();
    renameSync(modules, `${modules}.away`);
    const codes = new Map<string, number>();
    try {
      for (let i = 0; i < 1000; i += 1) {
        const code = await h.call("ping", {}, { deadlineMs: 20_000 }).then(
          () => "ok",
          (e: { code?: string }) => e.code ?? "?",
        );
        codes.set(code, (codes.get(code) ?? 0) + 1);
      }
    } finally {
      renameSync(`${modules}.away`, modules);
    }
    expect(Object.fromEntries(codes)).toEqual({ worker_crashed: 1000 });
    // The same host starts a working worker once the modules are back.
    await expect(h.call("ping", {}, { deadlineMs: 20_000 })).resolves.toMatchObject({ pong: true });
    await h.close();
    await settle();
    const after = counts();
    expect(after.fds).toBeLessThanOrEqual(before.fds);
    expect(after.threads).toBeLessThanOrEqual(before.threads);
    expect(after.shm).toBeLessThanOrEqual(before.shm);
    expect(after.rssMiB).toBeLessThanOrEqual(before.rssMiB + RSS_SLACK_MIB);
  }, 300_000);

  it("workers that die after starting, two hundred times over, leave the same", async () => {
    const capture = host("capture");
    const before = counts();
    let crashed = 0;
    for (let i = 0; i < 200; i += 1) {
      await listFaulty(capture).catch((e: { code?: string }) => {
        if (e.code === "worker_crashed") crashed += 1;
      });
    }
    expect(crashed).toBe(200);
    await capture.close();
    await settle();
    const after = counts();
    expect(after.fds).toBeLessThanOrEqual(before.fds);
    expect(after.threads).toBeLessThanOrEqual(before.threads);
    expect(after.shm).toBeLessThanOrEqual(before.shm);
    expect(after.rssMiB).toBeLessThanOrEqual(before.rssMiB + RSS_SLACK_MIB);
  }, 300_000);
});
