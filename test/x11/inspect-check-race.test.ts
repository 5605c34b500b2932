import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DesktopPort, Platform, WindowInfo } from "../../src/shared/platform.js";
import { OPS, type TargetExpectation } from "../../src/shared/protocol.js";
import type { HandlerContext } from "../../src/workers/handlers.js";
import { createUiaRuntime, type UiaRuntime } from "../../src/workers/uia/handlers.js";
import { recording } from "../a11y/observed.js";
import {
  type App,
  startApp,
  startSession,
  waitFor,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
  xdotool,
} from "./support.js";

type Op = "a11y.inspect" | "a11y.find";
const OPS_RACED: Op[] = ["a11y.inspect", "a11y.find"];

/**
 * The uia worker's own target check runs beside the walk on an open session, for an inspection
 * and for a find. Here the window changes after the walk has started and while the check runs,
 * on a real X server and a real GTK app: minimized before the check's listing, destroyed (XKillClient) between the listing,
 * which still shows it, and what the X server itself is asked (confirmLive). Each is refused as
 * a check before the walk was refused, and no node or match leaves.
 */
describe.skipIf(!X11_AVAILABLE)("x11: a window changed while its inspection or find walks", () => {
  let session: X11Session;
  let p: Platform;
  let runtime: UiaRuntime;
  const log: string[] = [];
  /** Runs once inside the next check, at its listing or at its server-side confirmation. */
  let atListing: (() => Promise<void>) | null = null;
  let atConfirm: (() => Promise<void>) | null = null;
  let platform: Platform;

  beforeAll(async () => {
    session = startSession();
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "uia" });
    runtime = createUiaRuntime({ env: () => ({}) });
    const desk = p.desktop;
    const confirm = desk.confirmLive;
    if (confirm === undefined) throw new Error("the X11 desktop confirms with the X server");
    const desktop: DesktopPort = Object.assign(Object.create(desk) as DesktopPort, {
      listWindows: async () => {
        log.push("check:listing");
        const f = atListing;
        atListing = null;
        await f?.();
        return desk.listWindows();
      },
      confirmLive: async (...a: Parameters<typeof confirm>) => {
        log.push("check:confirm");
        const f = atConfirm;
        atConfirm = null;
        await f?.();
        return confirm.apply(desk, a);
      },
    });
    platform = {
      ...p,
      desktop,
      accessibility: recording(p.accessibility, (k) => {
        log.push(`walk:${k}`);
        return undefined;
      }),
    };
  });

  afterAll(async () => {
    await runtime?.shutdown();
    await p?.dispose();
    session?.stop();
  });

  function ctx(): HandlerContext {
    return {
      signal: new AbortController().signal,
      deadline: Date.now() + 20_000,
      init: { kind: "uia", platform: "x11", fake_desktop: null, log_level: "silent" },
      platform,
    };
  }

  /** One observation of the window under key k1: its node count, or the code it failed with. */
  async function observe(
    op: Op,
    target: TargetExpectation,
    ahead = false,
  ): Promise<{ count: number } | { code: string }> {
    const args =
      op === "a11y.inspect"
        ? OPS[op].args.parse({
            session_key: "k1",
            target,
            max_depth: 8,
            max_nodes: 500,
            deadline_ms: 15_000,
            root_ref: null,
            ahead,
          })
        : OPS[op].args.parse({
            session_key: "k1",
            target,
            name_contains: null,
            role: null,
            automation_id: null,
            max_results: 500,
            deadline_ms: 15_000,
            ahead,
          });
    try {
      const r = await runtime.handlers[op]?.(args as never, ctx());
      if (op === "a11y.inspect") return { count: OPS[op].result.parse(r).node_count };
      return { count: OPS["a11y.find"].result.parse(r).elements.length };
    } catch (e) {
      return { code: String((e as { code?: unknown }).code) };
    }
  }

  async function opened(
    op: Op,
    title: string,
  ): Promise<{ app: App; w: WindowInfo; target: TargetExpectation }> {
    // Each case on its own: no session left by the one before.
    await runtime.store.endAll();
    const app = startApp("zenity", ["--forms", `--title=${title}`, "--add-entry=Login", "--add-entry=Mail"]);
    const w = await waitForWindow(p, title);
    if (w.instance === null) throw new Error("the test's own window has an instance");
    const target: TargetExpectation = { hwnd: w.hwnd, instance: w.instance };
    // The first observation opens the session (checked first); the walk is then beside the check.
    const first = await observe(op, target);
    expect("count" in first && first.count).toBeGreaterThan(3);
    expect(runtime.store.size).toBe(1);
    return { app, w, target };
  }

  /** What atListing runs to minimize `w` inside the check, once the X server says it is. */
  const minimizing = (w: WindowInfo) => async () => {
    xdotool("windowminimize", w.hwnd);
    await waitFor("window minimized", async () => (await p.desktop.getWindow(w.hwnd))?.iconic);
  };

  /** Whether the walk had sent its first provider call before the check's first request. */
  function walkedFirst(): boolean {
    const walked = log.findIndex((e) => e.startsWith("walk:"));
    return walked >= 0 && walked < log.indexOf("check:listing");
  }

  it.each(OPS_RACED)("%s, control: an unchanged window walks beside its check and answers", async (op) => {
    const { app, target } = await opened(op, "uix race control");
    log.length = 0;
    const r = await observe(op, target);
    expect("count" in r && r.count).toBeGreaterThan(3);
    expect(walkedFirst()).toBe(true);
    expect(log).toContain("check:confirm");
    app.child.kill("SIGKILL");
    await app.exited;
    await runtime.store.endKey("k1");
  });

  it.each(OPS_RACED)(
    "%s, minimized after the walk started, before the check's listing: minimized, no nodes",
    async (op) => {
      const { app, w, target } = await opened(op, "uix race minimize");
      log.length = 0;
      atListing = minimizing(w);
      const r = await observe(op, target);
      expect(r).toEqual({ code: "minimized" });
      expect(walkedFirst()).toBe(true);
      expect(runtime.store.size).toBe(0);
      app.child.kill("SIGKILL");
      await app.exited;
    },
  );

  it.each(OPS_RACED)(
    "%s sent ahead of its authorization, minimized meanwhile: minimized, no nodes, the session kept",
    async (op) => {
      const { app, w, target } = await opened(op, "uix race ahead");
      log.length = 0;
      atListing = minimizing(w);
      const r = await observe(op, target, true);
      expect(r).toEqual({ code: "minimized" });
      expect(walkedFirst()).toBe(true);
      // Nothing ended: the authorized call asks again, and its refusal ends the session.
      expect(runtime.store.size).toBe(1);
      expect(await observe(op, target)).toEqual({ code: "minimized" });
      expect(runtime.store.size).toBe(0);
      app.child.kill("SIGKILL");
      await app.exited;
    },
  );

  it.each(OPS_RACED)(
    "%s, destroyed (XKillClient) after the listing showed it, before the X server is asked: target_gone, no nodes",
    async (op) => {
      const { app, w, target } = await opened(op, "uix race kill");
      log.length = 0;
      atConfirm = async () => {
        xdotool("windowkill", w.hwnd);
        await waitFor("window destroyed", async () =>
          (await p.desktop.getWindow(w.hwnd)) === null ? true : null,
        );
      };
      const r = await observe(op, target);
      expect(r).toEqual({ code: "target_gone" });
      expect(walkedFirst()).toBe(true);
      expect(log).toContain("check:confirm");
      expect(runtime.store.size).toBe(0);
      await app.exited;
    },
  );
});
