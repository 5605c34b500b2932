import type { TargetExpectation } from "../../shared/protocol.js";
import type { Supervisor } from "../supervisor.js";
import type { Grant } from "./grants.js";
import type { ResolvedTarget } from "./targets.js";

/** TargetExpectation's shown_before holds at most this many ids. */
const MAX_SHOWN = 4096;

/**
 * The instance's top-levels shown now, for a grant about to begin on `target` (the display
 * server's word through the capture worker: DesktopPort.shownTopLevels). None of them will be a
 * popup of the grant. A live grant on the same window keeps its own list (GrantStore.put), so
 * nothing is asked then.
 */
export async function shownNow(
  sup: Supervisor,
  client: string,
  target: ResolvedTarget,
  signal?: AbortSignal,
): Promise<string[]> {
  const live = sup.grants.get(client, target.instanceKey);
  if (live !== undefined && live.hwnd === target.window.hwnd) return [...live.shownBefore];
  const r = await sup.workers.capture.call(
    "desktop.shown",
    { instance: target.instance },
    // Waited for 5 s; only the worker's own deadline may tear it down.
    { deadlineMs: sup.config.workerDeadlineMs, waitMs: 5000, ...(signal ? { signal } : {}) },
  );
  return r.hwnds.filter((h) => h !== target.window.hwnd);
}

/** The target as the workers must see it under `grant`: with the windows shown when it began. */
export function underGrant(target: ResolvedTarget, shownBefore: readonly string[]): ResolvedTarget {
  return {
    ...target,
    expectation: { ...target.expectation, shown_before: shownBefore.slice(0, MAX_SHOWN) },
  };
}

/** What the workers would be told of `grant`'s window: underGrant of a target resolved to it. */
export function grantExpectation(grant: Grant): TargetExpectation {
  return { hwnd: grant.hwnd, instance: grant.instance, shown_before: grant.shownBefore.slice(0, MAX_SHOWN) };
}

/** The same windows shown when a grant began, in the same order (the lists the workers are given). */
export function sameShownBefore(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((h, i) => h === b[i]);
}
