import { describe, expect, it } from "vitest";
import { uiError } from "../../src/shared/errors.js";
import { FairShare } from "../../src/shared/fairShare.js";

/** A call that ends when the test says so; `log` records when each one reached the worker. */
function gate(log: string[], name: string) {
  let open = (): void => undefined;
  const done = new Promise<void>((r) => {
    open = r;
  });
  return {
    call: async () => {
      log.push(name);
      await done;
      return name;
    },
    open: () => open(),
  };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("FairShare: a shared worker's calls in turn per identity", () => {
  it("admits up to the window at once, then serves the waiting identities in turn, each in its own order", async () => {
    const share = new FairShare(2);
    const log: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const run = (who: string, name: string) => {
      const g = gate(log, name);
      gates.set(name, g);
      return share.run(who, undefined, g.call);
    };
    // Alice's backlog of six, then Bob's one and Carol's two.
    const answers = [
      ...["a1", "a2", "a3", "a4", "a5", "a6"].map((n) => run("alice", n)),
      run("bob", "b1"),
      run("carol", "c1"),
      run("carol", "c2"),
    ];
    await tick();
    expect(log).toEqual(["a1", "a2"]);
    expect(share.load()).toEqual({ running: 2, waiting: 7 });
    // Each freed slot goes to the next identity in turn: alice, bob, carol, alice, carol, alice…
    for (const name of ["a1", "a2", "a3", "b1", "c1", "a4", "c2", "a5", "a6"]) {
      gates.get(name)?.open();
      await tick();
    }
    expect(log).toEqual(["a1", "a2", "a3", "b1", "c1", "a4", "c2", "a5", "a6"]);
    expect(await Promise.all(answers)).toEqual(["a1", "a2", "a3", "a4", "a5", "a6", "b1", "c1", "c2"]);
    expect(share.load()).toEqual({ running: 0, waiting: 0 });
  });

  it("a call that gives up while waiting leaves with cancelled and never runs; its slot order is kept for the rest", async () => {
    const share = new FairShare(1);
    const log: string[] = [];
    const first = gate(log, "a1");
    const running = share.run("alice", undefined, first.call);
    const quit = new AbortController();
    const gaveUp = share.run("bob", quit.signal, gate(log, "b1").call);
    const later = gate(log, "c1");
    const waiting = share.run("carol", undefined, later.call);
    await tick();
    quit.abort();
    await expect(gaveUp).rejects.toMatchObject({ code: "cancelled" });
    expect(share.load()).toEqual({ running: 1, waiting: 1 });
    first.open();
    await tick();
    later.open();
    expect(await running).toBe("a1");
    expect(await waiting).toBe("c1");
    expect(log).toEqual(["a1", "c1"]);
    // Already aborted: refused at once.
    await expect(share.run("bob", quit.signal, async () => "never")).rejects.toMatchObject({
      code: "cancelled",
    });
  });

  it("a call that fails frees its slot like one that answers", async () => {
    const share = new FairShare(1);
    const failing = share.run("alice", undefined, async () => {
      throw new Error("worker_crashed");
    });
    const next = share.run("bob", undefined, async () => "b1");
    await expect(failing).rejects.toThrow("worker_crashed");
    expect(await next).toBe("b1");
    expect(share.load()).toEqual({ running: 0, waiting: 0 });
  });

  it("one identity (the capture worker's shots): the window at once, the rest in the order they came", async () => {
    const share = new FairShare(2);
    const log: string[] = [];
    const gates = ["s1", "s2", "s3", "s4", "s5"].map((n) => gate(log, n));
    const answers = gates.map((g) => share.run("", undefined, g.call));
    await tick();
    expect(log).toEqual(["s1", "s2"]);
    expect(share.load()).toEqual({ running: 2, waiting: 3 });
    for (const g of [gates[1], gates[0], gates[2], gates[3], gates[4]]) {
      g?.open();
      await tick();
    }
    expect(log).toEqual(["s1", "s2", "s3", "s4", "s5"]);
    expect(await Promise.all(answers)).toEqual(["s1", "s2", "s3", "s4", "s5"]);
  });

  it("a wait that ends by a deadline leaves with the deadline's code (worker_timeout), any other abort with cancelled", async () => {
    const share = new FairShare(1);
    const log: string[] = [];
    const first = gate(log, "s1");
    const running = share.run("", undefined, first.call);
    const deadline = new AbortController();
    const timedOut = share.run("", deadline.signal, gate(log, "s2").call);
    const plain = new AbortController();
    const quit = share.run("", plain.signal, gate(log, "s3").call);
    await tick();
    deadline.abort(uiError("worker_timeout"));
    plain.abort(new Error("not one of ours"));
    await expect(timedOut).rejects.toMatchObject({ code: "worker_timeout" });
    await expect(quit).rejects.toMatchObject({ code: "cancelled" });
    const gone = new AbortController();
    gone.abort(uiError("worker_timeout"));
    await expect(share.run("", gone.signal, async () => "never")).rejects.toMatchObject({
      code: "worker_timeout",
    });
    first.open();
    expect(await running).toBe("s1");
    expect(log).toEqual(["s1"]);
    expect(share.load()).toEqual({ running: 0, waiting: 0 });
  });
});
