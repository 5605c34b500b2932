import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { WorkerKind } from "../../src/shared/protocol.js";
import type { Isolation, WorkerHost as WorkerHostType } from "../../src/supervisor/hosting/workerHost.js";
import { OBSERVATION_WORKER_NICE, yieldCpuToSupervisor } from "../../src/workers/priority.js";
import { approvingDesktop, ruffleWindow } from "../support/mcp.js";

/**
 * The observation workers of the built code (capture, uia) run below the supervisor thread's CPU
 * priority, as threads in this process and as processes below it; the input worker and the
 * thread that hosts them do not. Nice values are read from /proc, which the kernel keeps.
 */

/** Field 19 of a stat line (after the parenthesised name): the nice value. */
const niceOf = (stat: string) => Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
const statOf = (path: string) => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null; // gone between listing and reading
  }
};

function threadNices(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    const stat = statOf(`/proc/self/task/${tid}/stat`);
    if (stat) out.set(tid, niceOf(stat));
  }
  return out;
}

/** Nice values of the processes whose parent is this one. */
function childNices(): number[] {
  const out: number[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    const stat = statOf(`/proc/${pid}/stat`);
    if (!stat) continue;
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[1]) === process.pid) out.push(Number(fields[16]));
  }
  return out;
}

const WORKER_HOST = pathToFileURL(
  resolve(import.meta.dirname, "../../dist/supervisor/hosting/workerHost.js"),
).href;

describe.skipIf(process.platform !== "linux")("observation workers yield the CPU to the supervisor", () => {
  const desktop = approvingDesktop([ruffleWindow()]);
  const hosts: WorkerHostType[] = [];
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((h) => h.close()));
  });

  async function start(kind: WorkerKind, isolation: Isolation): Promise<void> {
    const { WorkerHost } = (await import(WORKER_HOST)) as { WorkerHost: typeof WorkerHostType };
    const h = new WorkerHost({
      init: { kind, platform: "fake", fake_desktop: desktop.path, log_level: "silent" },
      isolation,
      logger: pino({ level: "silent" }),
    });
    hosts.push(h);
    await h.call("ping", {}, { deadlineMs: 30_000 });
  }

  it("capture and uia threads run at nice 5, the input thread and this thread as before", async () => {
    const own = niceOf(readFileSync("/proc/thread-self/stat", "utf8"));
    const before = threadNices();
    await start("input", "thread");
    const withInput = threadNices();
    const newWith = (m: Map<string, number>) => [...m].filter(([tid]) => !before.has(tid)).map(([, n]) => n);
    expect(newWith(withInput).every((n) => n === own)).toBe(true);
    await start("capture", "thread");
    await start("uia", "thread");
    const lowered = newWith(threadNices()).filter((n) => n === own + OBSERVATION_WORKER_NICE);
    expect(lowered).toHaveLength(2);
    expect(niceOf(readFileSync("/proc/thread-self/stat", "utf8"))).toBe(own);
  }, 60_000);

  it("a capture worker process runs at nice 5, an input worker process as before", async () => {
    const own = niceOf(readFileSync("/proc/thread-self/stat", "utf8"));
    const before = childNices().length;
    await start("input", "process");
    expect(childNices().slice(before)).toEqual([own]);
    await start("capture", "process");
    expect(childNices().sort()).toContain(own + OBSERVATION_WORKER_NICE);
  }, 60_000);

  it("lowers nothing off Linux, where the call would lower the whole process", () => {
    const calls: number[][] = [];
    expect(yieldCpuToSupervisor("win32", (pid, p) => calls.push([pid, p]))).toBe(false);
    expect(yieldCpuToSupervisor("linux", (pid, p) => calls.push([pid, p]))).toBe(true);
    expect(calls).toEqual([[0, OBSERVATION_WORKER_NICE]]);
  });
});
