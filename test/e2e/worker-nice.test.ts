import { readdirSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { approvingDesktop, filePolicy, LOOSE_BUDGETS, ruffleWindow } from "../support/mcp.js";
import { readStat, STAT, statField } from "../support/procStat.js";
import { pollUntil, ServerProcess } from "../support/serverProcess.js";

/**
 * In a real `node dist/cli.js serve`, the observation worker threads (capture, uia) run at nice
 * 5 in the batch class; the supervisor thread and the input worker thread keep nice 0 and the
 * normal class (src/os/linux/scheduling.ts). Read from /proc/<pid>/task/<tid>/stat, the
 * kernel's own record.
 */

const SCHED_OTHER = 0;
const SCHED_BATCH = 3;

interface ThreadSched {
  tid: number;
  nice: number;
  policy: number;
}

function threadsOf(pid: number): ThreadSched[] {
  const out: ThreadSched[] = [];
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const stat = readStat(`/proc/${pid}/task/${t}/stat`);
    if (stat === null) continue; // gone between listing and reading
    out.push({ tid: Number(t), nice: statField(stat, STAT.nice), policy: statField(stat, STAT.policy) });
  }
  return out;
}

describe.skipIf(process.platform !== "linux")("observation workers at a lower priority", () => {
  const servers: ServerProcess[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });

  async function serve(isolation: "thread" | "process"): Promise<ServerProcess> {
    const d = approvingDesktop([ruffleWindow()]);
    const s = await ServerProcess.start({
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: d.path,
      UIINSPECT_WORKER_ISOLATION: isolation,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      ...LOOSE_BUDGETS,
    });
    servers.push(s);
    await s.ok("request_access", { hwnd: 1001 });
    await s.ok("inspect_tree", { hwnd: 1001 });
    await s.ok("click_window", { hwnd: 1001, x: 30, y: 60 });
    return s;
  }

  it("capture and uia threads run at nice 5; every other thread of the server at nice 0", async () => {
    const s = await serve("thread");
    // A worker sets its priority as it starts, before its first answer.
    expect(await pollUntil(() => threadsOf(s.pid).filter((t) => t.nice === 5).length >= 2, 30_000)).toBe(
      true,
    );
    const threads = threadsOf(s.pid);
    const batch = threads.filter((t) => t.policy === SCHED_BATCH);
    expect(batch.length).toBeGreaterThanOrEqual(2); // capture, uia
    expect(batch.map((t) => t.nice)).toEqual(batch.map(() => 5));
    // The supervisor thread, the input worker's, V8's and libuv's: not lowered.
    const rest = threads.filter((t) => t.policy !== SCHED_BATCH);
    expect(rest.length).toBeGreaterThan(3);
    expect(rest.map((t) => [t.nice, t.policy])).toEqual(rest.map(() => [0, SCHED_OTHER]));
    expect(threads.find((t) => t.tid === s.pid)).toMatchObject({ nice: 0, policy: SCHED_OTHER });
  }, 120_000);

  it("as worker processes: capture and uia at nice 5, input at nice 0", async () => {
    const s = await serve("process");
    const niceOf = (pid: number) => threadsOf(pid).find((t) => t.tid === pid)?.nice;
    const [capture] = s.childrenRunning("workers/capture/main.js");
    const [uia] = s.childrenRunning("workers/uia/main.js");
    const [input] = s.childrenRunning("workers/input/main.js");
    expect([capture, uia, input].every((p) => typeof p === "number")).toBe(true);
    expect(
      await pollUntil(() => niceOf(capture as number) === 5 && niceOf(uia as number) === 5, 30_000),
    ).toBe(true);
    expect(niceOf(input as number)).toBe(0);
    expect(niceOf(s.pid)).toBe(0);
  }, 120_000);
});
