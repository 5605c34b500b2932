import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWaylandPlatform, type WaylandPlatform } from "../../src/platforms/wayland/index.js";
import { PortalSession } from "../../src/platforms/wayland/portalSession.js";
import { uiError } from "../../src/shared/errors.js";
import type { TargetExpectation, WorkerInit } from "../../src/shared/protocol.js";
import { captureHandlers } from "../../src/workers/capture/handlers.js";
import type { HandlerContext } from "../../src/workers/handlers.js";
import { inputHandlers } from "../../src/workers/input/handlers.js";
import { verifyTarget } from "../../src/workers/verify.js";
import { codeOf } from "../support/codes.js";
import {
  A11yReader,
  answerPicker,
  readOwnMonitorFrame,
  runAttacker,
  SESSION_HOOK_MS,
  startApp,
  startSession,
  stopApps,
  WAYLAND_AVAILABLE,
  type WaylandSession,
  waitFor,
} from "./support.js";

/**
 * A window the person shared through the desktop portal (RemoteDesktop with a window and a
 * monitor source, answered here through the picker's own AT-SPI objects), on headless GNOME
 * with a real GTK 3 application: its screenshot from its window stream, a click through the
 * portal session proven by the window stream matching the monitor stream around the point, and
 * the refusal when the window is replaced between the check and the press. A second program's window
 * covering the point is refused live (occluded, nothing pressed); moved windows are proven on
 * synthetic pictures in test/unit/wayland-stream-match.test.ts. The worker handlers run in process on the real platform; effects are
 * read back through the test's own AT-SPI connection.
 */

const MONITOR = { width: 1280, height: 800 };
const ST_CHECKED = 4;
const ST_SENSITIVE = 24;
const FACTORY = "gtk3-widget-factory";

describe.skipIf(!WAYLAND_AVAILABLE)("wayland: a window shared through the portal", () => {
  let session: WaylandSession;
  let reader: A11yReader;
  let p: WaylandPlatform;
  let portal: PortalSession | null = null;
  let factory: ChildProcess;
  let target: TargetExpectation;
  const apps: ChildProcess[] = [];

  const ctx = (kind: WorkerInit["kind"]): HandlerContext => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(uiError("worker_timeout")), 20_000).unref();
    return {
      signal: ac.signal,
      deadline: Date.now() + 20_000,
      init: { kind, platform: "wayland", fake_desktop: null, log_level: "warn" },
      platform: p,
    };
  };

  const click = (x: number, y: number) => {
    const h = inputHandlers["input.pointer"];
    if (!h) throw new Error("no pointer handler");
    return h(
      { target, kind: "click", x, y, dwell_ms: 0, notches: 0, focus_mode: "passive", prove_delivery: false },
      ctx("input"),
    );
  };

  const shot = (region: [number, number, number, number], samples: Array<[number, number]>) => {
    const h = captureHandlers["capture.region"];
    if (!h) throw new Error("no capture handler");
    return h(
      {
        target,
        region,
        masks: [],
        grid_spacing: null,
        output: "sha256",
        unless_hash: null,
        tiles: false,
        keep_for: null,
        max_png_bytes: 8_000_000,
        compression_level: 1,
        sample_points: samples,
        listing: null,
        listing_id: null,
      },
      ctx("capture"),
    );
  };

  /** The sensitive check buttons of the factory, with their window-coordinate boxes. */
  let buttons: Array<{ bus: string; path: string; rect: [number, number, number, number] }> | null = null;
  const checkButtons = async () => {
    // Found once (a walk of the whole factory is slow on a loaded machine); states read afresh.
    buttons ??= (await reader.findAll(FACTORY, "check box", "checkbutton")).filter(
      (c) => (c.states >> ST_SENSITIVE) & 1,
    );
    const out = [];
    for (const b of buttons) out.push({ ...b, states: await reader.states(b.bus, b.path) });
    return out;
  };
  const checked = async (node: { bus: string; path: string }) =>
    (((await reader.states(node.bus, node.path)) >> ST_CHECKED) & 1) === 1;

  beforeAll(async () => {
    session = await startSession();
    // The shell starts in its overview (windows shown scaled): Escape twice leaves it.
    await runAttacker(["keysyms", "0xff1b", "0xff1b"]);
    factory = startApp(FACTORY, [], apps);
    reader = await A11yReader.open();
    p = await createWaylandPlatform({ workerKind: "input" });
    const w = await waitFor(
      "the factory's window",
      async () => (await p.desktop.listWindows()).find((x) => x.pid === factory.pid && x.instance) ?? null,
    );
    if (!w.instance) throw new Error("no instance");
    target = { hwnd: w.hwnd, instance: w.instance };
  }, SESSION_HOOK_MS);

  afterAll(async () => {
    await portal?.close();
    await p?.dispose();
    reader?.close();
    stopApps(apps);
    session?.stop();
  });

  it("before anything is shared, screenshots and clicks are refused and nothing is pressed", async () => {
    expect(await codeOf(shot([0, 0, 100, 100], []))).toBe("platform_unavailable");
    expect(await codeOf(click(50, 50))).toBe("platform_unavailable");
  });

  it("the person's answer in the portal's dialog gives a window stream, a monitor stream and the pointer", async () => {
    const opening = PortalSession.open({
      devices: { keyboard: true, pointer: true },
      sources: { window: true, monitor: true },
      timeoutMs: 60_000,
    });
    await answerPicker(reader, { windowApp: FACTORY, monitor: true, allowInput: true });
    portal = await opening;
    expect(portal.stream("window")?.node).toBeGreaterThan(0);
    expect(portal.stream("monitor")?.node).toBeGreaterThan(0);
    expect(portal.devices.pointer).toBe(true);
    // persist_mode none: no restore token exists.
    expect(portal.restoreToken).toBeNull();
    p.bindPortalSession(target.hwnd, portal);
  });

  it("a person's Cancel in the dialog is consent_denied, and no session remains", async () => {
    const opening = PortalSession.open({
      devices: { keyboard: false, pointer: true },
      sources: { window: true, monitor: true },
      timeoutMs: 60_000,
    });
    const answered = answerPicker(reader, {
      windowApp: FACTORY,
      monitor: true,
      allowInput: true,
      share: false,
    });
    expect(await codeOf(opening)).toBe("consent_denied");
    await answered;
  });

  it("screenshot of the shared window: the window stream's pixels, the same the monitor shows there", async () => {
    if (!portal) throw new Error("no portal session");
    const [cb] = await checkButtons();
    const [x, y] = [cb.rect[0] + 10, cb.rect[1] + 10];
    // Where the monitor shows the window, as the point check proves it.
    const v = await verifyTarget(p.desktop, target, { points: [{ x, y }] });
    const tag = v.proof?.points[0]?.path[1] ?? "";
    const m = /^monitor-offset:(-?\d+),(-?\d+)$/.exec(tag);
    expect(m).not.toBeNull();
    const [dx, dy] = [Number(m?.[1]), Number(m?.[2])];
    const samples: Array<[number, number]> = [];
    for (let i = 0; i < 40; i++) samples.push([40 + ((i * 37) % 360), 60 + ((i * 53) % 400)]);
    const r = await shot([0, 0, 420, 480], samples);
    expect(r.width).toBe(420);
    expect(r.height).toBe(480);
    // An independent read of the monitor: every sample the screenshot has is what the monitor
    // shows at the window's place, read from a screen cast of the test's own.
    const mon = await readOwnMonitorFrame(MONITOR, 60_000);
    const hex = (sx: number, sy: number) => {
      const i = (sy * MONITOR.width + sx) * 3;
      return `#${[mon[i], mon[i + 1], mon[i + 2]].map((c) => c.toString(16).padStart(2, "0")).join("")}`;
    };
    const same = samples.filter(([sx, sy], i) => r.samples?.[i] === hex(sx + dx, sy + dy)).length;
    expect(same).toBe(samples.length);
    expect(new Set(r.samples).size).toBeGreaterThan(3);
  }, 300_000);

  it("a click through the portal session toggles a GTK check button (read back over AT-SPI)", async () => {
    const box = (await checkButtons()).find((c) => ((c.states >> ST_CHECKED) & 1) === 0);
    if (!box) throw new Error("no unchecked check button");
    const [x, y] = [box.rect[0] + 12, box.rect[1] + Math.floor(box.rect[3] / 2)];
    expect(await codeOf(click(x, y))).toBe("ok");
    await waitFor("the check button checked", async () => ((await checked(box)) ? true : null), 5000);
    // And back.
    expect(await codeOf(click(x, y))).toBe("ok");
    await waitFor("the check button unchecked", async () => ((await checked(box)) ? null : true), 5000);
  });

  it("keys and text stay refused (not_foreground): the compositor does not say where the focus is", async () => {
    const h = inputHandlers["input.keys"];
    if (!h) throw new Error("no keys handler");
    const code = await codeOf(
      h({ target, steps: [{ key: "a", modifiers: [], hold_ms: 0 }], focus_mode: "passive" }, ctx("input")),
    );
    expect(code).toBe("not_foreground");
  });

  it("attack: another program's window covers the point: the same click is refused (occluded), nothing is pressed; uncovered it works again", async () => {
    const box = (await checkButtons()).find((c) => ((c.states >> ST_CHECKED) & 1) === 0);
    if (!box) throw new Error("no unchecked check button");
    const [x, y] = [box.rect[0] + 12, box.rect[1] + Math.floor(box.rect[3] / 2)];
    const proven = async () => codeOf(verifyTarget(p.desktop, target, { points: [{ x, y }] }));
    // Uncovered, the point is proven first (the press itself is shown working in the test above).
    await waitFor("the point proven", async () => ((await proven()) === "ok" ? true : null), 20_000);
    // A separate process opens a window as large as the monitor: mutter maps it focused and on
    // top, over the factory's point. Killed however this test ends, so that no cover is left over
    // the factory for the next test.
    const cover = startApp("zenity", ["--info", "--text=cover", "--width=1280", "--height=800"], apps);
    try {
      // zenity took 24 s to show its window at load 20 on two cores (a wait, not an assertion).
      await waitFor(
        "the cover's window",
        async () => ((await p.desktop.listWindows()).some((w) => w.pid === cover.pid) ? true : null),
        120_000,
      );
      // While the shell maps the cover (its animation), a frame may show it only in part: wait
      // until the point is refused steadily before the click.
      let covered = 0;
      await waitFor(
        "the point covered on the monitor",
        async () => {
          covered = (await proven()) === "occluded" ? covered + 1 : 0;
          return covered >= 5 ? true : null;
        },
        60_000,
      );
      expect(await codeOf(click(x, y))).toBe("occluded");
      // Nothing was pressed: still unchecked (read over the test's own AT-SPI connection).
      await new Promise((r) => setTimeout(r, 500));
      expect(await checked(box)).toBe(false);
    } finally {
      cover.kill("SIGKILL");
    }
    // While the shell unmaps the cover and refocuses the factory (redrawn out of its backdrop
    // look) the two streams disagree for a while: wait until the point is proven steadily.
    let steady = 0;
    await waitFor(
      "the point shown again",
      async () => {
        steady = (await proven()) === "ok" ? steady + 1 : 0;
        return steady >= 5 ? true : null;
      },
      30_000,
    );
    expect(await codeOf(click(x, y))).toBe("ok");
    await waitFor("the check button checked", async () => ((await checked(box)) ? true : null), 5000);
    expect(await codeOf(click(x, y))).toBe("ok");
    await waitFor("the check button unchecked", async () => ((await checked(box)) ? null : true), 5000);
  }, 300_000);

  it("attack: the window is replaced after the check: its stream ends and the press is refused", async () => {
    if (!portal) throw new Error("no portal session");
    const [cb] = await checkButtons();
    const [x, y] = [cb.rect[0] + 12, cb.rect[1] + 10];
    const before = await verifyTarget(p.desktop, target, { points: [{ x, y }] });
    await p.input.moveTo(x, y);
    factory.kill("SIGKILL");
    const other = startApp("zenity", ["--info", "--text=replacement", "--width=1280", "--height=800"], apps);
    await waitFor("the replacement on the a11y bus", async () =>
      (await reader.apps()).some((a) => a.pid === other.pid) ? true : null,
    );
    const code = await waitFor(
      "the press refused",
      async () => {
        const c = await codeOf(p.input.buttonDown("left", before.proof));
        await p.input.buttonUp("left").catch(() => {});
        return c === "ok" ? null : c;
      },
      10_000,
    );
    expect(["target_gone", "platform_unavailable"]).toContain(code);
    // The compositor ends the session with the shared window; the binding goes with it.
    const reason = await Promise.race([portal.closed, new Promise((r) => setTimeout(() => r("open"), 5000))]);
    expect(reason).toBe("closed_by_compositor");
    expect(await codeOf(shot([0, 0, 10, 10], []))).not.toBe("ok");
  });
});
