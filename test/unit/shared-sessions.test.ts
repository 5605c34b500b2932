import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { isUiError, uiError } from "../../src/shared/errors.js";
import { A11ySessions, type GrantHost } from "../../src/supervisor/access/sessions.js";
import type { ResolvedTarget } from "../../src/supervisor/access/targets.js";
import type { WorkerStats } from "../../src/supervisor/hosting/workerHost.js";

/**
 * The instance's one uia worker is shared by every identity on it, so a crash is the
 * instance's: every call in flight on it fails with worker_crashed whoever made it, every
 * identity's refs there become stale, and the next call restarts the worker. Other instances'
 * workers are untouched. A stand-in host plays the worker (WorkerHost's own crash handling,
 * failing what it held, is tested with real threads in test/e2e/worker-crash.test.ts).
 */
class CrashableHost implements GrantHost {
  readonly ops: Array<{ op: string; key: unknown }> = [];
  private readonly held = new Set<(e: unknown) => void>();
  private readonly listeners: Array<(r: "worker_timeout" | "worker_crashed") => void> = [];
  closed = false;
  call: GrantHost["call"] = (op, args) => {
    this.ops.push({ op, key: (args as { session_key?: unknown }).session_key });
    if (op === "a11y.dispose") return Promise.resolve({ disposed: true } as never);
    return new Promise((_resolve, reject) => this.held.add(reject));
  };
  close = async (): Promise<void> => {
    this.closed = true;
  };
  warm = async (): Promise<void> => undefined;
  onTeardown: GrantHost["onTeardown"] = (l) => {
    this.listeners.push(l);
  };
  stats = (): WorkerStats => ({
    kind: "uia",
    state: this.closed ? "stopped" : "ready",
    restarts: 0,
    crashes: 0,
    timeouts: 0,
    inflight: this.held.size,
    isolation: "thread",
  });
  crash(): void {
    for (const reject of this.held) reject(uiError("worker_crashed"));
    this.held.clear();
    for (const l of this.listeners) l("worker_crashed");
  }
}

const targetOf = (pid: number, hwnd: string) =>
  ({
    window: { hwnd },
    instance: { pid, start_time: "1", exe_path: "/usr/bin/app", session: "0" },
    instanceKey: `${pid}:1`,
    expectation: {},
  }) as unknown as ResolvedTarget;

function setup() {
  const hosts: CrashableHost[] = [];
  const sessions = new A11ySessions(
    () => {
      const h = new CrashableHost();
      hosts.push(h);
      return h;
    },
    pino({ level: "silent" }),
    "thread",
    { idleRetireMs: 0 },
  );
  return { hosts, sessions };
}

const code = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: unknown) => (isUiError(e) ? e.code : "?"),
  );
const syncCode = (f: () => unknown) => {
  try {
    f();
    return "ok";
  } catch (e) {
    return isUiError(e) ? e.code : "?";
  }
};

describe("A11ySessions: one worker per process instance", () => {
  const A = targetOf(10, "0x1");
  const A2 = targetOf(10, "0x2");
  const B = targetOf(20, "0x3");

  it("identities and windows of one instance share one worker, each identity under its own key", () => {
    const { hosts, sessions } = setup();
    const c1 = sessions.sessionFor("c1", A);
    const c1b = sessions.sessionFor("c1", A2);
    const c2 = sessions.sessionFor("c2", A);
    sessions.sessionFor("c3", B);
    expect(hosts).toHaveLength(2);
    expect(c1b.key).toBe(c1.key);
    expect(c2.key).not.toBe(c1.key);
    expect(new Set([c1.tag, c1b.tag, c2.tag]).size).toBe(3);
    expect(sessions.stats()).toMatchObject({ workers: 2, sessions: 3 });
    // A tag answers only to its own identity.
    expect(syncCode(() => sessions.lookupRef(`${c1.tag}.e1`, "c2"))).toBe("element_stale");
    expect(sessions.lookupRef(`${c1.tag}.e1`, "c1").key).toBe(c1.key);
  });

  it("a crash fails every identity's call in flight on that instance with worker_crashed, only there, and the next call gets a fresh worker", async () => {
    const { hosts, sessions } = setup();
    const c1 = sessions.sessionFor("c1", A);
    const c2 = sessions.sessionFor("c2", A);
    const other = sessions.sessionFor("c1", B);
    expect(hosts).toHaveLength(2);
    const inflight = [c1, c2].map((r) =>
      code(sessions.call(r, "a11y.inspect", {} as never, { deadlineMs: 1000 })),
    );
    const elsewhere = code(sessions.call(other, "a11y.inspect", {} as never, { deadlineMs: 1000 }));
    hosts[0]?.crash();
    expect(await Promise.all(inflight)).toEqual(["worker_crashed", "worker_crashed"]);
    // Every identity's refs on the crashed instance are stale; the other instance's are not.
    for (const [r, c] of [
      [c1, "c1"],
      [c2, "c2"],
    ] as const)
      expect(syncCode(() => sessions.lookupRef(`${r.tag}.e1`, c))).toBe("element_stale");
    expect(sessions.lookupRef(`${other.tag}.e1`, "c1").tag).toBe(other.tag);
    expect(hosts[1]?.stats().inflight).toBe(1);
    // The next call on the instance restarts the worker through the same host (its backoff
    // holds across crashes), with new tags.
    const again = sessions.sessionFor("c2", A);
    expect(hosts).toHaveLength(2);
    expect(again.tag).not.toBe(c2.tag);
    expect(sessions.lookupRef(`${again.tag}.e1`, "c2").key).toBe(c2.key);
    expect(syncCode(() => sessions.lookupRef(`${c2.tag}.e1`, "c2"))).toBe("element_stale");
    expect(
      await code(sessions.call(again, "a11y.dispose", { session_key: again.key }, { deadlineMs: 1000 })),
    ).toBe("ok");
    hosts[1]?.crash();
    expect(await elsewhere).toBe("worker_crashed");
  });

  it("a call waiting for its turn that outlived its session never reaches the worker: element_stale", async () => {
    const keyed = (r: { key: string }) => ({ session_key: r.key }) as never;
    const { hosts, sessions } = setup();
    const busy = sessions.sessionFor("busy", A);
    const leaving = sessions.sessionFor("leaving", A);
    const crashedUnder = sessions.sessionFor("crashed-under", A);
    // Four calls of one identity fill the shared worker's window; the others wait their turn.
    const held = Array.from({ length: 4 }, () =>
      code(sessions.call(busy, "a11y.inspect", keyed(busy), { deadlineMs: 1000 })),
    );
    const left = code(sessions.call(leaving, "a11y.act", keyed(leaving), { deadlineMs: 1000 }));
    const stale = code(
      sessions.call(crashedUnder, "a11y.inspect", keyed(crashedUnder), { deadlineMs: 1000 }),
    );
    expect(sessions.stats()).toMatchObject({ inflight: 4, queued: 2 });
    // One identity releases while its call waits: the call is refused at its turn.
    sessions.disposeByInstance(A.instanceKey, "leaving");
    // The worker crashes: the four in flight fail with it; the call still waiting is refused at
    // its turn instead of going to the restarted worker with a key it never had.
    hosts[0]?.crash();
    expect(await Promise.all(held)).toEqual(Array(4).fill("worker_crashed"));
    expect(await left).toBe("element_stale");
    expect(await stale).toBe("element_stale");
    const sent = (hosts[0]?.ops ?? []).filter((o) => o.op !== "a11y.dispose").map((o) => o.key);
    expect(sent).toEqual(Array(4).fill(busy.key));
    expect(sessions.stats()).toMatchObject({ queued: 0 });
  });

  it("one identity leaving disposes only its key; the last one leaving stops the worker", async () => {
    const { hosts, sessions } = setup();
    const c1 = sessions.sessionFor("c1", A);
    const c2 = sessions.sessionFor("c2", A);
    sessions.disposeByInstance(A.instanceKey, "c1");
    await Promise.resolve();
    expect(hosts[0]?.ops).toEqual([{ op: "a11y.dispose", key: c1.key }]);
    expect(hosts[0]?.closed).toBe(false);
    expect(syncCode(() => sessions.call(c1, "a11y.inspect", {} as never, { deadlineMs: 1000 }))).toBe(
      "element_stale",
    );
    sessions.disposeByClient("c2");
    await new Promise((r) => setImmediate(r));
    expect(hosts[0]?.ops.map((o) => o.key)).toEqual([c1.key, c2.key]);
    expect(hosts[0]?.closed).toBe(true);
    expect(sessions.stats()).toMatchObject({ workers: 0, sessions: 0 });
  });
});
