import { describe, expect, it } from "vitest";
import { type DialogReport, emptyReport } from "../../src/shared/consentReport.js";
import { isUiError } from "../../src/shared/errors.js";
import { instanceKey } from "../../src/shared/identity.js";
import { ClientIdentity } from "../../src/supervisor/access/clientIdentity.js";
import { ConsentBroker, type ConsentDecision } from "../../src/supervisor/consent/broker.js";
import type { ConsentAnswer, ConsentPrompter } from "../../src/supervisor/consent/prompter.js";
import { instance, ManualTime, outcome, peekState, ScriptedPrompter } from "./helpers.js";

const CLIENT = "aaaaaaaaaaaa";

function setup(opts: { alive?: () => Promise<boolean>; prompter?: ConsentPrompter } = {}) {
  const time = new ManualTime();
  const prompter = new ScriptedPrompter();
  let alive = true;
  const broker = new ConsentBroker({
    prompter: opts.prompter ?? prompter,
    clock: time.clock,
    timeoutMs: 60_000,
    dialogsPerMinute: 3,
    isInstanceAlive: opts.alive ?? (async () => alive),
    alivePollMs: 500,
    setTimer: time.setTimer,
    clearTimer: time.clearTimer,
  });
  return {
    time,
    prompter,
    broker,
    kill: () => {
      alive = false;
    },
  };
}

function ask(
  broker: ConsentBroker,
  caps: string[],
  o: { client?: string; pid?: number; signal?: AbortSignal } = {},
) {
  return broker.request({
    clientHash: o.client ?? CLIENT,
    clientLabel: "test client",
    instance: instance(o.pid ?? 4242),
    capabilities: caps,
    signal: o.signal,
  });
}

describe("consent broker: single flight", () => {
  it("50 concurrent requests open exactly one dialog and all share its decision", async () => {
    const { broker, prompter, time } = setup();
    const all = Array.from({ length: 50 }, () => ask(broker, ["inspect", "click"]));
    await time.advance(0);
    expect(prompter.shown).toHaveLength(1);
    expect(broker.dialogCount).toBe(1);
    prompter.last().answer("approve");
    const results = await Promise.all(all);
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);
    expect(results[0]).toEqual({
      decision: "approved",
      capabilities: ["inspect", "click"],
      source: "dialog",
    });
    // A repeated call later is answered from the kept decision, without a dialog.
    expect(await ask(broker, ["click", "inspect"])).toEqual({
      decision: "approved",
      capabilities: ["inspect", "click"],
      source: "cached",
    });
    expect(prompter.shown).toHaveLength(1);
  });

  it("cancelling one caller detaches only its wait; the others still get the decision", async () => {
    const { broker, prompter, time } = setup();
    const ac = new AbortController();
    const cancelled = ask(broker, ["inspect"], { signal: ac.signal });
    const others = [ask(broker, ["inspect"]), ask(broker, ["inspect"])];
    await time.advance(0);
    ac.abort();
    expect(await outcome(cancelled)).toBe("cancelled");
    expect(prompter.last().signal.aborted).toBe(false); // the dialog stays for the others
    prompter.last().answer("approve");
    for (const r of await Promise.all(others)) expect(r.decision).toBe("approved");
    expect(prompter.shown).toHaveLength(1);
  });

  it("keeps the dialog when every waiter left; the later retry gets the decision from the cache", async () => {
    const { broker, prompter, time } = setup();
    const ac = new AbortController();
    const only = ask(broker, ["inspect"], { signal: ac.signal });
    await time.advance(0);
    ac.abort();
    expect(await outcome(only)).toBe("cancelled");
    expect(broker.pendingCount).toBe(1);
    expect(prompter.last().signal.aborted).toBe(false);
    prompter.last().answer("approve");
    await time.advance(0);
    expect((await ask(broker, ["inspect"])).source).toBe("cached");
    expect(prompter.shown).toHaveLength(1);
  });

  it("an already-aborted signal fails with cancelled and opens nothing", async () => {
    const { broker, prompter } = setup();
    const ac = new AbortController();
    ac.abort();
    expect(await outcome(ask(broker, ["inspect"], { signal: ac.signal }))).toBe("cancelled");
    expect(prompter.shown).toHaveLength(0);
  });
});

describe("consent broker: failing closed", () => {
  it("timeout closes the dialog, fails with consent_timeout, and a later request opens a clean prompt", async () => {
    const { broker, prompter, time } = setup();
    const a = ask(broker, ["inspect"]);
    const b = outcome(ask(broker, ["inspect"])); // handled from the start: it rejects during advance()
    await time.advance(59_999);
    expect(await peekState(a)).toBe("pending");
    await time.advance(1);
    expect(await outcome(a)).toBe("consent_timeout");
    expect(await b).toBe("consent_timeout");
    expect(prompter.shown[0].signal.aborted).toBe(true);
    expect(broker.keptDecision(CLIENT, instanceKey(instance(4242)))).toBeUndefined();
    expect(broker.pendingCount).toBe(0);

    const again = ask(broker, ["inspect"]);
    await time.advance(0);
    expect(prompter.shown).toHaveLength(2);
    expect(prompter.shown[1].signal.aborted).toBe(false);
    prompter.shown[1].answer("approve");
    expect((await again).decision).toBe("approved");
    expect(time.pendingTimers).toBe(0); // timeout and poll timers were cleared
  });

  it("the target exiting during the prompt closes it and fails with target_gone; the key is released", async () => {
    const { broker, prompter, time, kill } = setup();
    const p = ask(broker, ["inspect"]);
    await time.advance(1_000);
    expect(await peekState(p)).toBe("pending");
    kill();
    await time.advance(500);
    expect(await outcome(p)).toBe("target_gone");
    expect(prompter.last().signal.aborted).toBe(true);
    expect(broker.keptDecision(CLIENT, instanceKey(instance(4242)))).toBeUndefined();
    // A late answer from the closed dialog changes nothing.
    prompter.last().answer("approve");
    await time.advance(0);
    expect(broker.keptDecision(CLIENT, instanceKey(instance(4242)))).toBeUndefined();
  });

  it("a failing liveness probe is not an exit: the dialog stays until answered", async () => {
    const { broker, prompter, time } = setup({ alive: () => Promise.reject(new Error("worker crashed")) });
    const p = ask(broker, ["inspect"]);
    await time.advance(5_000);
    expect(await peekState(p)).toBe("pending");
    prompter.last().answer("deny");
    expect((await p).decision).toBe("denied");
  });

  it("a prompter that cannot show the dialog fails with platform_unavailable and keeps nothing", async () => {
    const { broker, prompter, time } = setup();
    const p = ask(broker, ["inspect"]);
    await time.advance(0);
    prompter.last().fail(new Error("zenity missing"));
    expect(await outcome(p)).toBe("platform_unavailable");
    expect(broker.keptDecision(CLIENT, instanceKey(instance(4242)))).toBeUndefined();
  });

  it("an answer that is neither approve nor deny fails closed and keeps nothing", async () => {
    const { broker, prompter, time } = setup();
    const p = ask(broker, ["inspect"]);
    await time.advance(0);
    prompter.last().answer("yes" as "approve");
    expect(await outcome(p)).toBe("platform_unavailable");
    expect(prompter.last().signal.aborted).toBe(true);
    expect(broker.keptDecision(CLIENT, instanceKey(instance(4242)))).toBeUndefined();
  });

  it("forgetInstance drops kept decisions of a gone instance only", async () => {
    const { broker, prompter, time } = setup();
    for (const pid of [1, 2]) {
      const p = ask(broker, ["inspect"], { pid });
      await time.advance(0);
      prompter.last().answer("deny");
      await p;
    }
    broker.forgetInstance(instanceKey(instance(1)));
    expect(broker.keptDecision(CLIENT, instanceKey(instance(1)))).toBeUndefined();
    expect(broker.keptDecision(CLIENT, instanceKey(instance(2)))?.decision).toBe("denied");
  });

  it("dispose closes open dialogs and fails waiters with cancelled", async () => {
    const { broker, prompter, time } = setup();
    const p = ask(broker, ["inspect"]);
    await time.advance(0);
    broker.dispose();
    expect(await outcome(p)).toBe("cancelled");
    expect(prompter.last().signal.aborted).toBe(true);
  });
});

describe("consent broker: kept decisions", () => {
  it("a denial is kept for the session: later calls are denied from the cache without a dialog", async () => {
    const { broker, prompter, time } = setup();
    const p = ask(broker, ["inspect"]);
    await time.advance(0);
    prompter.last().answer("deny");
    expect(await p).toEqual({ decision: "denied", capabilities: [], source: "dialog" });
    for (let i = 0; i < 5; i++)
      expect(await ask(broker, ["inspect"])).toEqual({
        decision: "denied",
        capabilities: [],
        source: "cached",
      });
    expect(prompter.shown).toHaveLength(1);
    expect(broker.keptDecision(CLIENT, instanceKey(instance(4242)))?.decision).toBe("denied");
  });

  it("asking for more than the approved ceiling is capability_expansion_denied without a dialog", async () => {
    const { broker, prompter, time } = setup();
    const p = ask(broker, ["inspect"]);
    await time.advance(0);
    prompter.last().answer("approve");
    await p;
    expect(await outcome(ask(broker, ["inspect", "click"]))).toBe("capability_expansion_denied");
    expect(await outcome(ask(broker, ["text"]))).toBe("capability_expansion_denied");
    expect(prompter.shown).toHaveLength(1);
    expect((await ask(broker, ["inspect"])).source).toBe("cached");
    expect(broker.keptDecision(CLIENT, instanceKey(instance(4242)))).toEqual({
      decision: "approved",
      capabilities: ["inspect"],
    });
  });

  it("a concurrent waiter asking for a wider set shares the first decision and gets expansion denied", async () => {
    const { broker, prompter, time } = setup();
    const narrow = ask(broker, ["inspect"]);
    const wide = ask(broker, ["inspect", "click"]);
    await time.advance(0);
    expect(prompter.shown).toHaveLength(1);
    expect(prompter.last().content.capabilities.map((c) => c.name)).toEqual(["inspect"]);
    prompter.last().answer("approve");
    expect((await narrow).decision).toBe("approved");
    expect(await outcome(wide)).toBe("capability_expansion_denied");
  });

  it("decisions are per (client, instance): a new process instance with the same pid gets its own prompt", async () => {
    const { broker, prompter, time } = setup();
    const p = ask(broker, ["inspect"]);
    await time.advance(0);
    prompter.last().answer("deny");
    await p;
    const reused = broker.request({
      clientHash: CLIENT,
      clientLabel: "test client",
      instance: instance(4242, "2026-11-30T09:30:00.000Z"),
      capabilities: ["inspect"],
    });
    await time.advance(0);
    expect(prompter.shown).toHaveLength(2);
    prompter.last().answer("approve");
    expect((await reused).decision).toBe("approved");
    expect(broker.keptDecision(CLIENT, instanceKey(instance(4242)))?.decision).toBe("denied");
  });

  it("unknown or empty capability sets are refused before any dialog", async () => {
    const { broker, prompter } = setup();
    expect(await outcome(ask(broker, ["observe", "format_disk"]))).toBe("action_not_allowed");
    expect(await outcome(ask(broker, []))).toBe("invalid_argument");
    expect(prompter.shown).toHaveLength(0);
  });
});

describe("consent broker: dialog rate limit", () => {
  it("allows 3 new dialogs per minute per client; the 4th is rate_limited, cached decisions still work", async () => {
    const { broker, prompter, time } = setup();
    const first = ask(broker, ["inspect"], { pid: 1 });
    await time.advance(0);
    prompter.last().answer("approve");
    await first;
    const second = ask(broker, ["inspect"], { pid: 2 });
    const third = ask(broker, ["inspect"], { pid: 3 });
    await time.advance(10_000);
    expect(prompter.shown).toHaveLength(3);

    let err: unknown;
    try {
      await ask(broker, ["inspect"], { pid: 4 });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: "rate_limited" });
    const retry = (err as { retryAfterMs?: number }).retryAfterMs ?? 0;
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(61_000);
    expect(prompter.shown).toHaveLength(3);

    // Cached decision and joining a pending dialog use no permit.
    expect((await ask(broker, ["inspect"], { pid: 1 })).source).toBe("cached");
    const joined = ask(broker, ["inspect"], { pid: 2 });
    // Another client has its own permits.
    const otherClient = ask(broker, ["inspect"], { pid: 4, client: "bbbbbbbbbbbb" });
    await time.advance(0);
    expect(prompter.shown).toHaveLength(4);
    for (const p of prompter.shown.slice(1)) p.answer("deny");
    await Promise.all([second, third, joined, otherClient]);

    // After the window has passed, a new dialog may open again.
    await time.advance(retry);
    const later = ask(broker, ["inspect"], { pid: 4 });
    await time.advance(0);
    expect(prompter.shown).toHaveLength(5);
    prompter.last().answer("approve");
    expect((await later).decision).toBe("approved");
  });
});

describe("consent broker: client names are labels only", () => {
  async function script(name: string, salt: Buffer) {
    const { broker, prompter, time } = setup();
    const id = ClientIdentity.fromClientInfo({ name, version: "1.0.0" }, salt);
    const req = (pid: number, caps: string[]) =>
      broker.request({
        clientHash: id.hash,
        clientLabel: id.label,
        instance: instance(pid),
        capabilities: caps,
      });
    const steps: string[] = [];
    const record = async (p: Promise<ConsentDecision>) => {
      try {
        const d = await p;
        steps.push(`${d.decision}/${d.source}/${d.capabilities.join("+")}`);
      } catch (e) {
        steps.push(`error/${(e as { code?: string }).code}`);
      }
    };
    const a = req(1, ["inspect"]);
    await time.advance(0);
    prompter.last().answer("approve");
    await record(a);
    await record(req(1, ["inspect", "click"])); // expansion
    const b = req(2, ["click"]);
    await time.advance(0);
    prompter.last().answer("deny");
    await record(b);
    await record(req(2, ["click"])); // kept denial
    const c = req(3, ["observe"]);
    await time.advance(0);
    await record(req(4, ["observe"])); // fourth dialog in a minute
    prompter.last().answer("approve");
    await record(c);
    const labels = prompter.shown.map((s) => s.content.client_label);
    const withoutLabel = prompter.shown.map((s) => ({ ...s.content, client_label: "", text: "" }));
    return { steps, hash: id.hash, labels, withoutLabel, dialogs: prompter.shown.length };
  }

  it('"Claude Code" and "Codex" get exactly what any other client gets', async () => {
    const salt = Buffer.alloc(16, 7);
    const plain = await script("some-mcp-client", salt);
    for (const name of ["Claude Code", "Codex", "claude-code", "uiinspect-mcp"]) {
      const named = await script(name, salt);
      expect(named.steps).toEqual(plain.steps);
      expect(named.dialogs).toBe(plain.dialogs);
      expect(named.withoutLabel).toEqual(plain.withoutLabel);
      expect(named.hash).not.toBe(plain.hash);
      expect(named.labels.every((l) => l === name)).toBe(true);
    }
    expect(plain.steps).toEqual([
      "approved/dialog/inspect",
      "error/capability_expansion_denied",
      "denied/dialog/",
      "denied/cached/",
      "error/rate_limited",
      "approved/dialog/observe",
    ]);
  });
});

describe("consent broker: a revoked client", () => {
  it("forgetClient closes its open dialog, fails its waiters and forgets its decisions, and only its", async () => {
    const { broker, prompter, time } = setup();
    const OTHER = "bbbbbbbbbbbb";
    // A kept approval for pid 1, a dialog open for pid 2; another client's approval for pid 1.
    const kept = ask(broker, ["inspect"], { pid: 1 });
    await time.advance(0);
    prompter.last().answer("approve");
    await kept;
    const theirs = ask(broker, ["inspect"], { pid: 1, client: OTHER });
    await time.advance(0);
    prompter.last().answer("approve");
    await theirs;
    const pending = ask(broker, ["click"], { pid: 2 });
    await time.advance(0);
    const dialog = prompter.last();
    expect(broker.forgetClient(CLIENT, "credential_revoked")).toBe(2);
    expect(await outcome(pending)).toBe("credential_revoked");
    expect(dialog.signal.aborted).toBe(true);
    expect(broker.keptDecision(CLIENT, instanceKey(instance(1)))).toBeUndefined();
    expect(broker.keptDecision(OTHER, instanceKey(instance(1)))).toMatchObject({ decision: "approved" });
  });

  it("verified identities are shown as verified in the dialog, never as self-reported", async () => {
    const { broker, prompter, time } = setup();
    const who = ClientIdentity.verified({ method: "mtls", fingerprint: "ab".repeat(32) }, "agent-7");
    const p = broker.request({
      clientHash: who.hash,
      clientLabel: who.label,
      clientVerified: who.verified,
      instance: instance(9),
      capabilities: ["observe"],
    });
    await time.advance(0);
    const content = prompter.last().content;
    expect(content.client_label_self_reported).toBe(false);
    expect(content.client_verified).toEqual({ method: "mtls", fingerprint: "ab".repeat(32) });
    expect(content.text).toContain(
      "Client: agent-7 (verified: client certificate key SHA-256 abababababababab…)",
    );
    expect(content.text).not.toContain("self-reported");
    prompter.last().answer("deny");
    await p;
  });
});

describe("consent broker: what the dialog reports", () => {
  /** A prompter that reports `report` at once and then answers `answer` (or never). */
  function reporting(report: DialogReport, answer: ConsentAnswer | null): ConsentPrompter {
    return {
      simulated: false,
      prompt: (_content, signal, onReport) =>
        new Promise<ConsentAnswer>((resolve, reject) => {
          onReport?.(report);
          if (answer) resolve(answer);
          signal.addEventListener("abort", () => reject(new Error("closed")), { once: true });
        }),
    };
  }

  it("a timeout says what the dialog ignored (counts and kinds only) and, on an XTest-only display, names the test setting", async () => {
    const r = emptyReport();
    r.ignored.injected = 3;
    r.ignored.too_early = 1;
    r.virtual_display = true;
    const { broker, time } = setup({ prompter: reporting(r, null) });
    const caught = ask(broker, ["inspect"]).then(
      () => null,
      (e: unknown) => e,
    );
    await time.advance(60_000);
    const err = await caught;
    expect(isUiError(err) && err.code).toBe("consent_timeout");
    const message = isUiError(err) ? err.message : "";
    expect(message).toContain("3 from an injected (XTest) device");
    expect(message).toContain("1 before Allow was enabled");
    expect(message).not.toContain("while another window covered");
    expect(message).toContain("UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT=1");
  });

  it("a timeout with nothing ignored says only that nobody answered", async () => {
    const { broker, time } = setup({ prompter: reporting(emptyReport(), null) });
    const caught = ask(broker, ["inspect"]).then(
      () => null,
      (e: unknown) => e,
    );
    await time.advance(60_000);
    const err = await caught;
    expect(isUiError(err) ? err.message : "").toBe(
      "The consent dialog timed out: nobody approved it in time.",
    );
  });

  it("a dialog that closed itself because it was tampered with is a denial that says so, and it is not kept", async () => {
    const r = { ...emptyReport(), tampered: true };
    const { broker, time } = setup({ prompter: reporting(r, "deny") });
    const d = await ask(broker, ["inspect"]);
    expect(d).toMatchObject({ decision: "denied", source: "dialog", reason: "dialog_tampered" });
    expect(d.note).toMatch(/nothing is kept/i);
    expect(broker.keptDecision(CLIENT, instanceKey(instance(4242)))).toBeUndefined();
    await time.advance(0);
    expect(broker.dialogCount).toBe(1);
    // Asking again opens a new dialog: the person decided nothing.
    const again = ask(broker, ["inspect"]);
    await time.advance(0);
    expect(broker.dialogCount).toBe(2);
    await again;
  });
});
