import type { RevokeEvent } from "../access/grants.js";
import type { WorkerHost } from "../hosting/workerHost.js";
import { type FrameMemo, frameMemo } from "./visual.js";

/**
 * The capture worker keeps a copy of each screenshot it answered with tiles "later", for the
 * identity it was answered to and the instance it showed (src/workers/capture/laterTiles.ts).
 * When a grant ends those copies go with it: the identity's of that instance, or every
 * identity's when the instance itself changed or ended. A later wait since such a frame then
 * finds no tiles and reports the whole region as changed, as for a frame it never saw. The
 * supervisor's memo of the tile hashes it handed out (FrameMemo: wait_for_visual_change keeps
 * them itself) drops the same entries.
 */
export interface KeptFrames {
  /** A grant ended (release, expiry, revocation, target changed or gone, credential revoked). */
  grantEnded(e: RevokeEvent): void;
  /** The policy changed: it may no longer allow a window any kept frame shows. */
  policyChanged(): void;
}

/** Revocations that end the instance for everyone, not one identity's grant on it. */
const INSTANCE_WIDE = new Set<RevokeEvent["reason"]>(["target_changed", "target_gone"]);

export function keptFrames(
  capture: Pick<WorkerHost, "stats" | "call">,
  deadlineMs: number,
  memo: FrameMemo = frameMemo,
): KeptFrames {
  const forget = (client: string | null, instance: string | null) => {
    memo.forget(client, instance);
    // A worker that is not up keeps nothing (a restarted worker starts empty): none is started
    // for this. The message goes behind every shot already sent, so the worker voids their copies.
    if (capture.stats().state !== "ready") return;
    capture.call("capture.forget", { client, instance }, { deadlineMs }).catch(() => undefined);
  };
  return {
    grantEnded: ({ grant, reason }) =>
      forget(INSTANCE_WIDE.has(reason) ? null : grant.client, grant.instanceKey),
    policyChanged: () => forget(null, null),
  };
}
