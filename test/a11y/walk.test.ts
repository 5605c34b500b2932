import { describe, expect, it } from "vitest";
import { OPS, type OpName, type OpResult } from "../../src/shared/protocol.js";
import type { HandlerContext } from "../../src/workers/handlers.js";
import { createUiaRuntime, type UiaOptions } from "../../src/workers/uia/handlers.js";
import {
  DOUBLE_INSTANCE,
  DOUBLE_TARGET,
  type DoubleNode,
  DoubleProvider,
  doubleCtx,
  doublePlatform,
  doubleWindow,
  wideTree,
} from "./double.js";
import { failure, flatten } from "./helpers.js";

function setup(
  root: DoubleNode,
  opts: ConstructorParameters<typeof DoubleProvider>[1] = {},
  rt: UiaOptions = {},
) {
  const provider = new DoubleProvider(root, opts);
  const platform = doublePlatform(provider, opts.windowRect);
  const runtime = createUiaRuntime({ env: () => ({}), ...rt });
  const call = async <K extends OpName>(
    op: K,
    args: Record<string, unknown>,
    ctx: HandlerContext = doubleCtx(platform),
  ): Promise<OpResult<K>> => {
    const h = runtime.handlers[op] as unknown as (a: unknown, c: HandlerContext) => Promise<unknown>;
    return OPS[op].result.parse(await h(OPS[op].args.parse(args), ctx)) as OpResult<K>;
  };
  return { provider, platform, runtime, call };
}

const inspect = (over: Record<string, unknown> = {}) => ({
  session_key: "k",
  target: DOUBLE_TARGET,
  max_depth: 32,
  max_nodes: 5000,
  deadline_ms: 5000,
  root_ref: null,
  ...over,
});

describe("bounded walk", () => {
  it("a provider that never answers for one node still gives a truncated answer", async () => {
    const root: DoubleNode = {
      id: "root",
      children: [{ id: "a" }, { id: "stuck", hang: true }, { id: "b" }],
    };
    const { call } = setup(root);
    const r = await call("a11y.inspect", inspect({ deadline_ms: 200 }));
    expect(r.truncated).toBe(true);
    expect(flatten(r.root).map((n) => n.name)).toEqual(["root", "a", "b"]);
  });

  it("a root that never answers fails with worker_timeout instead of hanging", async () => {
    const { call } = setup({ id: "root", hang: true });
    expect((await failure(call("a11y.inspect", inspect({ deadline_ms: 100 })))).code).toBe("worker_timeout");
  });

  it("answers before the worker's own deadline even when deadline_ms is longer", async () => {
    const root: DoubleNode = { id: "root", children: [{ id: "stuck", hang: true }] };
    const { call, platform } = setup(root);
    const r = await call(
      "a11y.inspect",
      inspect({ deadline_ms: 60_000 }),
      doubleCtx(platform, undefined, 400),
    );
    expect(r.truncated).toBe(true);
    expect(r.node_count).toBe(1);
  });

  it("a cancelled request fails with cancelled", async () => {
    const root: DoubleNode = { id: "root", children: [{ id: "stuck", hang: true }] };
    const { call, platform } = setup(root);
    const ac = new AbortController();
    const p = call("a11y.inspect", inspect(), doubleCtx(platform, ac.signal));
    setTimeout(() => ac.abort(), 50);
    expect((await failure(p)).code).toBe("cancelled");
    const ac2 = new AbortController();
    ac2.abort();
    expect((await failure(call("a11y.inspect", inspect(), doubleCtx(platform, ac2.signal)))).code).toBe(
      "cancelled",
    );
  });

  it("fetches in parallel, at most 32 calls at a time", async () => {
    const { call, provider } = setup(wideTree(200, 50), { delayMs: 3 });
    const r = await call("a11y.inspect", inspect());
    expect(r.node_count).toBe(200);
    expect(r.truncated).toBe(false);
    expect(provider.maxInFlight).toBeGreaterThan(1);
    expect(provider.maxInFlight).toBeLessThanOrEqual(32);
  });

  it("honours the concurrency option", async () => {
    const { call, provider } = setup(wideTree(50, 10), { delayMs: 1 }, { concurrency: 2 });
    await call("a11y.inspect", inspect());
    expect(provider.maxInFlight).toBeLessThanOrEqual(2);
  });

  it("walks 5000 nodes exactly and truncates at 5001", async () => {
    const full = setup(wideTree(5000, 20));
    const r = await full.call("a11y.inspect", inspect());
    expect(r.node_count).toBe(5000);
    expect(r.truncated).toBe(false);
    const over = setup(wideTree(5001, 20));
    const r2 = await over.call("a11y.inspect", inspect());
    expect(r2.node_count).toBe(5000);
    expect(r2.truncated).toBe(true);
    // Never more children asked for than could be shown.
    expect(over.provider.calls.facts).toBe(5000);
  });

  it("find looks at 5000 nodes at most and reports truncation", async () => {
    const { call } = setup(wideTree(6000, 30));
    const miss = await call("a11y.find", {
      session_key: "k",
      target: DOUBLE_TARGET,
      name_contains: "n5999",
      role: null,
      automation_id: null,
      max_results: 10,
      deadline_ms: 5000,
    });
    expect(miss.elements).toEqual([]);
    expect(miss.truncated).toBe(true);
    const hit = await call("a11y.find", {
      session_key: "k",
      target: DOUBLE_TARGET,
      name_contains: "n4999",
      role: null,
      automation_id: null,
      max_results: 10,
      deadline_ms: 5000,
    });
    expect(hit.elements.map((e) => e.name)).toEqual(["n4999"]);
  });

  it("with a new handle per call, refs stay valid and the oldest go stale past the cap", async () => {
    const root: DoubleNode = {
      id: "root",
      children: [{ id: "go", facts: { patterns: ["invoke"] } }, { id: "x" }, { id: "y" }],
    };
    const { call, provider } = setup(root, { freshHandles: true }, { maxRefsPerSession: 4 });
    const first = await call("a11y.inspect", inspect());
    const go1 = first.root.children[0] as { ref: string };
    await call("a11y.act", {
      session_key: "k",
      target: DOUBLE_TARGET,
      ref: go1.ref,
      action: "invoke",
      value: null,
    });
    const second = await call("a11y.inspect", inspect());
    const go2 = second.root.children[0] as { ref: string };
    expect(go2.ref).not.toBe(go1.ref);
    expect(
      (
        await failure(
          call("a11y.act", {
            session_key: "k",
            target: DOUBLE_TARGET,
            ref: go1.ref,
            action: "invoke",
            value: null,
          }),
        )
      ).code,
    ).toBe("element_stale");
    await call("a11y.act", {
      session_key: "k",
      target: DOUBLE_TARGET,
      ref: go2.ref,
      action: "invoke",
      value: null,
    });
    expect(provider.acted.map((a) => a.id)).toEqual(["go", "go"]);
  });

  it("when the provider hands out the same handle, the node keeps its ref", async () => {
    const { call } = setup(wideTree(30, 5));
    const a = await call("a11y.inspect", inspect());
    const b = await call("a11y.inspect", inspect());
    expect(flatten(b.root).map((n) => n.ref)).toEqual(flatten(a.root).map((n) => n.ref));
  });

  it("a node removed during the session: its ref is stale, the session goes on", async () => {
    const root: DoubleNode = {
      id: "root",
      children: [{ id: "go", facts: { patterns: ["invoke"] } }, { id: "x" }],
    };
    const { call, provider } = setup(root);
    const r = await call("a11y.inspect", inspect());
    const ref = (r.root.children[0] as { ref: string }).ref;
    provider.removed.add("go");
    expect(
      (
        await failure(
          call("a11y.act", { session_key: "k", target: DOUBLE_TARGET, ref, action: "invoke", value: null }),
        )
      ).code,
    ).toBe("element_stale");
    expect(
      (await failure(call("a11y.element_center", { session_key: "k", target: DOUBLE_TARGET, ref }))).code,
    ).toBe("element_stale");
    expect((await failure(call("a11y.inspect", inspect({ root_ref: ref })))).code).toBe("element_stale");
    const again = await call("a11y.inspect", inspect());
    expect(again.node_count).toBe(2);
    expect(provider.calls.openSession).toBe(1);
  });

  it("disposing a session releases the provider session once", async () => {
    const { call, provider } = setup({ id: "root" });
    await call("a11y.inspect", inspect());
    expect(await call("a11y.dispose", { session_key: "k" })).toEqual({ disposed: true });
    expect(provider.calls.dispose).toBe(1);
    expect(await call("a11y.dispose", { session_key: "k" })).toEqual({ disposed: false });
    expect(provider.calls.dispose).toBe(1);
  });
});

describe("semantic actions only", () => {
  it("refuses an action whose pattern the element lacks without calling the provider's act", async () => {
    // This provider would "do something" for any action on a node with any pattern.
    const root: DoubleNode = { id: "root", children: [{ id: "t", facts: { patterns: ["toggle"] } }] };
    const { call, provider } = setup(root);
    const r = await call("a11y.inspect", inspect());
    const ref = (r.root.children[0] as { ref: string }).ref;
    for (const action of ["invoke", "select", "expand", "collapse"]) {
      const e = await failure(
        call("a11y.act", { session_key: "k", target: DOUBLE_TARGET, ref, action, value: null }),
      );
      expect(e.code).toBe("pattern_not_supported");
    }
    expect(provider.calls.act).toBe(0);
    await call("a11y.act", { session_key: "k", target: DOUBLE_TARGET, ref, action: "toggle", value: null });
    expect(provider.acted).toEqual([{ id: "t", action: "toggle" }]);
  });
});

describe("attach", () => {
  it("re-resolves the identity right after attaching: a change disposes the new session", async () => {
    const current = { window: doubleWindow() };
    const provider = new DoubleProvider(
      { id: "root" },
      {
        onOpen: () => {
          // PID reuse while attaching: same pid and window, another process start.
          current.window = {
            ...current.window,
            instance: { ...DOUBLE_INSTANCE, start_time: "2026-11-30T09:00:00.000Z" },
          };
        },
      },
    );
    const platform = doublePlatform(provider, undefined, current);
    const runtime = createUiaRuntime({ env: () => ({}) });
    const h = runtime.handlers["a11y.inspect"] as NonNullable<(typeof runtime.handlers)["a11y.inspect"]>;
    const e = await failure(h(OPS["a11y.inspect"].args.parse(inspect()), doubleCtx(platform)));
    expect(e.code).toBe("target_changed");
    expect(provider.calls.openSession).toBe(1);
    expect(provider.calls.dispose).toBe(1);
    expect(provider.calls.facts).toBe(0);
    expect(runtime.store.size).toBe(0);
  });

  it("a dispose while a session is being opened wins: the new session is not kept", async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const { call, provider, runtime } = setup({ id: "root" }, { onOpen: () => gate });
    const pending = failure(call("a11y.inspect", inspect()));
    await new Promise((r) => setTimeout(r, 20));
    await call("a11y.dispose", { session_key: "k" });
    release();
    expect((await pending).code).toBe("element_stale");
    expect(provider.calls.dispose).toBe(1);
    expect(runtime.store.size).toBe(0);
    // The next request opens a fresh session normally.
    const r = await call("a11y.inspect", inspect());
    expect(r.node_count).toBe(1);
  });
});
