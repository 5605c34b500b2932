import { uiError } from "../../shared/errors.js";
import { instanceKey } from "../../shared/identity.js";
import type { WindowInfo } from "../../shared/platform.js";
import type { Supervisor } from "../supervisor.js";

/** A granted instance without a window is asked about at most this often. */
const ALIVE_RECHECK_MS = 1000;

/** The desktop's windows now; grants of instances that have exited end on the way. */
export async function liveWindows(sup: Supervisor, signal: AbortSignal): Promise<WindowInfo[]> {
  return (await liveListing(sup, signal)).windows;
}

/** The listing a poll is waiting on, per capture worker (every session's view shares the worker). */
const pollsInFlight = new WeakMap<object, Promise<WindowInfo[]>>();

/**
 * liveWindows for a wait's poll: polls that overlap share one listing, so any number of waits
 * (from any number of sessions or identities) keep at most one listing request in the capture
 * worker's queue, never one each. Only for waits: a check before an effect asks for its own.
 * Each caller still ends at its own signal.
 */
export function pollWindows(sup: Supervisor, signal: AbortSignal): Promise<WindowInfo[]> {
  const key = sup.workers.capture;
  let shared = pollsInFlight.get(key);
  if (!shared) {
    shared = liveWindows(sup, new AbortController().signal).finally(() => pollsInFlight.delete(key));
    pollsInFlight.set(key, shared);
  }
  if (signal.aborted) return Promise.reject(uiError("cancelled"));
  return new Promise<WindowInfo[]>((resolve, reject) => {
    const onAbort = () => reject(uiError("cancelled"));
    signal.addEventListener("abort", onAbort, { once: true });
    shared.then(
      (w) => {
        signal.removeEventListener("abort", onAbort);
        resolve(w);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/**
 * liveWindows with the id the capture worker keeps that listing under for a moment (a
 * screenshot hands the id back instead of the windows), when it gave one.
 */
export async function liveListing(
  sup: Supervisor,
  signal: AbortSignal,
): Promise<{ windows: WindowInfo[]; id: string | null }> {
  if (!sup.config.platform) throw uiError("platform_unavailable", "No desktop backend exists for this OS.");
  const r = await sup.workers.capture.call(
    "desktop.list",
    {},
    { deadlineMs: sup.config.workerDeadlineMs, signal },
  );
  await endExitedInstances(sup, r.windows, signal);
  return { windows: r.windows, id: r.listing_id ?? null };
}

/**
 * Grants die with their process instance (docs/spec.md §5): a granted instance that no longer shows any
 * window is asked about (at most once a second); if it has exited, its grants, tokens, sessions
 * and kept consent decision end now, not at their expiry. When it was last asked is the grant
 * store's, which every session's view of one supervisor shares (remote mode).
 */
export async function endExitedInstances(
  sup: Supervisor,
  all: readonly WindowInfo[],
  signal: AbortSignal,
): Promise<void> {
  const granted = sup.grants.instances();
  if (granted.size === 0) return;
  const shown = new Set<string>();
  const hwnds = new Set<string>();
  for (const w of all) {
    // A window whose owner exited shows no instance; its hwnd is not another instance's either.
    if (w.owner_exited) continue;
    hwnds.add(w.hwnd);
    if (w.instance) shown.add(instanceKey(w.instance));
  }
  const now = sup.clock();
  for (const [key, { instance, hwnds: grantedHwnds }] of granted) {
    if (shown.has(key) || !sup.grants.aliveCheckDue(key, now, ALIVE_RECHECK_MS)) continue;
    // Its hwnd now shows another instance: a replaced window, which the call targeting it reports
    // as target_changed (the chain's instance-change check); not ours to end quietly here.
    if ([...grantedHwnds].some((h) => hwnds.has(h))) continue;
    sup.grants.noteAliveCheck(key, now);
    let alive = true;
    try {
      alive = (
        await sup.workers.capture.call(
          "desktop.alive",
          { instance },
          // Waited for 5 s; only the worker's own deadline may tear it down.
          { deadlineMs: sup.config.workerDeadlineMs, waitMs: 5000, signal },
        )
      ).alive;
    } catch {
      // A slow or restarting worker is no proof of exit.
    }
    if (!alive) {
      sup.grants.revokeInstance(key, "target_gone");
      sup.consent.forgetInstance(key);
      sup.grants.forgetAliveCheck(key);
    }
  }
}
