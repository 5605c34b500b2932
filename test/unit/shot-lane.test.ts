import { describe, expect, it } from "vitest";
import { FairShare } from "../../src/shared/fairShare.js";
import type { OpArgs } from "../../src/shared/protocol.js";
import { MemoryBudget } from "../../src/supervisor/budgets/memory.js";
import { shotLane } from "../../src/supervisor/screenshot/shotLane.js";
import type { Supervisor } from "../../src/supervisor/supervisor.js";

type LaneSup = Parameters<typeof shotLane>[0];

const tick = () => new Promise((r) => setImmediate(r));

/** A capture worker whose calls end when the test says so; `log` is the order they reached it. */
function desk(window: number, budgetBytes: number) {
  const log: string[] = [];
  const open = new Map<string, () => void>();
  const capture = {
    call: (_op: string, args: { who: string }) =>
      new Promise((resolve) => {
        log.push(args.who);
        open.set(args.who, () => resolve({ who: args.who }));
      }),
  };
  const sup = {
    shotTurns: new FairShare(window),
    memory: new MemoryBudget(budgetBytes),
    workers: { capture },
    config: { workerDeadlineMs: 1000 },
  } as unknown as LaneSup & Pick<Supervisor, "memory" | "shotTurns">;
  const shot = (who: string, name: string, bytes: number, signal = new AbortController().signal) => {
    const lane = shotLane(sup, who, signal);
    return lane.turn(bytes, () =>
      lane.call("capture.region", { who: name } as unknown as OpArgs<"capture.region">),
    );
  };
  return { sup, log, shot, end: (name: string) => open.get(name)?.() };
}

describe("ShotLane: an identity's turn first, then the shot's memory", () => {
  it("one identity's backlog holding the budget's queue does not hold back another's shot", async () => {
    // Four in flight, memory for one shot at a time: Alice's eight shots, then Bob's one.
    const d = desk(4, 100);
    const alice = Array.from({ length: 8 }, (_, i) => d.shot("alice", `a${i + 1}`, 100));
    const bob = d.shot("bob", "b1", 100);
    await tick();
    expect(d.log).toEqual(["a1"]);
    // Alice's a2–a4 hold turns and wait for memory; Bob waits for a turn, not behind a5–a8.
    expect(d.sup.shotTurns.load()).toEqual({ running: 4, waiting: 5 });
    expect(d.sup.memory.waiting).toBe(3);
    for (const name of ["a1", "a2", "a3", "a4", "a5", "b1", "a6", "a7", "a8"]) {
      expect(d.log.at(-1)).toBe(name);
      d.end(name);
      await tick();
      await tick();
    }
    await Promise.all([...alice, bob]);
    // Bob's shot came sixth of nine: reserved before the turn, it would have come last.
    expect(d.log.indexOf("b1")).toBe(5);
    expect(d.sup.memory.inUse).toBe(0);
    expect(d.sup.shotTurns.load()).toEqual({ running: 0, waiting: 0 });
  });

  it("a shot that gives up while it waits for memory leaves with cancelled, and its turn goes on", async () => {
    const d = desk(2, 100);
    const first = d.shot("alice", "a1", 100);
    const quit = new AbortController();
    const gaveUp = d.shot("alice", "a2", 100, quit.signal);
    const next = d.shot("bob", "b1", 100);
    await tick();
    expect(d.sup.memory.waiting).toBe(1);
    quit.abort();
    await expect(gaveUp).rejects.toMatchObject({ code: "cancelled" });
    await tick();
    // a2's turn went to Bob, who now waits for a1's memory.
    expect(d.sup.shotTurns.load()).toEqual({ running: 2, waiting: 0 });
    d.end("a1");
    await first;
    await tick();
    expect(d.log).toEqual(["a1", "b1"]);
    d.end("b1");
    await next;
    expect(d.sup.memory.inUse).toBe(0);
    expect(d.sup.shotTurns.load()).toEqual({ running: 0, waiting: 0 });
  });

  it("more bytes than the whole budget fail at once and free the turn", async () => {
    const d = desk(1, 100);
    await expect(d.shot("alice", "a1", 101)).rejects.toMatchObject({ code: "memory_budget_exceeded" });
    const ok = d.shot("bob", "b1", 100);
    await tick();
    expect(d.log).toEqual(["b1"]);
    d.end("b1");
    await ok;
    expect(d.sup.shotTurns.load()).toEqual({ running: 0, waiting: 0 });
  });
});
