import { readdirSync, readFileSync } from "node:fs";
import { release } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { approvingDesktop, filePolicy, LOOSE_BUDGETS, ruffleWindow } from "../support/mcp.js";
import { pollUntil, ServerProcess } from "../support/serverProcess.js";

/**
 * A served process's supervisor thread asks the kernel's fair scheduler for a 0.1 ms slice
 * (set by the capture worker as it starts, src/os/linux/scheduling.ts), and nothing it starts
 * afterwards inherits it: the uia and input worker threads keep the kernel's default. Read from
 * /proc/<pid>/task/<tid>/sched (the kernel's own record), in a real `node dist/cli.js serve`.
 * Linux keeps a thread's own slice from 6.12 on; an older kernel, or one without that file,
 * skips.
 */

const SHORT_SLICE_NS = 100_000;
const SCHED_BATCH = 3;

const [major = 0, minor = 0] = release().split(".").map(Number);
const slicesKept = process.platform === "linux" && (major > 6 || (major === 6 && minor >= 12));

const read = (path: string) => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null; // gone between listing and reading
  }
};

interface ThreadSched {
  tid: number;
  slice: number | null;
  policy: number;
}

function threadsOf(pid: number): ThreadSched[] {
  const out: ThreadSched[] = [];
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const sched = read(`/proc/${pid}/task/${t}/sched`);
    const stat = read(`/proc/${pid}/task/${t}/stat`);
    if (!sched || !stat) continue;
    const slice = /^se\.slice\s*:\s*(\d+)/m.exec(sched)?.[1];
    const policy = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[38]);
    out.push({ tid: Number(t), slice: slice === undefined ? null : Number(slice), policy });
  }
  return out;
}

describe.skipIf(!slicesKept)("the supervisor thread's short slice", () => {
  const servers: ServerProcess[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });

  it("the served process's main thread has it; its worker threads, started before or after, do not", async (ctx) => {
    const d = approvingDesktop([ruffleWindow()]);
    const s = await ServerProcess.start({
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      ...LOOSE_BUDGETS,
    });
    servers.push(s);
    const main = () => threadsOf(s.pid).find((t) => t.tid === s.pid);
    if (main()?.slice === null) ctx.skip(); // no /proc sched record on this kernel
    // The capture worker is started with the server and sets the slice as it starts.
    expect(await pollUntil(() => main()?.slice === SHORT_SLICE_NS, 30_000)).toBe(true);
    const before = new Set(threadsOf(s.pid).map((t) => t.tid));
    // Started after the slice was set: the uia worker (a tree) and the input worker (a click).
    await s.ok("request_access", { hwnd: 1001 });
    await s.ok("inspect_tree", { hwnd: 1001 });
    await s.ok("click_window", { hwnd: 1001, x: 30, y: 60 });
    const threads = threadsOf(s.pid);
    const later = threads.filter((t) => !before.has(t.tid));
    expect(later.filter((t) => t.policy === SCHED_BATCH).length).toBeGreaterThanOrEqual(1); // uia
    expect(later.length).toBeGreaterThanOrEqual(2); // uia and input
    expect(threads.find((t) => t.tid === s.pid)?.slice).toBe(SHORT_SLICE_NS);
    const others = threads.filter((t) => t.tid !== s.pid).map((t) => t.slice);
    expect(others.length).toBeGreaterThan(2);
    expect(others).not.toContain(SHORT_SLICE_NS);
  }, 120_000);
});
