import { describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
import {
  budgetConfigFromEnv,
  MemoryBudget,
  memoryBudgetBytesFromEnv,
  memoryBudgetFromEnv,
  RateBudgets,
  type Reservation,
  SlidingWindowLimiter,
} from "../../src/supervisor/budgets.js";
import { flush, ManualTime, outcome, peekState } from "./helpers.js";

const LIMITS = {
  max_actions_per_minute: 5,
  max_text_chars_per_minute: 100,
  max_screenshot_pixels_per_minute: 1000,
};

function thrown(f: () => unknown): { code: string; retryAfterMs: number | undefined; message: string } {
  try {
    f();
  } catch (e) {
    if (isUiError(e)) return { code: e.code, retryAfterMs: e.retryAfterMs, message: e.message };
    throw e;
  }
  return { code: "ok", retryAfterMs: undefined, message: "" };
}

describe("SlidingWindowLimiter", () => {
  it("admits up to the limit, then refuses with the time until enough ages out", () => {
    const t = new ManualTime(0);
    const l = new SlidingWindowLimiter(3, 60_000, t.clock);
    expect(l.tryTake("k")).toEqual({ ok: true });
    t.now = 10_000;
    expect(l.tryTake("k")).toEqual({ ok: true });
    expect(l.tryTake("k")).toEqual({ ok: true });
    t.now = 20_500;
    const r = l.tryTake("k");
    // The take at t=0 (bucket 0) leaves the window when bucket 61 starts: at 61 000 ms.
    expect(r).toEqual({ ok: false, retryAfterMs: 61_000 - 20_500 });
    expect(l.usage("k")).toEqual({ used: 3, limit: 3 });
    t.now = 60_999;
    expect(l.peek("k").ok).toBe(false); // conservative: held for at least the whole window
    t.now = 61_000;
    expect(l.peek("k")).toEqual({ ok: true });
    expect(l.tryTake("k")).toEqual({ ok: true });
    expect(l.tryTake("k").ok).toBe(false);
  });

  it("never admits more than the limit within any real window span", () => {
    const t = new ManualTime(0);
    const l = new SlidingWindowLimiter(10, 60_000, t.clock);
    const taken: number[] = [];
    for (let now = 0; now < 400_000; now += 737) {
      t.now = now;
      if (l.tryTake("k").ok) taken.push(now);
    }
    for (let i = 0; i < taken.length; i++) {
      const inWindow = taken.filter((x) => x >= taken[i] && x < taken[i] + 60_000).length;
      expect(inWindow).toBeLessThanOrEqual(10);
    }
    expect(taken.length).toBeGreaterThan(50); // and it does keep admitting as time passes
  });

  it("peek never takes; amounts and per-call limits work; an amount above the limit can never pass", () => {
    const t = new ManualTime(0);
    const l = new SlidingWindowLimiter(100, 60_000, t.clock);
    for (let i = 0; i < 5; i++) expect(l.peek("k", 100).ok).toBe(true);
    expect(l.usage("k").used).toBe(0);
    expect(l.tryTake("k", 60).ok).toBe(true);
    expect(l.tryTake("k", 50).ok).toBe(false);
    expect(l.tryTake("k", 50, 200).ok).toBe(true);
    expect(l.tryTake("k", 101)).toMatchObject({ ok: false, exceedsLimit: true });
    expect(l.usage("k", 200)).toEqual({ used: 110, limit: 200 });
  });

  it("drops keys idle past the window, lazily", () => {
    const t = new ManualTime(0);
    const l = new SlidingWindowLimiter(5, 60_000, t.clock);
    for (let i = 0; i < 1000; i++) l.tryTake(`k${i}`);
    expect(l.size).toBe(1000);
    t.now = 30_000;
    l.tryTake("fresh");
    expect(l.size).toBe(1001); // nothing is idle yet
    t.now = 61_000;
    l.tryTake("later");
    expect(l.size).toBe(2); // the 1000 old keys went in one amortized sweep
    expect(l.usage("k1")).toEqual({ used: 0, limit: 5 });
  });

  it("rejects bad amounts", () => {
    const l = new SlidingWindowLimiter(5, 60_000, () => 0);
    expect(thrown(() => l.tryTake("k", -1)).code).toBe("invalid_argument");
    expect(thrown(() => l.tryTake("k", Number.NaN)).code).toBe("invalid_argument");
    expect(thrown(() => l.refund("k", -1, 0)).code).toBe("invalid_argument");
  });

  it("refund gives a failed call's amount back from its own bucket; others still age out on time", () => {
    const t = new ManualTime(0);
    const l = new SlidingWindowLimiter(1000, 60_000, t.clock);
    expect(l.lastTakeBucket("k")).toBeNull();
    expect(l.tryTake("k", 600).ok).toBe(true);
    t.now = 30_000;
    // Ten failing 400s in a row: each is taken, then given back once it failed.
    for (let i = 0; i < 10; i++) {
      expect(l.tryTake("k", 400).ok).toBe(true);
      const bucket = l.lastTakeBucket("k")!;
      expect(bucket).toBe(Math.floor(t.now / 1000));
      t.now += 1_500; // the capture ran for a while before it failed
      expect(l.refund("k", 400, bucket)).toBe(400);
    }
    expect(l.usage("k").used).toBe(600);
    expect(l.tryTake("k", 400).ok).toBe(true);
    // The 600 taken at t=0 leaves when bucket 61 starts, as if nothing had been refunded.
    expect(l.tryTake("k", 1)).toEqual({ ok: false, retryAfterMs: 61_000 - t.now });
    t.now = 61_000;
    expect(l.usage("k").used).toBe(400);
    // Refunds touch only what is there: another key, nothing, or more than the bucket holds.
    expect(l.refund("other", 5, 45)).toBe(0);
    expect(l.refund("k", 0, 45)).toBe(0);
    expect(l.refund("k", 500, 45)).toBe(400);
    expect(l.usage("k").used).toBe(0);
  });

  it("refund leaves other buckets alone, so concurrent failures each get their own amount back", () => {
    const t = new ManualTime(0);
    const l = new SlidingWindowLimiter(1000, 60_000, t.clock);
    t.now = 10_500;
    l.tryTake("k", 300);
    const first = l.lastTakeBucket("k")!;
    t.now = 11_200;
    l.tryTake("k", 200);
    const second = l.lastTakeBucket("k")!;
    t.now = 11_900;
    l.tryTake("k", 100); // a capture that succeeds
    // The later one fails first, then the earlier one: each comes out of its own bucket.
    expect(l.refund("k", 200, second)).toBe(200);
    expect(l.refund("k", 300, first)).toBe(300);
    expect(l.usage("k").used).toBe(100);
    // The surviving 100 (bucket 11) is held until bucket 72 starts, not a bucket less.
    t.now = 71_999;
    expect(l.usage("k").used).toBe(100);
    t.now = 72_000;
    expect(l.usage("k").used).toBe(0);
  });

  it("refund gives nothing back once the take's bucket has left the window", () => {
    const t = new ManualTime(0);
    const l = new SlidingWindowLimiter(1000, 60_000, t.clock);
    l.tryTake("k", 100); // bucket 0, counted until 61 000
    const old = l.lastTakeBucket("k")!;
    t.now = 61_500;
    l.tryTake("k", 100); // bucket 61, which reuses bucket 0's slot in the ring
    const recent = l.lastTakeBucket("k")!;
    expect(l.refund("k", 100, old)).toBe(0); // aged out already; must not eat the newer take
    expect(l.usage("k").used).toBe(100);
    expect(l.refund("k", 100, recent + 5)).toBe(0); // a bucket not reached yet
    expect(l.refund("k", 100, recent)).toBe(100);
    expect(l.usage("k").used).toBe(0);
  });

  it("with refunds, never holds more than the limit within any real window span", () => {
    const t = new ManualTime(0);
    const l = new SlidingWindowLimiter(1000, 60_000, t.clock);
    // A deterministic mix of takes, some of which fail a few seconds later and are refunded.
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const kept: Array<{ at: number; amount: number }> = [];
    const running: Array<{ at: number; amount: number; bucket: number; failsAt: number }> = [];
    let admitted = 0;
    for (let now = 0; now < 600_000; now += 250 + Math.floor(rand() * 900)) {
      t.now = now;
      for (const p of running.filter((p) => p.failsAt <= now)) {
        expect(l.refund("k", p.amount, p.bucket)).toBe(p.amount);
        running.splice(running.indexOf(p), 1);
      }
      const amount = 50 + Math.floor(rand() * 300);
      if (!l.tryTake("k", amount).ok) continue;
      admitted += amount;
      const bucket = l.lastTakeBucket("k")!;
      if (rand() < 0.5) running.push({ at: now, amount, bucket, failsAt: now + Math.floor(rand() * 20_000) });
      else kept.push({ at: now, amount });
    }
    // Every take that was never given back counts, in every real window span it falls in.
    const held = [...kept, ...running];
    for (const a of held) {
      const inWindow = held.filter((x) => x.at >= a.at && x.at < a.at + 60_000);
      expect(inWindow.reduce((n, x) => n + x.amount, 0)).toBeLessThanOrEqual(1000);
    }
    // Refunds did free capacity: without them no more than 11 windows' worth could pass in 600 s.
    expect(admitted).toBeGreaterThan(11 * 1000);
  });
});

describe("RateBudgets", () => {
  const cfg = { discoveryPerMinute: 3, inspectionsPerMinute: 4, clientActionsPerMinute: 2 };

  it("keeps discovery, inspection and action separate per client", () => {
    const t = new ManualTime(0);
    const b = new RateBudgets(cfg, t.clock);
    for (let i = 0; i < 4; i++) b.take("inspection", "c1");
    expect(thrown(() => b.take("inspection", "c1")).code).toBe("rate_limited");
    // A read loop that exhausted inspections does not eat the action budget, and vice versa.
    b.take("action", "c1");
    b.take("action", "c1");
    const r = thrown(() => b.take("action", "c1"));
    expect(r.code).toBe("rate_limited");
    expect(r.retryAfterMs).toBeGreaterThan(0);
    // The refusal names the limit and the setting that raises it.
    expect(r.message).toContain("2 actions per minute");
    expect(r.message).toContain("UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE");
    for (let i = 0; i < 3; i++) b.take("discovery", "c1");
    expect(thrown(() => b.take("discovery", "c1")).code).toBe("rate_limited");
    // Another client has its own budgets.
    b.take("action", "c2");
    expect(b.state("c1").client).toEqual({
      discovery: { used: 3, limit: 3 },
      inspection: { used: 4, limit: 4 },
      action: { used: 2, limit: 2 },
    });
  });

  it("wouldAllow answers what take would do and takes nothing", () => {
    const t = new ManualTime(0);
    const b = new RateBudgets(cfg, t.clock);
    for (let i = 0; i < 3; i++) b.take("inspection", "c1");
    for (let i = 0; i < 10; i++) expect(b.wouldAllow("inspection", "c1")).toBe(true);
    expect(b.state("c1").client.inspection).toEqual({ used: 3, limit: 4 });
    b.take("inspection", "c1");
    expect(b.wouldAllow("inspection", "c1")).toBe(false);
    expect(thrown(() => b.take("inspection", "c1")).code).toBe("rate_limited");
    // Per client and per kind, and an application's share counts as take's does.
    expect(b.wouldAllow("inspection", "c2")).toBe(true);
    expect(b.wouldAllow("action", "c1")).toBe(true);
    const app = { key: "i1", limits: { ...LIMITS, max_actions_per_minute: 1 } };
    b.take("action", "c2", app);
    expect(b.wouldAllow("action", "c1", app)).toBe(false);
    // Once the minute has passed, the budget is back.
    t.now = 61_000;
    expect(b.wouldAllow("inspection", "c1")).toBe(true);
  });

  it("is all-or-nothing: when one limiter refuses, nothing is taken from the others", () => {
    const t = new ManualTime(0);
    const b = new RateBudgets({ ...cfg, clientActionsPerMinute: 100 }, t.clock);
    const app = { key: "inst", limits: LIMITS };
    b.take("action", "c1", { ...app, textChars: 90 });
    // 20 more characters would exceed 100 chars/min on the application.
    const r = thrown(() => b.take("action", "c1", { ...app, textChars: 20 }));
    expect(r.code).toBe("rate_limited");
    expect(r.retryAfterMs).toBe(61_000);
    const s = b.state("c1", app);
    expect(s.client.action.used).toBe(1);
    expect(s.application).toEqual({
      actions: { used: 1, limit: 5 },
      text_chars: { used: 90, limit: 100 },
      screenshot_pixels: { used: 0, limit: 1000 },
    });
    // And the other way round: the client limiter refuses, the application keeps its budget.
    const tight = new RateBudgets({ ...cfg, clientActionsPerMinute: 1 }, t.clock);
    tight.take("action", "c1", app);
    expect(thrown(() => tight.take("action", "c1", { ...app, textChars: 10 })).code).toBe("rate_limited");
    expect(tight.state("c1", app).application?.text_chars.used).toBe(0);
    expect(tight.state("c1", app).application?.actions.used).toBe(1);
  });

  it("counts per-application actions across clients and reports the longest wait", () => {
    const t = new ManualTime(0);
    const b = new RateBudgets({ ...cfg, clientActionsPerMinute: 100 }, t.clock);
    const app = { key: "inst", limits: LIMITS };
    for (let i = 0; i < 5; i++) {
      t.now = i * 5_000;
      b.take("action", `client${i}`, app);
    }
    t.now = 30_000;
    const r = thrown(() => b.take("action", "client9", app));
    expect(r.code).toBe("rate_limited");
    expect(r.retryAfterMs).toBe(61_000 - 30_000);
    // Inspections do not count as application actions.
    b.take("inspection", "client9", app);
  });

  it("a call larger than the whole budget is refused without retry_after", () => {
    const b = new RateBudgets(cfg, () => 0);
    const r = thrown(() => b.take("inspection", "c", { key: "i", limits: LIMITS, screenshotPixels: 5000 }));
    expect(r.code).toBe("rate_limited");
    expect(r.retryAfterMs).toBeUndefined();
    expect(r.message).toContain("limits.max_screenshot_pixels_per_minute");
    expect(b.state("c").client.inspection.used).toBe(0);
  });

  it("takeApplication takes only the volume budgets", () => {
    const b = new RateBudgets(cfg, () => 0);
    const app = { key: "i", limits: LIMITS };
    b.takeApplication({ ...app, screenshotPixels: 600 });
    expect(thrown(() => b.takeApplication({ ...app, screenshotPixels: 600 })).code).toBe("rate_limited");
    const s = b.state("c", app);
    expect(s.client.action.used).toBe(0);
    expect(s.application?.actions.used).toBe(0);
    expect(s.application?.screenshot_pixels.used).toBe(600);
  });

  it("an application charge gives back characters and pixels once, never the call itself", () => {
    const t = new ManualTime(0);
    const b = new RateBudgets({ ...cfg, clientActionsPerMinute: 100, inspectionsPerMinute: 100 }, t.clock);
    const app = { key: "inst", limits: LIMITS };
    // A pixel budget of 1000 survives any number of failing 600-pixel captures.
    for (let i = 0; i < 5; i++) {
      t.now = i * 1_000;
      const pixels = { ...app, screenshotPixels: 600 };
      b.take("inspection", "c1", pixels);
      const charge = b.applicationCharge(pixels);
      t.now += 700;
      charge.refund();
      charge.refund(); // a second refund gives nothing more
    }
    const text = { ...app, textChars: 80 };
    b.take("action", "c1", text);
    b.applicationCharge(text).refund();
    let s = b.state("c1", app);
    expect(s.application?.screenshot_pixels.used).toBe(0);
    expect(s.application?.text_chars.used).toBe(0);
    expect(s.client.inspection.used).toBe(5);
    expect(s.client.action.used).toBe(1);
    expect(s.application?.actions.used).toBe(1);
    // Double refunds did not eat into what others took.
    b.take("inspection", "c1", { ...app, screenshotPixels: 1000 });
    const again = b.applicationCharge({ ...app, screenshotPixels: 1000 });
    b.take("action", "c1", { ...app, textChars: 100 });
    // Another application's charge does not touch this one's budgets.
    b.take("inspection", "c1", { key: "other", limits: LIMITS, screenshotPixels: 10 });
    b.applicationCharge({ key: "other", screenshotPixels: 10 }).refund();
    s = b.state("c1", app);
    expect(s.application?.screenshot_pixels.used).toBe(1000);
    expect(s.application?.text_chars.used).toBe(100);
    expect(thrown(() => b.take("inspection", "c1", { ...app, screenshotPixels: 1 })).code).toBe(
      "rate_limited",
    );
    // A charge that named no amount gives nothing back.
    b.applicationCharge({ key: app.key }).refund();
    expect(b.state("c1", app).application?.screenshot_pixels.used).toBe(1000);
    again.refund();
    expect(b.state("c1", app).application?.screenshot_pixels.used).toBe(0);
  });

  it("state exposes numbers only, never keys", () => {
    const b = new RateBudgets(cfg, () => 0);
    const app = { key: "SECRET-INSTANCE-KEY", limits: LIMITS };
    b.take("action", "SECRET-CLIENT", app);
    const json = JSON.stringify(b.state("SECRET-CLIENT", app));
    expect(json).not.toContain("SECRET");
  });

  it("reads its config from the environment and refuses malformed values", () => {
    expect(budgetConfigFromEnv({})).toEqual({
      discoveryPerMinute: 30,
      inspectionsPerMinute: 60,
      clientActionsPerMinute: 60,
    });
    expect(
      budgetConfigFromEnv({ UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE: " 25 " }).clientActionsPerMinute,
    ).toBe(25);
    for (const bad of ["0", "-1", "1.5", "abc", "1e3", "999999999"]) {
      const r = thrown(() => budgetConfigFromEnv({ UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: bad }));
      expect(r.code).toBe("invalid_argument");
    }
  });
});

describe("MemoryBudget", () => {
  it("serves waiters first in, first out; a small request never overtakes a waiting large one", async () => {
    const m = new MemoryBudget(100);
    const a = m.tryReserve(60);
    expect(a).not.toBeNull();
    const order: string[] = [];
    const big = m.reserve(80).then((r) => {
      order.push("big");
      return r;
    });
    const small = m.reserve(10).then((r) => {
      order.push("small");
      return r;
    });
    expect(m.tryReserve(10)).toBeNull(); // fits, but others are waiting
    await flush();
    expect(order).toEqual([]);
    a?.release();
    const rb = await big;
    expect(await peekState(small)).toBe("fulfilled"); // 80 + 10 fit together
    expect(order).toEqual(["big", "small"]);
    expect(m.inUse).toBe(90);
    expect(m.peak).toBe(90);
    rb.release();
    (await small).release();
    expect(m.inUse).toBe(0);
  });

  it("release is idempotent", () => {
    const m = new MemoryBudget(100);
    const r = m.tryReserve(70) as Reservation;
    const r2 = m.tryReserve(30) as Reservation;
    r.release();
    r.release();
    r.release();
    expect(m.inUse).toBe(30);
    r2.release();
    expect(m.inUse).toBe(0);
    expect(m.peak).toBe(100);
  });

  it("a request larger than the whole budget fails at once", async () => {
    const m = new MemoryBudget(100);
    expect(await outcome(m.reserve(101))).toBe("memory_budget_exceeded");
    expect(await outcome(m.reserve(-1))).toBe("invalid_argument");
    expect(m.waiting).toBe(0);
  });

  it("an aborted waiter leaves the queue and lets the ones behind it proceed", async () => {
    const m = new MemoryBudget(100);
    const hold = m.tryReserve(50) as Reservation;
    const ac = new AbortController();
    const blocked = m.reserve(80, ac.signal);
    const behind = m.reserve(40);
    await flush();
    expect(await peekState(behind)).toBe("pending"); // FIFO: waits behind the 80
    ac.abort();
    expect(await outcome(blocked)).toBe("cancelled");
    expect(await peekState(behind)).toBe("fulfilled");
    expect(m.inUse).toBe(90);
    (await behind).release();
    hold.release();
    expect(m.inUse).toBe(0);
    expect(m.waiting).toBe(0);
    const pre = new AbortController();
    pre.abort();
    expect(await outcome(m.reserve(1, pre.signal))).toBe("cancelled");
  });

  it("returns the bytes on every path when used with try/finally", async () => {
    const m = new MemoryBudget(100);
    const work = async (fail: boolean) => {
      const r = await m.reserve(60);
      try {
        if (fail) throw new Error("encode failed");
        return "done";
      } finally {
        r.release();
      }
    };
    const results = await Promise.allSettled([work(true), work(false), work(true), work(false)]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled", "rejected", "fulfilled"]);
    expect(m.inUse).toBe(0);
    expect(m.waiting).toBe(0);
    expect(m.peak).toBe(60);
  });

  it("reads its size once from the environment within 1 MiB..2 GiB", () => {
    expect(memoryBudgetBytesFromEnv({})).toBe(128 * 1024 * 1024);
    expect(
      memoryBudgetFromEnv({ DESKTOP_AUTOMATION_SCREENSHOT_MEMORY_BUDGET_BYTES: "1048576" }).limitBytes,
    ).toBe(1048576);
    for (const bad of ["1048575", String(2 * 1024 * 1024 * 1024 + 1), "lots"])
      expect(
        thrown(() => memoryBudgetBytesFromEnv({ DESKTOP_AUTOMATION_SCREENSHOT_MEMORY_BUDGET_BYTES: bad }))
          .code,
      ).toBe("invalid_argument");
  });
});
