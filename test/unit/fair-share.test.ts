import { describe, expect, it } from "vitest";
import { FairShare } from "../../src/supervisor/hosting/fairShare.js";

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
});
