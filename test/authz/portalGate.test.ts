import { describe, expect, it } from "vitest";
import { instanceKey } from "../../src/shared/identity.js";
import { GrantStore } from "../../src/supervisor/access/grants.js";
import { ConsentBroker } from "../../src/supervisor/consent/broker.js";
import {
  type PortalAnswer,
  type PortalEnd,
  type PortalEnded,
  PortalGate,
  type PortalPort,
  type PortalRequest,
  type PortalSession,
} from "../../src/supervisor/consent/portalGate.js";
import { instance, ManualTime, outcome, peekState, ScriptedPrompter } from "./helpers.js";

/**
 * The second consent gate (the compositor's portal dialog) as a state machine, in process with a
 * manual clock: one picker per (client, instance), its timeout, its end by the compositor or by
 * us, and the two gates composed with the consent broker and the grant store the way
 * request_access and the supervisor compose them.
 */

const CLIENT = "aaaaaaaaaaaa";
const TIMEOUT = 60_000;

class FakeSession implements PortalSession {
  closed = 0;
  private listener: ((why: PortalEnd) => void) | null = null;
  close(): void {
    this.closed++;
  }
  onEnd(listener: (why: PortalEnd) => void): void {
    this.listener = listener;
  }
  /** The compositor ends it (the person stopped sharing, the stream ended). */
  end(why: PortalEnd = "closed"): void {
    this.listener?.(why);
  }
}

interface Picker {
  req: PortalRequest;
  signal: AbortSignal;
  allow: () => FakeSession;
  decline: () => void;
  fail: (e: unknown) => void;
}

class ScriptedPort implements PortalPort {
  readonly mechanism = "scripted portal";
  readonly pickers: Picker[] = [];
  /** A port that misses the close (its answer was already on the way) still answers later. */
  constructor(private readonly honoursAbort = true) {}
  open(req: PortalRequest, signal: AbortSignal): Promise<PortalAnswer> {
    return new Promise((resolve, reject) => {
      if (this.honoursAbort)
        signal.addEventListener("abort", () => reject(new Error("closed")), { once: true });
      this.pickers.push({
        req,
        signal,
        allow: () => {
          const session = new FakeSession();
          resolve({ answer: "allowed", session });
          return session;
        },
        decline: () => resolve({ answer: "declined" }),
        fail: reject,
      });
    });
  }
  last(): Picker {
    const p = this.pickers.at(-1);
    if (!p) throw new Error("no picker was shown");
    return p;
  }
}

/** A consent broker on the test's manual time, answered by `prompter`, every instance alive. */
function manualBroker(time: ManualTime, prompter: ScriptedPrompter): ConsentBroker {
  return new ConsentBroker({
    prompter,
    clock: time.clock,
    timeoutMs: TIMEOUT,
    isInstanceAlive: async () => true,
    setTimer: time.setTimer,
    clearTimer: time.clearTimer,
  });
}

/** A portal gate over `port` on the test's manual time. */
function manualGate(
  time: ManualTime,
  port: ScriptedPort,
  onEnded: (e: PortalEnded) => void,
  holdDialog?: () => () => void,
): PortalGate {
  return new PortalGate({
    port,
    clock: time.clock,
    timeoutMs: TIMEOUT,
    ...(holdDialog ? { holdDialog } : {}),
    onEnded,
    setTimer: time.setTimer,
    clearTimer: time.clearTimer,
  });
}

function setup(port = new ScriptedPort()) {
  const time = new ManualTime();
  const ended: PortalEnded[] = [];
  let held = 0;
  const gate = manualGate(
    time,
    port,
    (e) => ended.push(e),
    () => {
      held++;
      return () => {
        held--;
      };
    },
  );
  return { time, port, gate, ended, held: () => held };
}

const who = (pid = 4242, client = CLIENT) => ({ client, instance: instance(pid), hwnd: "0x1" });

describe("portal gate: one picker per client and instance", () => {
  it("concurrent admits share one picker; the dialog gate is held while it may be on screen", async () => {
    const { gate, port, time, held } = setup();
    const all = [gate.admit(who()), gate.admit(who()), gate.admit(who())];
    await time.advance(0);
    expect(port.pickers).toHaveLength(1);
    expect(held()).toBe(1);
    port.last().allow();
    expect(await Promise.all(all)).toEqual(["allowed", "allowed", "allowed"]);
    expect(held()).toBe(0);
    expect(gate.has(CLIENT, instanceKey(instance(4242)))).toBe(true);
    // An open session answers at once, with no picker.
    expect(await gate.admit(who())).toBe("allowed");
    expect(port.pickers).toHaveLength(1);
  });

  it("another client or instance gets a picker of its own", async () => {
    const { gate, port, time } = setup();
    void gate.admit(who(4242, "c1"));
    void gate.admit(who(4242, "c2"));
    void gate.admit(who(4343, "c1"));
    await time.advance(0);
    expect(port.pickers).toHaveLength(3);
  });

  it("a cancelled picker is a decline: nothing stays open", async () => {
    const { gate, port, time, held } = setup();
    const p = gate.admit(who());
    await time.advance(0);
    port.last().decline();
    expect(await p).toBe("declined");
    expect(gate.has(CLIENT, instanceKey(instance(4242)))).toBe(false);
    expect(held()).toBe(0);
    // The next admit shows a new picker.
    void gate.admit(who());
    await time.advance(0);
    expect(port.pickers).toHaveLength(2);
  });

  it("the picker times out at the consent timeout: closed, consent_timeout, and a late Share is closed at once", async () => {
    const { gate, port, time, held } = setup(new ScriptedPort(false));
    const p = gate.admit(who());
    await time.advance(TIMEOUT - 1);
    expect(await peekState(p)).toBe("pending");
    await time.advance(1);
    expect(await outcome(p)).toBe("consent_timeout");
    expect(port.last().signal.aborted).toBe(true);
    expect(held()).toBe(0);
    // The portal answered after all (it did not see the close in time): that session is ended.
    const late = port.last().allow();
    await time.advance(0);
    expect(late.closed).toBe(1);
    expect(gate.openCount).toBe(0);
  });

  it("a caller that gives up detaches only its wait; a session that comes later is kept for the next request", async () => {
    const { gate, port, time } = setup();
    const ac = new AbortController();
    const mine = gate.admit({ ...who(), signal: ac.signal });
    const other = gate.admit(who());
    await time.advance(0);
    ac.abort();
    expect(await outcome(mine)).toBe("cancelled");
    expect(port.last().signal.aborted).toBe(false);
    port.last().allow();
    expect(await other).toBe("allowed");
    expect(gate.openCount).toBe(1);
  });

  it("a failing portal is platform_unavailable, content-free", async () => {
    const { gate, port, time } = setup();
    const p = gate.admit(who());
    await time.advance(0);
    port.last().fail(new Error("org.freedesktop.portal.Error: title of a secret window"));
    const e = await p.catch((x: unknown) => x);
    expect(await outcome(Promise.reject(e))).toBe("platform_unavailable");
    expect(String((e as Error).message)).not.toContain("secret");
  });
});

describe("portal gate: a session's end", () => {
  it("the compositor ending the session is reported once, with why", async () => {
    const { gate, port, time, ended } = setup();
    const p = gate.admit(who());
    await time.advance(0);
    const s = port.last().allow();
    await p;
    s.end("stream_ended");
    s.end("closed");
    expect(ended).toEqual([
      {
        client: CLIENT,
        instanceKey: instanceKey(instance(4242)),
        instance: instance(4242),
        why: "stream_ended",
      },
    ]);
    expect(gate.openCount).toBe(0);
  });

  it("our side ending it closes the session and reports nothing back", async () => {
    const { gate, port, time, ended } = setup();
    const p = gate.admit(who());
    await time.advance(0);
    const s = port.last().allow();
    await p;
    expect(gate.end(CLIENT, instanceKey(instance(4242)))).toBe(true);
    expect(s.closed).toBe(1);
    s.end("closed"); // the portal's Closed for our own Close
    expect(ended).toEqual([]);
    expect(gate.end(CLIENT, instanceKey(instance(4242)))).toBe(false);
  });

  it("ending an instance, a client or everything also closes pickers still up", async () => {
    const { gate, port, time } = setup();
    const a = gate.admit(who(1, "c1"));
    const b = gate.admit(who(2, "c2"));
    const c = gate.admit(who(3, "c3"));
    await time.advance(0);
    gate.endInstance(instanceKey(instance(1)));
    gate.endClient("c2");
    gate.endAll();
    expect([await outcome(a), await outcome(b), await outcome(c)]).toEqual([
      "target_gone",
      "credential_revoked",
      "cancelled",
    ]);
    expect(port.pickers.every((p) => p.signal.aborted)).toBe(true);
  });
});

/**
 * Both gates the way request_access and the supervisor put them together: the broker's dialog
 * first, then the picker; the grant only after both; the compositor's end revokes the grant and
 * forgets the approval, so no silent renewal brings it back.
 */
describe("two gates composed", () => {
  function composed() {
    const time = new ManualTime();
    const prompter = new ScriptedPrompter();
    const broker = manualBroker(time, prompter);
    const grants = new GrantStore(time.clock, 300_000);
    const port = new ScriptedPort();
    const revoked: string[] = [];
    grants.onRevoke((e) => revoked.push(e.reason));
    const gate = manualGate(time, port, (e) => {
      broker.forgetApproval(e.client, e.instanceKey);
      grants.revoke(e.client, e.instanceKey, "portal_closed");
    });
    const ik = instanceKey(instance(4242));
    /** request_access: gate one, gate two, then the grant; a decline forgets the approval. */
    const request = async (): Promise<string> => {
      const d = await broker.request({
        clientHash: CLIENT,
        clientLabel: "test",
        instance: instance(4242),
        capabilities: ["inspect", "click"],
      });
      if (d.decision === "denied") return "denied";
      let second: "allowed" | "declined";
      try {
        second = await gate.admit(who());
      } catch (e) {
        broker.forgetApproval(CLIENT, ik);
        throw e;
      }
      if (second === "declined") {
        broker.forgetApproval(CLIENT, ik);
        return "declined";
      }
      grants.put({ client: CLIENT, instance: instance(4242), hwnd: "0x1", capabilities: d.capabilities });
      return "granted";
    };
    /** What a capability call may renew from: the kept decision, only with an open session. */
    const renewable = () => broker.keptDecision(CLIENT, ik)?.decision === "approved" && gate.has(CLIENT, ik);
    return { time, prompter, broker, grants, port, gate, ik, request, revoked, renewable };
  }

  it("our Allow, then the picker's Share: granted; nothing before both", async () => {
    const t = composed();
    const r = t.request();
    await t.time.advance(0);
    expect(t.port.pickers).toHaveLength(0);
    t.prompter.last().answer("approve");
    await t.time.advance(0);
    expect(t.port.pickers).toHaveLength(1);
    // Between the gates the approval is kept but renews nothing.
    expect(t.renewable()).toBe(false);
    expect(t.grants.get(CLIENT, t.ik)).toBeUndefined();
    t.port.last().allow();
    expect(await r).toBe("granted");
    expect(t.renewable()).toBe(true);
  });

  it("our Deny shows no picker", async () => {
    const t = composed();
    const r = t.request();
    await t.time.advance(0);
    t.prompter.last().answer("deny");
    expect(await r).toBe("denied");
    expect(t.port.pickers).toHaveLength(0);
  });

  it("a cancelled picker grants nothing and the next request asks both gates again", async () => {
    const t = composed();
    const r = t.request();
    await t.time.advance(0);
    t.prompter.last().answer("approve");
    await t.time.advance(0);
    t.port.last().decline();
    expect(await r).toBe("declined");
    expect(t.broker.keptDecision(CLIENT, t.ik)).toBeUndefined();
    void t.request();
    await t.time.advance(0);
    expect(t.prompter.shown).toHaveLength(2);
  });

  it("an unanswered picker times out after our dialog's approval: consent_timeout, nothing kept", async () => {
    const t = composed();
    const r = t.request();
    await t.time.advance(0);
    t.prompter.last().answer("approve");
    const result = outcome(r);
    await t.time.advance(TIMEOUT);
    expect(await result).toBe("consent_timeout");
    expect(t.broker.keptDecision(CLIENT, t.ik)).toBeUndefined();
    expect(t.grants.size).toBe(0);
  });

  it("the compositor ending the session revokes the grant and the approval: nothing renews it", async () => {
    const t = composed();
    const r = t.request();
    await t.time.advance(0);
    t.prompter.last().answer("approve");
    await t.time.advance(0);
    const s = t.port.last().allow();
    expect(await r).toBe("granted");
    s.end("closed");
    expect(t.revoked).toEqual(["portal_closed"]);
    expect(t.grants.get(CLIENT, t.ik)).toBeUndefined();
    expect(t.renewable()).toBe(false);
    expect(t.broker.keptDecision(CLIENT, t.ik)).toBeUndefined();
    // A new request_access shows our dialog again, then a new picker.
    const again = t.request();
    await t.time.advance(0);
    expect(t.prompter.shown).toHaveLength(2);
    t.prompter.last().answer("approve");
    await t.time.advance(0);
    t.port.last().allow();
    expect(await again).toBe("granted");
  });

  it("a grant that expires is renewed only while its session is open", async () => {
    const t = composed();
    const r = t.request();
    await t.time.advance(0);
    t.prompter.last().answer("approve");
    await t.time.advance(0);
    const s = t.port.last().allow();
    await r;
    await t.time.advance(300_000);
    expect(t.grants.get(CLIENT, t.ik)).toBeUndefined();
    expect(t.renewable()).toBe(true);
    s.end("stream_ended");
    expect(t.renewable()).toBe(false);
  });
});

/** The supervisor's own reading of the facts: a kept approval renews nothing without its session. */
describe("access facts with the second gate", () => {
  it("between our Allow and the picker's Share, and after the session ended, the kept approval is not counted", async () => {
    const { accessFacts, decideAccess } = await import("../../src/supervisor/access/accessDecision.js");
    const time = new ManualTime();
    const prompter = new ScriptedPrompter();
    const consent = manualBroker(time, prompter);
    const grants = new GrantStore(time.clock, 300_000);
    const port = new ScriptedPort();
    const portal = manualGate(time, port, (e) => consent.forgetApproval(e.client, e.instanceKey));
    const inst = instance(4242);
    const target = { instance: inst, instanceKey: instanceKey(inst), window: { hwnd: "0x1" } };
    const policy = {
      source: "env",
      allowed_actions: new Set(["inspect"]),
      protected_actions: new Set(),
    };
    const sup = { lease: null, grants, consent, portal, clock: time.clock };
    const facts = () =>
      accessFacts(
        sup as unknown as Parameters<typeof accessFacts>[0],
        CLIENT,
        target as unknown as Parameters<typeof accessFacts>[2],
        "inspect",
        policy as unknown as Parameters<typeof accessFacts>[4],
        "absent",
      );
    const decided = consent.request({
      clientHash: CLIENT,
      clientLabel: "t",
      instance: inst,
      capabilities: ["inspect"],
    });
    await time.advance(0);
    prompter.last().answer("approve");
    await decided;
    const admitted = portal.admit({ client: CLIENT, instance: inst, hwnd: "0x1" });
    await time.advance(0);
    // The picker is up: the approval renews nothing, the call is consent_required.
    expect(facts().kept).toBeNull();
    expect(decideAccess(facts()).renew).toBe(false);
    const session = port.last().allow();
    await admitted;
    expect(decideAccess(facts()).renew).toBe(true);
    session.end("closed");
    expect(facts().kept).toBeNull();
    expect(decideAccess(facts()).grant).toEqual({ refused: "consent_required" });
  });
});
