import { setTimeout as sleep } from "node:timers/promises";
import type {
  A11ySession,
  AccessibilityPort,
  DesktopPort,
  Platform,
  WindowInfo,
} from "../../src/shared/platform.js";
import type { Harness } from "./helpers.js";

/**
 * The accessibility port whose sessions tell `onCall` of each of their method calls (by name),
 * as the call is made; a promise `onCall` returns is the call's answer instead of the provider's.
 */
export function recording(
  acc: AccessibilityPort,
  onCall: (method: string) => Promise<never> | undefined,
): AccessibilityPort {
  const record = (s: A11ySession): A11ySession =>
    new Proxy(s, {
      get(t, k, r) {
        const v: unknown = Reflect.get(t, k, r);
        if (typeof v !== "function") return v;
        return (...a: unknown[]) => onCall(String(k)) ?? (v as (...x: unknown[]) => unknown).apply(t, a);
      },
    });
  return Object.assign(Object.create(acc) as AccessibilityPort, {
    openSession: async (w: WindowInfo) => record(await acc.openSession(w)),
  });
}

/**
 * A platform whose provider sessions log every call and whose listing (the uia worker's own
 * target check) logs when it starts and settles. A started check waits for the walk's first
 * call (up to a second, so a handler that checks first still goes on) and then runs `during`,
 * once, so a refusal can be made to happen while the walk runs. An armed `failing` method of
 * the provider sessions rejects (logged as called) instead of answering.
 */
export function observed(harness: Harness) {
  const log: string[] = [];
  let walkCalled: () => void = () => {};
  // Nothing to wait for until armed (the first inspection opens the session, checking first).
  let walkStarted = Promise.resolve();
  let during: () => void = () => {};
  /** Marks the end of the turn of the walk's first call (where a peer link writes its calls). */
  let markTurn = false;
  let failing: string | null = null;
  const desk = harness.platform.desktop;
  const desktop: DesktopPort = Object.assign(Object.create(desk) as DesktopPort, {
    listWindows: async () => {
      log.push("check:start");
      await Promise.race([walkStarted, sleep(1000)]);
      const f = during;
      during = () => {};
      f();
      try {
        return await desk.listWindows();
      } finally {
        log.push("check:settled");
      }
    },
  });
  const platform: Platform = {
    ...harness.platform,
    desktop,
    accessibility: recording(harness.platform.accessibility, (k) => {
      log.push(`walk:${k}`);
      if (markTurn) {
        markTurn = false;
        process.nextTick(() => log.push("turn-end"));
      }
      walkCalled();
      return k === failing ? Promise.reject(new Error("the provider failed")) : undefined;
    }),
  };
  return {
    log,
    ctx: () => ({ ...harness.ctx(), platform }),
    /**
     * Clears the log and what the next check waits for; `f` runs inside that check, and the
     * provider method `fail` (if any) rejects from now on.
     */
    arm(f: () => void = () => {}, waitForWalk = true, fail: string | null = null) {
      failing = fail;
      log.length = 0;
      walkStarted = waitForWalk
        ? new Promise<void>((r) => {
            walkCalled = r;
          })
        : Promise.resolve();
      during = f;
      markTurn = waitForWalk;
    },
  };
}
