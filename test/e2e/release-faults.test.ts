import { afterAll, describe, expect, it } from "vitest";
import { downInEffects } from "../../src/guardian/fakeReleaser.js";
import { FakeDesktop, filePolicy, LOOSE_BUDGETS, ruffleWindow } from "../support/mcp.js";
import { rng } from "../support/rng.js";
import { endServer, pollUntil, type ServerFault, ServerProcess } from "../support/serverProcess.js";

/**
 * The release guarantee at volume on the simulated desktop: random faults (seeded) land while a
 * key is held, a chord is held, a drag is under way or text is typed; whatever ended the worker
 * or the server, effects_log shows nothing pressed within 2 s. Counts go to stderr.
 */

const SEED = Number(process.env.UIINSPECT_FAULT_SEED ?? 15);
/** The release bound we hold to (nothing down this soon after the fault). */
const RELEASE_BOUND_MS = 2000;

type Gesture = "hold" | "chord" | "drag" | "text";
type WorkerFault = "throw" | "exit" | "hang" | "segv" | "sigkill_worker";
const GESTURES: Gesture[] = ["hold", "chord", "drag", "text"];
const SERVER_FAULTS: ServerFault[] = ["SIGTERM", "SIGINT", "SIGHUP", "stdin_eof", "stdout_closed", "SIGKILL"];

const scenario = (over: Record<string, unknown> = {}, win: Record<string, unknown> = {}) => ({
  session: 1,
  foreground: 1001,
  windows: [ruffleWindow(win)],
  consent: { answer: "approve", delay_ms: 0 },
  input_delay_ms: 20,
  ...over,
});

const tally = {
  faults: 0,
  stuck: 0,
  byWorker: 0,
  byGuardian: 0,
  orderlyByGuardian: 0,
  cases: [] as string[],
};
const servers: ServerProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  process.stderr.write(
    `release fault battery (seed ${SEED}): ${tally.faults} faults, ${tally.stuck} stuck; released by the worker ${tally.byWorker}, by the guardian ${tally.byGuardian} (of which after an orderly end ${tally.orderlyByGuardian})\n`,
  );
});

async function startServer(d: FakeDesktop, isolation: "thread" | "process"): Promise<ServerProcess> {
  const s = await ServerProcess.start({
    UIINSPECT_PLATFORM: "fake",
    UIINSPECT_FAKE_DESKTOP: d.path,
    UIINSPECT_WORKER_ISOLATION: isolation,
    // A hung worker is stopped at its deadline (+ 1 s grace): keep hang faults short.
    UIINSPECT_WORKER_DEADLINE_MS: "1500",
    DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
    ...LOOSE_BUDGETS,
  });
  servers.push(s);
  await s.ok("request_access", { hwnd: 1001 });
  return s;
}

/** Starts a gesture and resolves once its first press shows in effects_log. */
async function startGesture(s: ServerProcess, d: FakeDesktop, g: Gesture, holdMs: number) {
  const from = d.effectsLog().length;
  let call: Promise<unknown>;
  let pressed: (e: Record<string, unknown>) => boolean;
  if (g === "drag" || g === "text") {
    const tok = String((await s.ok("request_confirmation", { hwnd: 1001, action_class: g })).token_id);
    if (g === "drag") {
      const path = Array.from({ length: 16 }, (_, i) => ({ x: 30 + i * 15, y: 60 + i * 10 }));
      call = s.call("drag_window", {
        hwnd: 1001,
        start_x: 20,
        start_y: 55,
        end_x: 300,
        end_y: 280,
        path,
        confirmation_token: tok,
      });
      pressed = (e) => e.type === "button_down";
    } else {
      call = s.call("send_text", { hwnd: 1001, text: "Łódź 😀 ✓", confirmation_token: tok });
      pressed = (e) => e.type === "text";
    }
  } else {
    const modifiers = g === "chord" ? ["ctrl", "shift"] : [];
    call = s.call("send_key", { hwnd: 1001, key: "a", modifiers, hold_ms: holdMs });
    pressed = (e) => e.type === "key_down" && e.key === "a";
  }
  let answer: unknown = null;
  void call.then(
    (r) => {
      answer = r;
    },
    (e: unknown) => {
      answer = String(e);
    },
  );
  const seen = await pollUntil(() => answer !== null || d.effectsLog().slice(from).some(pressed), 20_000);
  if (!seen || !d.effectsLog().slice(from).some(pressed))
    throw new Error(`the ${g} never pressed: ${JSON.stringify(answer)}`);
  return { from, call: call.catch(() => undefined) };
}

/** Nothing is down in effects_log (from `from` on) within the bound; tallies who released. */
async function expectReleased(d: FakeDesktop, from: number, label: string): Promise<void> {
  tally.faults += 1;
  const clean = await pollUntil(() => {
    const down = downInEffects(d.effectsLog().slice(from));
    return down.keys.length === 0 && down.buttons.length === 0;
  }, RELEASE_BOUND_MS);
  const fx = d.effectsLog().slice(from);
  const ups = fx.filter((e) => e.type === "key_up" || e.type === "button_up");
  tally.byGuardian += ups.filter((e) => e.by === "guardian").length;
  tally.byWorker += ups.filter((e) => e.by === undefined).length;
  if (!clean) {
    tally.stuck += 1;
    tally.cases.push(label);
  }
  expect(clean, `${label}: ${JSON.stringify(downInEffects(fx))}`).toBe(true);
}

describe("release fault battery on the simulated desktop (seeded random faults)", () => {
  const pick = rng(SEED);
  const choose = <T>(xs: readonly T[]): T => xs[Math.floor(pick() * xs.length)]!;

  for (const isolation of ["thread", "process"] as const) {
    it(`${isolation} isolation: worker faults mid gesture (40), the server keeps serving`, async () => {
      const d = new FakeDesktop(scenario());
      const s = await startServer(d, isolation);
      const kinds: WorkerFault[] =
        isolation === "process" ? ["throw", "exit", "segv", "sigkill_worker"] : ["throw", "exit"];
      for (let i = 0; i < 40; i++) {
        const g = choose(GESTURES.filter((x) => x !== "text"));
        // A hang costs its deadline and grace (~3 s): once per isolation, the first fault.
        const kind: WorkerFault = i === 0 ? "hang" : choose(kinds);
        const label = `${isolation} #${i} ${kind} during ${g}`;
        // A scenario fault fires at the worker's next touch (its key-up, the drag's next leg).
        const hold = kind === "sigkill_worker" ? 3000 : 120;
        const { from, call } = await startGesture(s, d, g, hold);
        if (kind === "sigkill_worker") {
          for (const pid of s.childrenRunning("workers/input/main.js")) process.kill(pid, "SIGKILL");
        } else d.write(scenario({}, { faults: { input: kind } }));
        await call;
        await expectReleased(d, from, label);
        d.write(scenario());
        // The replacement serves (and a success resets the restart backoff).
        const r = await s.call("send_key", { hwnd: 1001, key: "z", modifiers: [], hold_ms: 0 });
        expect(r.isError, `${label}: ${JSON.stringify(r.structured)}`).toBe(false);
      }
    }, 300_000);
  }

  it("server ends mid gesture (24: every way, thread and process isolation)", async () => {
    const d = new FakeDesktop(scenario());
    for (let i = 0; i < 24; i++) {
      const fault = SERVER_FAULTS[i % SERVER_FAULTS.length]!;
      const isolation = choose(["thread", "process"] as const);
      const g = choose(GESTURES);
      const label = `server ${fault} (${isolation}) during ${g}`;
      const s = await startServer(d, isolation);
      const { from } = await startGesture(s, d, g, 4000);
      endServer(s, fault);
      const end = await s.exited;
      await expectReleased(d, from, label);
      if (fault !== "SIGKILL") {
        tally.orderlyByGuardian += d
          .effectsLog()
          .slice(from)
          .filter((e) => e.by === "guardian").length;
        // Orderly: exit 0, no stack trace.
        expect(end, label).toEqual({ code: 0, signal: null });
        expect(s.stderr.join(""), label).not.toMatch(/\n\s+at /);
      }
    }
  }, 300_000);

  it("reaches the volume of gestures it is meant to", () => {
    expect(tally.faults).toBeGreaterThanOrEqual(100);
    expect(tally.stuck, tally.cases.join("; ")).toBe(0);
  });
});
