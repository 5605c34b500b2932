import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
import { A11ySessions, type GrantHost } from "../../src/supervisor/access/sessions.js";
import type { ResolvedTarget } from "../../src/supervisor/access/targets.js";
import { IdleRetirement } from "../../src/supervisor/hosting/idleRetirement.js";
import type { WorkerStats } from "../../src/supervisor/hosting/workerHost.js";
import { ManualTime } from "../authz/helpers.js";

const IDLE = 60_000;

function tracker(t: ManualTime, idleMs = IDLE) {
  const fired: number[] = [];
  const r = new IdleRetirement(idleMs, () => fired.push(t.now), t);
  return { r, fired };
}

describe("IdleRetirement (the policy)", () => {
  it("retires once, idleMs after creation when no call ever came", async () => {
    const t = new ManualTime();
    const start = t.now;
    const { fired } = tracker(t);
    await t.advance(IDLE - 1);
    expect(fired).toEqual([]);
    await t.advance(1);
    expect(fired).toEqual([start + IDLE]);
    await t.advance(10 * IDLE);
    expect(fired).toHaveLength(1);
    expect(t.pendingTimers).toBe(0);
  });

  it("never retires while a call runs, however long; the idle stretch starts at its end", async () => {
    const t = new ManualTime();
    const { r, fired } = tracker(t);
    r.begin();
    await t.advance(5 * IDLE);
    expect(fired).toEqual([]);
    expect(r.idleFor()).toBe(0);
    r.end();
    const ended = t.now;
    await t.advance(IDLE - 1);
    expect(fired).toEqual([]);
    expect(r.idleFor()).toBe(IDLE - 1);
    await t.advance(1);
    expect(fired).toEqual([ended + IDLE]);
  });

  it("overlapping calls: retirement waits for the last one to end", async () => {
    const t = new ManualTime();
    const { r, fired } = tracker(t);
    r.begin();
    r.begin();
    r.end();
    await t.advance(2 * IDLE);
    expect(fired).toEqual([]);
    r.end();
    await t.advance(IDLE);
    expect(fired).toHaveLength(1);
  });

  it("each use re-arms: steady use at less than idleMs apart never retires", async () => {
    const t = new ManualTime();
    const { r, fired } = tracker(t);
    for (let i = 0; i < 20; i++) {
      await t.advance(IDLE - 1000);
      if (i % 2 === 0) r.touch();
      else await r.around(async () => t.advance(500));
    }
    expect(fired).toEqual([]);
    await t.advance(IDLE);
    expect(fired).toHaveLength(1);
  });

  it("around() ends the call also when it fails", async () => {
    const t = new ManualTime();
    const { r, fired } = tracker(t);
    await expect(r.around(() => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    await t.advance(IDLE);
    expect(fired).toHaveLength(1);
  });

  it("0 means never; stop() cancels the pending retirement", async () => {
    const t = new ManualTime();
    const never = tracker(t, 0);
    never.r.touch();
    await t.advance(100 * IDLE);
    expect(never.fired).toEqual([]);
    const stopped = tracker(t);
    await t.advance(IDLE - 1);
    stopped.r.stop();
    await t.advance(IDLE);
    expect(stopped.fired).toEqual([]);
    expect(t.pendingTimers).toBe(0);
  });
});

/** A stand-in for a grant's uia worker host: records what the sessions asked of it. */
class StubHost implements GrantHost {
  readonly ops: string[] = [];
  closed = false;
  call: GrantHost["call"] = async (op) => {
    if (this.closed) throw new Error("called after close");
    this.ops.push(op);
    return {} as never;
  };
  close = async (): Promise<void> => {
    this.closed = true;
  };
  warm = async (): Promise<void> => undefined;
  onTeardown: GrantHost["onTeardown"] = () => undefined;
  stats = (): WorkerStats => ({
    kind: "uia",
    state: this.closed ? "stopped" : "ready",
    restarts: 0,
    crashes: 0,
    timeouts: 0,
    inflight: 0,
    isolation: "thread",
  });
}

const target = {
  window: { hwnd: "0x1" },
  instance: { pid: 10, start_time: "1", exe_path: "/usr/bin/app", session: "0" },
  instanceKey: "10:1",
  expectation: {},
} as unknown as ResolvedTarget;

function stale(f: () => unknown): boolean {
  try {
    f();
    return false;
  } catch (e) {
    return isUiError(e) && e.code === "element_stale";
  }
}

describe("A11ySessions: idle uia workers are retired", () => {
  function setup() {
    const t = new ManualTime();
    const hosts: StubHost[] = [];
    const sessions = new A11ySessions(
      () => {
        const h = new StubHost();
        hosts.push(h);
        return h;
      },
      pino({ level: "silent" }),
      "thread",
      { idleRetireMs: IDLE, time: t },
    );
    return { t, hosts, sessions };
  }
  const inspect = (s: A11ySessions, rec: ReturnType<A11ySessions["sessionFor"]>) =>
    s.call(rec, "a11y.inspect", {} as never, { deadlineMs: 1000 });

  it("after idleMs without a call the worker is disposed and stopped, its refs are element_stale, and the next call starts a new worker", async () => {
    const { t, hosts, sessions } = setup();
    const first = sessions.sessionFor("c1", target);
    await inspect(sessions, first);
    const ref = `${first.tag}.e1`;
    expect(sessions.lookupRef(ref, "c1").inner).toBe("e1");

    await t.advance(IDLE - 1);
    expect(hosts[0].closed).toBe(false);
    await t.advance(1);
    expect(hosts[0].ops).toEqual(["a11y.inspect", "a11y.dispose"]);
    expect(hosts[0].closed).toBe(true);
    expect(stale(() => sessions.lookupRef(ref, "c1"))).toBe(true);
    expect(stale(() => sessions.call(first, "a11y.inspect", {} as never, { deadlineMs: 1000 }))).toBe(true);
    expect(sessions.stats()).toMatchObject({ sessions: 0, idle_retirements: 1 });

    const again = sessions.sessionFor("c1", target);
    expect(again.tag).not.toBe(first.tag);
    await inspect(sessions, again);
    expect(hosts).toHaveLength(2);
    expect(hosts[1].ops).toEqual(["a11y.inspect"]);
    expect(sessions.stats()).toMatchObject({ sessions: 1, idle_retirements: 1 });
  });

  it("an identity in use keeps its refs; another identity's idleness drops only its own, on the same worker", async () => {
    const { t, hosts, sessions } = setup();
    const busy = sessions.sessionFor("c1", target);
    const idle = sessions.sessionFor("c2", target);
    expect(idle.key).not.toBe(busy.key);
    for (let i = 0; i < 5; i++) {
      await t.advance(IDLE / 2);
      await inspect(sessions, sessions.sessionFor("c1", target));
    }
    // One worker for the instance: the idle identity's key was disposed there, the worker runs on.
    expect(hosts).toHaveLength(1);
    expect(hosts[0].closed).toBe(false);
    expect(hosts[0].ops).toContain("a11y.dispose");
    expect(sessions.lookupRef(`${busy.tag}.e1`, "c1").tag).toBe(busy.tag);
    expect(stale(() => sessions.lookupRef(`${idle.tag}.e1`, "c2"))).toBe(true);
    expect(sessions.stats()).toMatchObject({ sessions: 1, workers: 1, idle_retirements: 1 });
  });

  it("a session looked up just before the deadline is not retired before its call", async () => {
    const { t, hosts, sessions } = setup();
    sessions.sessionFor("c1", target);
    await t.advance(IDLE - 1);
    const rec = sessions.sessionFor("c1", target);
    await t.advance(IDLE - 1);
    await inspect(sessions, rec);
    expect(hosts).toHaveLength(1);
    expect(hosts[0].closed).toBe(false);
  });
});
