import { describe, expect, it } from "vitest";
import { instanceKey } from "../../src/shared/identity.js";
import { GrantStore } from "../../src/supervisor/access/grants.js";
import type { WorkerHost, WorkerStats } from "../../src/supervisor/hosting/workerHost.js";
import { keptFrames } from "../../src/supervisor/screenshot/keptFrames.js";
import { FrameMemo } from "../../src/supervisor/screenshot/visual.js";
import { instance, ManualTime } from "./helpers.js";

const A = "aaaaaaaaaaaa";
const B = "bbbbbbbbbbbb";

/** A capture host that records the forgets it is sent, up or not. */
function fakeCapture(state: WorkerStats["state"] = "ready") {
  const sent: unknown[] = [];
  const host: Pick<WorkerHost, "stats" | "call"> = {
    stats: () => ({
      kind: "capture",
      state,
      restarts: 0,
      crashes: 0,
      timeouts: 0,
      inflight: 0,
      isolation: "thread",
    }),
    call: (async (op: string, args: unknown) => {
      sent.push({ op, args });
      return { dropped: 0 };
    }) as WorkerHost["call"],
  };
  return { host, sent };
}

function setup(state?: WorkerStats["state"], memo = new FrameMemo()) {
  const grants = new GrantStore(new ManualTime().clock, 300_000);
  const capture = fakeCapture(state);
  const kept = keptFrames(capture.host, 1000, memo);
  grants.onRevoke((e) => kept.grantEnded(e));
  const i = instance(10);
  for (const client of [A, B]) grants.put({ client, instance: i, hwnd: "1001", capabilities: ["observe"] });
  return { grants, kept, sent: capture.sent, key: instanceKey(i) };
}

describe("the capture worker's kept frames end with the grant", () => {
  it("one identity's grant ending forgets that identity's frames of the instance only", () => {
    const { grants, sent, key } = setup();
    grants.release(A, key);
    grants.revoke(B, key, "consent_required");
    expect(sent).toEqual([
      { op: "capture.forget", args: { client: A, instance: key } },
      { op: "capture.forget", args: { client: B, instance: key } },
    ]);
  });

  it("an instance that changed or ended forgets every identity's frames of it; a reload forgets all", () => {
    const { grants, kept, sent, key } = setup();
    grants.revokeInstance(key, "target_changed");
    expect(sent).toContainEqual({ op: "capture.forget", args: { client: null, instance: key } });
    expect(sent.every((m) => (m as { args: { client: unknown } }).args.client === null)).toBe(true);
    kept.policyChanged();
    expect(sent.at(-1)).toEqual({ op: "capture.forget", args: { client: null, instance: null } });
  });

  it("starts no worker to forget: one that is not up keeps nothing", () => {
    const { grants, sent, key } = setup("stopped");
    grants.revokeClient(A, "credential_revoked");
    grants.revokeInstance(key, "target_gone");
    expect(sent).toEqual([]);
  });

  it("the supervisor's tile hashes of the frames handed out go with the grant too, up or not", () => {
    const memo = new FrameMemo();
    const { grants, kept, key } = setup("stopped", memo);
    const other = instanceKey(instance(11));
    for (const client of [A, B]) {
      memo.remember(client, `${client}-here`, [1, 2, 3], key);
      memo.remember(client, `${client}-there`, { later: "f" }, other);
    }
    grants.release(A, key);
    expect(memo.tiles(A, `${A}-here`)).toBeNull();
    expect(memo.tiles(A, `${A}-there`)).toEqual({ later: "f" });
    expect(memo.tiles(B, `${B}-here`)).toEqual([1, 2, 3]);
    grants.revokeInstance(key, "target_gone");
    expect(memo.tiles(B, `${B}-here`)).toBeNull();
    expect(memo.tiles(B, `${B}-there`)).toEqual({ later: "f" });
    kept.policyChanged();
    expect(memo.tiles(A, `${A}-there`)).toBeNull();
    expect(memo.tiles(B, `${B}-there`)).toBeNull();
  });
});
