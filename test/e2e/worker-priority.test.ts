import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { WorkerKind } from "../../src/shared/protocol.js";
import type { Isolation, WorkerHost as WorkerHostType } from "../../src/supervisor/hosting/workerHost.js";
import { approvingDesktop, ruffleWindow } from "../support/mcp.js";
import { readStat, STAT, statField } from "../support/procStat.js";

/**
 * The observation workers of the built code (capture, uia) run in Linux's batch scheduling
 * class, as threads in this process and as processes below it; the input worker and the thread
 * that hosts them do not. The class is read from /proc (the kernel's own record).
 */

const SCHED_OTHER = 0;
const SCHED_BATCH = 3;

const policyOf = (stat: string) => statField(stat, STAT.policy);

function threadPolicies(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    const stat = readStat(`/proc/self/task/${tid}/stat`);
    if (stat) out.set(tid, policyOf(stat));
  }
  return out;
}

/** Scheduling policies of the processes whose parent is this one, by pid. */
function childPolicies(): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    const stat = readStat(`/proc/${pid}/stat`);
    if (!stat) continue;
    if (statField(stat, STAT.ppid) === process.pid) out.set(pid, policyOf(stat));
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

  const added = <K, V>(before: Map<K, V>, now: Map<K, V>) =>
    [...now].filter(([k]) => !before.has(k)).map(([, v]) => v);

  it("capture and uia threads are batch threads; the input thread and this thread are not", async () => {
    expect(policyOf(readFileSync("/proc/thread-self/stat", "utf8"))).toBe(SCHED_OTHER);
    const before = threadPolicies();
    await start("input", "thread");
    expect(added(before, threadPolicies())).not.toContain(SCHED_BATCH);
    await start("capture", "thread");
    await start("uia", "thread");
    expect(added(before, threadPolicies()).filter((p) => p === SCHED_BATCH)).toHaveLength(2);
    expect(policyOf(readFileSync("/proc/thread-self/stat", "utf8"))).toBe(SCHED_OTHER);
  }, 60_000);

  it("a capture worker process is a batch process; an input worker process is not", async () => {
    const before = childPolicies();
    await start("input", "process");
    const withInput = childPolicies();
    expect(added(before, withInput)).toEqual([SCHED_OTHER]);
    await start("capture", "process");
    expect(added(withInput, childPolicies())).toEqual([SCHED_BATCH]);
  }, 60_000);
});
