import { afterEach, describe, expect, it } from "vitest";
import { Desk, win } from "../support/consent.js";
import { InProcessHarness } from "../support/inProcess.js";
import { LOOSE_BUDGETS, type ServerHarness } from "../support/mcp.js";

/**
 * One automation session per process instance, shared by every identity granted on it (in
 * process, several identities on one supervisor as remote mode serves them): one uia worker
 * per instance whatever the number of identities, refs that resolve only for the identity they
 * were handed to, and per-identity teardown.
 */

interface Node {
  ref: string;
  automation_id: string | null;
  children: Node[];
}
const flatten = (n: Node): Node[] => [n, ...n.children.flatMap(flatten)];
const playOf = (root: unknown): string => {
  const n = flatten(root as Node).find((x) => x.automation_id === "play");
  if (!n) throw new Error("no play button");
  return n.ref;
};

interface UiaStats {
  kind: string;
  sessions?: number;
  workers?: number;
}
async function uia(h: ServerHarness): Promise<UiaStats> {
  const workers = (await h.ok("health_check")).workers as UiaStats[];
  const s = workers.find((w) => w.kind === "uia");
  if (!s) throw new Error("no uia stats");
  return s;
}

const started: InProcessHarness[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((h) => h.close()));
});

async function setup(identities: number, windows = [win(1), win(2)]) {
  const desk = new Desk(windows);
  const main = await InProcessHarness.start({
    UIINSPECT_PLATFORM: "fake",
    UIINSPECT_FAKE_DESKTOP: desk.fake.path,
    DESKTOP_AUTOMATION_POLICY_FILE: desk.policy(),
    ...LOOSE_BUDGETS,
  });
  started.push(main);
  const all: ServerHarness[] = [main];
  const hashes = [main.sup.client().hash];
  for (let i = 1; i < identities; i += 1) {
    const joined = await main.join({ name: `agent-${i}`, version: "1.0.0" });
    all.push(joined);
    hashes.push(joined.clientHash);
  }
  return { desk, main, all, hashes };
}
const invoke = (h: ServerHarness, ref: string) => h.call("invoke_element", { ref });
const invokes = (desk: Desk) => desk.effects().filter((e) => e.type === "a11y").length;

describe("one automation session per process instance", () => {
  it("identities granted on one instance share its one worker; each ref resolves only for its own identity", async () => {
    const { desk, main, all } = await setup(4);
    const refs: string[] = [];
    for (const h of all) {
      await h.ok("request_access", { hwnd: 1001 });
      refs.push(playOf((await h.ok("inspect_tree", { hwnd: 1001 })).root));
    }
    expect(new Set(refs).size).toBe(4);
    // Four identities, one instance: one worker, four sessions on it.
    expect(await uia(main)).toMatchObject({ workers: 1, sessions: 4 });
    // Another instance granted to one identity: a second worker.
    await all[1].ok("request_access", { hwnd: 1002 });
    await all[1].ok("inspect_tree", { hwnd: 1002 });
    expect(await uia(main)).toMatchObject({ workers: 2, sessions: 5 });

    // Every identity's own ref acts; anyone else's is element_stale and acts on nothing.
    for (let i = 0; i < all.length; i += 1) {
      const before = invokes(desk);
      for (let j = 0; j < refs.length; j += 1) {
        if (j === i) continue;
        expect((await invoke(all[i], refs[j])).code).toBe("element_stale");
      }
      expect(invokes(desk)).toBe(before);
      expect((await invoke(all[i], refs[i])).isError).toBe(false);
      expect(invokes(desk)).toBe(before + 1);
    }
    // The worker's own part of a ref under another identity's tag is no key either.
    const [tag0] = refs[0].split(".");
    const [, inner1] = refs[1].split(".");
    expect((await invoke(all[1], `${tag0}.${inner1}`)).code).toBe("element_stale");
  });

  it("revoking one identity drops only its refs; the worker ends with the last grant on the instance", async () => {
    const { main, all } = await setup(3);
    const refs: string[] = [];
    for (const h of all) {
      await h.ok("request_access", { hwnd: 1001 });
      refs.push(playOf((await h.ok("inspect_tree", { hwnd: 1001 })).root));
    }
    expect(await all[1].ok("release_access", { hwnd: 1001 })).toMatchObject({ released: true });
    expect(await uia(main)).toMatchObject({ workers: 1, sessions: 2 });
    expect((await invoke(all[0], refs[0])).isError).toBe(false);
    expect((await invoke(all[2], refs[2])).isError).toBe(false);
    // The released identity's ref stays stale, also once it is granted again and walks anew.
    await all[1].ok("request_access", { hwnd: 1001 });
    const again = playOf((await all[1].ok("inspect_tree", { hwnd: 1001 })).root);
    expect(again).not.toBe(refs[1]);
    expect((await invoke(all[1], refs[1])).code).toBe("element_stale");
    expect((await invoke(all[1], again)).isError).toBe(false);

    for (const h of all) await h.ok("release_access", { hwnd: 1001 });
    expect(await uia(main)).toMatchObject({ workers: 0, sessions: 0 });
    for (let i = 0; i < all.length; i += 1)
      expect((await invoke(all[i], refs[i])).code).toBe("element_stale");
  });

  it("an instance change ends the shared session for every identity; the new instance gets a new worker", async () => {
    const { desk, main, all } = await setup(3);
    const refs: string[] = [];
    for (const h of all) {
      await h.ok("request_access", { hwnd: 1001 });
      refs.push(playOf((await h.ok("inspect_tree", { hwnd: 1001 })).root));
    }
    desk.reusePid(1001);
    expect((await invoke(all[0], refs[0])).code).toBe("target_changed");
    expect(await uia(main)).toMatchObject({ workers: 0, sessions: 0 });
    for (let i = 1; i < all.length; i += 1)
      expect((await invoke(all[i], refs[i])).code).toBe("element_stale");
    await all[2].ok("request_access", { hwnd: 1001 });
    const fresh = playOf((await all[2].ok("inspect_tree", { hwnd: 1001 })).root);
    expect((await invoke(all[2], fresh)).isError).toBe(false);
    expect(await uia(main)).toMatchObject({ workers: 1, sessions: 1 });
  });

  it("a revoked credential's identity loses only its own state on the shared worker", async () => {
    const { main, all, hashes } = await setup(2);
    const refs: string[] = [];
    for (const h of all) {
      await h.ok("request_access", { hwnd: 1001 });
      refs.push(playOf((await h.ok("inspect_tree", { hwnd: 1001 })).root));
    }
    const { endClient } = await import("../../src/supervisor/mcp/multiSession.js");
    expect(endClient(main.sup, hashes[1] ?? "").grants).toBe(1);
    expect(await uia(main)).toMatchObject({ workers: 1, sessions: 1 });
    expect((await invoke(all[0], refs[0])).isError).toBe(false);
    expect((await invoke(all[1], refs[1])).code).toBe("element_stale");
  });
});
