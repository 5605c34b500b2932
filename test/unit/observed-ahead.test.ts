import { describe, expect, it } from "vitest";
import { uiError } from "../../src/shared/errors.js";
import type { OpArgs, OpResult, TargetExpectation } from "../../src/shared/protocol.js";
import type { AheadOp, HeldObservation } from "../../src/supervisor/access/callFacts.js";
import { sameExpectation, takeAhead } from "../../src/supervisor/access/observedAhead.js";
import type { SessionRecord } from "../../src/supervisor/access/sessions.js";

const instance = {
  pid: 4001,
  start_time: "2026-11-30T08:00:00.000Z",
  exe_path: "/usr/bin/app",
  session: "1",
};
const target: TargetExpectation = { hwnd: "1001", instance, shown_before: ["2002"] };
const session: SessionRecord = {
  tag: "s1",
  key: "s1-aa",
  client: "c1",
  instanceKey: "i1",
  instance,
  hwnd: "1001",
};
const find = (over: Partial<OpArgs<"a11y.find">> = {}): OpArgs<"a11y.find"> => ({
  session_key: "s1-aa",
  target,
  name_contains: "Play",
  role: null,
  automation_id: null,
  state: null,
  max_results: 50,
  deadline_ms: 5000,
  ...over,
});
const ANSWER = { elements: [], truncated: false } as unknown as OpResult<AheadOp>;

function held(result: Promise<OpResult<AheadOp>>, lost: ReturnType<HeldObservation["lost"]> = null) {
  let dropped = 0;
  result.catch(() => {});
  const h: HeldObservation = {
    op: "a11y.find",
    session,
    args: find(),
    result,
    drop: () => {
      dropped += 1;
    },
    lost: () => lost,
  };
  return { h, dropped: () => dropped };
}

describe("an observation held for its authorized call", () => {
  it("answers once, for exactly its op, session, expectation and walk", async () => {
    const a = held(Promise.resolve(ANSWER));
    // The authorized call's own request carries no ahead flag; that is not a difference.
    expect(await takeAhead(a.h, session, "a11y.find", find({ ahead: false }))).toEqual({ answer: ANSWER });
    // Read once: a second observation in the same call asks afresh.
    expect(await takeAhead(a.h, session, "a11y.find", find())).toBeNull();
    expect(await takeAhead(null, session, "a11y.find", find())).toBeNull();
  });

  it("anything else is dropped and asked afresh", async () => {
    const other = { ...target, instance: { ...instance, start_time: "2026-11-30T09:00:00.000Z" } };
    const inspect: OpArgs<"a11y.inspect"> = {
      session_key: "s1-aa",
      target,
      max_depth: 8,
      max_nodes: 500,
      deadline_ms: 5000,
      root_ref: null,
    };
    const cases: Array<[string, SessionRecord, AheadOp, OpArgs<AheadOp>]> = [
      ["op", session, "a11y.inspect", inspect],
      ["session tag", { ...session, tag: "s2" }, "a11y.find", find()],
      ["session key", { ...session, key: "s1-bb" }, "a11y.find", find()],
      ["instance", session, "a11y.find", find({ target: other })],
      ["window", session, "a11y.find", find({ target: { ...target, hwnd: "1002" } })],
      ["shown before", session, "a11y.find", find({ target: { ...target, shown_before: [] } })],
      ["limits", session, "a11y.find", find({ max_results: 5 })],
      ["filter", session, "a11y.find", find({ name_contains: "Stop" })],
    ];
    for (const [name, s, op, args] of cases) {
      const a = held(Promise.resolve(ANSWER));
      expect(await takeAhead(a.h, s, op, args), name).toBeNull();
      expect(a.dropped(), name).toBe(1);
    }
  });

  it("a crashed or hung worker is the call's answer; any other failure is asked again", async () => {
    for (const code of ["worker_crashed", "worker_timeout"] as const) {
      const a = held(Promise.reject(uiError(code)));
      await expect(takeAhead(a.h, session, "a11y.find", find())).rejects.toMatchObject({ code });
    }
    for (const code of ["element_stale", "target_changed", "minimized", "cancelled"] as const) {
      const a = held(Promise.reject(uiError(code)));
      expect(await takeAhead(a.h, session, "a11y.find", find()), code).toBeNull();
    }
  });

  it("a worker that died under it before the call took it is the answer for the window's new session too", async () => {
    // The crash forgot the session's tags: the call's session is a new record on the same
    // identity, instance and window. Asking again would walk a restarted worker on the provider.
    const renewed = { ...session, tag: "s7", key: "s7-cc" };
    for (const code of ["worker_crashed", "worker_timeout"] as const) {
      const a = held(Promise.reject(uiError(code)), code);
      await expect(takeAhead(a.h, renewed, "a11y.find", find())).rejects.toMatchObject({ code });
    }
    // Another window's, or another identity's, session is not that call's: asked afresh.
    for (const other of [
      { ...renewed, hwnd: "1002" },
      { ...renewed, instanceKey: "i2" },
      { ...renewed, client: "c2" },
    ]) {
      const a = held(Promise.reject(uiError("worker_crashed")), "worker_crashed");
      expect(await takeAhead(a.h, other, "a11y.find", find())).toBeNull();
      expect(a.dropped()).toBe(1);
    }
  });

  it("compares expectations by instance identity and the windows shown before", () => {
    expect(sameExpectation(target, { ...target, shown_before: ["2002"] })).toBe(true);
    expect(sameExpectation({ ...target, shown_before: undefined }, { ...target, shown_before: [] })).toBe(
      true,
    );
    expect(sameExpectation(target, { ...target, shown_before: ["2003"] })).toBe(false);
    expect(sameExpectation(target, { ...target, instance: { ...instance, pid: 4002 } })).toBe(false);
  });
});
