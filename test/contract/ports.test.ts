import { rmSync } from "node:fs";
import type dbus from "dbus-next";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFakePlatform } from "../../src/platforms/fake/index.js";
import { isUiError } from "../../src/shared/errors.js";
import type { Rect } from "../../src/shared/geometry.js";
import { type Platform, type WindowInfo, WindowInfoSchema } from "../../src/shared/platform.js";
import { verifyTarget } from "../../src/workers/verify.js";
import { FakeDesktop, ruffleWindow } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import { type Attacker, buildAttacker, startAttacker } from "../x11/attacker.js";
import {
  type App,
  atspiBus,
  atspiText,
  startApp,
  startSession,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
  xdotool,
} from "../x11/support.js";
import { type ContractCheck, type ContractContext, PORT_CONTRACT, type Undo } from "./cases.mjs";

/**
 * The port contract (test/contract/cases.mjs) over the fake desktop and over X11 (Xvfb + openbox,
 * a GTK window; skipped without the tools unless UIINSPECT_REQUIRE_X11=1). The same cases run over
 * Win32 under Wine in test/win32/runner.mjs ("contract: …").
 */

const check: ContractCheck = {
  assert(cond, msg) {
    expect(cond, msg).toBeTruthy();
  },
  eq(a, b, msg) {
    expect(a, msg).toEqual(b);
  },
  async rejectsWith(p, code, msg) {
    const e = await p.then(
      () => null,
      (err: unknown) => err,
    );
    expect(isUiError(e) ? e.code : e, msg).toBe(code);
    return e;
  },
};

const isWindowInfo = (w: unknown) => WindowInfoSchema.safeParse(w).success;

async function waitFor<T>(fn: () => Promise<T> | T, ms: number): Promise<T | null> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) return null;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const verifyOn =
  (p: Platform): ContractContext["verify"] =>
  (expected, opts) =>
    verifyTarget(p.desktop, expected, opts);

function withInstance(w: WindowInfo): ContractContext["subject"] {
  if (!w.instance) throw new Error("the subject window has no process instance");
  return { ...w, instance: w.instance };
}

type BackendContext = Omit<ContractContext, "check" | "unsupported">;

function runContract(name: string, enabled: boolean, setup: () => Promise<BackendContext>) {
  describe.skipIf(!enabled)(`port contract: ${name}`, () => {
    let ctx: BackendContext;
    beforeAll(async () => {
      ctx = await setup();
    });
    // A case this backend cannot run is reported skipped, with its reason as the note.
    for (const c of PORT_CONTRACT)
      it(c.name, (t) => c.run({ ...ctx, check, unsupported: (why) => t.skip(why) }));
  });
}

// The fake desktop: the pointer is what its effects log says the last move was. Its window
// manager and the subject's text field are the test's own (settle(), typed()): the simulated
// desktop records requests and the scenario file says what follows.
let fake: Platform | undefined;
runContract("fake", true, async () => {
  const subjectWindow = ruffleWindow({
    tree: {
      role: "window",
      name: "Ruffle",
      children: [
        {
          role: "button",
          name: "Play",
          automation_id: "play",
          rect: [20, 60, 120, 90],
          patterns: ["invoke"],
        },
        { role: "edit", name: "Name", automation_id: "name", rect: [20, 100, 220, 130], patterns: ["value"] },
      ],
    },
  });
  let state: { foreground: number | null; windows: Array<Record<string, unknown>>; grabs?: object } = {
    foreground: 1001,
    windows: [subjectWindow],
  };
  const desk = new FakeDesktop({ session: 1, ...state });
  const write = (next: Partial<typeof state>) => {
    state = { ...state, ...next };
    desk.write({ session: 1, ...state });
  };
  const other = (hwnd: number, pid: number, rect: Rect) => ({
    ...ruffleWindow({ hwnd, pid, rect, title: `other ${hwnd}`, fill: "#cc3333" }),
    tree: undefined,
  });
  const without = (hwnd: number) => state.windows.filter((w) => w.hwnd !== hwnd);
  let applied = 0;
  fake = createFakePlatform({ scenarioPath: desk.path, workerKind: "other" });
  const subject = await fake.desktop.getWindow("1001");
  if (!subject) throw new Error("the fake window is missing");
  const stage: ContractContext["stage"] = {
    async cover(rect) {
      write({
        windows: [
          { ...other(7001, 5151, rect), z: 0 },
          ...state.windows.map((w) => ({ ...w, z: Number(w.z) + 1 })),
        ],
      });
      return async () => write({ windows: without(7001) });
    },
    async foreground() {
      const was = state.foreground;
      write({
        windows: [...state.windows, { ...other(7002, 5152, [1300, 800, 1500, 900]), z: 9 }],
        foreground: 7002,
      });
      return async () => write({ windows: without(7002), foreground: was });
    },
    async grab(device) {
      write({ grabs: { [device]: true } });
      return async () => write({ grabs: {} });
    },
    async minimize() {
      write({ windows: state.windows.map((w) => (w.hwnd === 1001 ? { ...w, iconic: true } : w)) });
    },
  };
  // Another program's window; the test's window manager (settle) closes it on the request.
  const closable: ContractContext["closable"] = async () => {
    write({ windows: [...state.windows, { ...other(7003, 5153, [1300, 600, 1500, 700]), z: 8 }] });
    const window = await fake?.desktop.getWindow("7003");
    if (!window) throw new Error("the closable fake window is missing");
    return { window, undo: async () => write({ windows: without(7003) }) };
  };
  const scenarioPath = desk.path;
  return {
    platform: fake,
    subject: withInstance(subject),
    isWindowInfo,
    hasAccessibility: true,
    pointerSlack: 0,
    pointer: async () => {
      const move = desk
        .effectsLog()
        .filter((e) => e.type === "move")
        .at(-1);
      return { x: Number(move?.x), y: Number(move?.y) };
    },
    verify: verifyOn(fake),
    stage,
    closable,
    fresh: async () => createFakePlatform({ scenarioPath, workerKind: "other" }),
    waitFor,
    // The window manager: restore, activate and close requests take effect.
    async settle() {
      const log = desk.effectsLog();
      for (const e of log.slice(applied)) {
        const hwnd = Number(e.hwnd);
        if (e.type === "restore")
          write({ windows: state.windows.map((w) => (w.hwnd === hwnd ? { ...w, iconic: false } : w)) });
        if (e.type === "activate") write({ foreground: hwnd });
        if (e.type === "close") write({ windows: without(hwnd) });
      }
      applied = log.length;
    },
    // A text field that takes typed text, letter keys and backspace, and set_value.
    async typed() {
      let text = "";
      for (const e of desk.effectsLog()) {
        if (e.type === "text") text += String(e.text);
        if (e.type === "key_down" && e.key === "backspace") text = text.slice(0, -1);
        else if (e.type === "key_down" && /^[a-z0-9]$/.test(String(e.key))) text += String(e.key);
        if (e.type === "a11y" && e.action === "set_value") text = String(e.value);
      }
      return text;
    },
  };
});

// X11: a GTK entry dialog (AT-SPI); the pointer as the X server reports it (xdotool); the
// situations are made by another X client (test/x11/fixtures/attacker.c): an override-redirect
// window over the subject, a managed window in front, a grab; the entry's text read over AT-SPI.
let session: X11Session | undefined;
let x11: Platform | undefined;
let app: App | undefined;
let attackDir: string | undefined;
let bus: dbus.MessageBus | undefined;
const attackers: Attacker[] = [];
runContract("x11", X11_AVAILABLE, async () => {
  session = startSession();
  const { createX11Platform } = await import("../../src/platforms/x11/index.js");
  const p = await createX11Platform({ workerKind: "other" });
  x11 = p;
  attackDir = scratchDir("contract");
  const bin = buildAttacker(attackDir);
  const attack = async (args: string[]): Promise<Undo> => {
    const a = await startAttacker(bin, args, attackers);
    return () => a.stop();
  };
  app = startApp("zenity", ["--entry", "--title=uix contract", "--text=contract"]);
  const subject = await waitForWindow(p, "uix contract");
  const probe = await p.accessibility.openSession(subject);
  const edit = await (async function find(n: unknown, depth: number): Promise<unknown> {
    if ((await probe.facts(n)).role === "edit") return n;
    if (depth > 8) return null;
    for (const k of await probe.children(n)) {
      const hit = await find(k, depth + 1);
      if (hit) return hit;
    }
    return null;
  })(await probe.root(), 0);
  if (!edit) throw new Error("the entry dialog has no edit node");
  bus = await atspiBus();
  const entry = edit as { bus: string; path: string };
  return {
    platform: p,
    subject: withInstance(subject),
    isWindowInfo,
    hasAccessibility: true,
    pointerSlack: 0,
    pointer: async () => {
      const out = xdotool("getmouselocation", "--shell");
      const num = (k: string) =>
        Number(/^(\w+)=(\d+)$/m.exec(out.split("\n").find((l) => l.startsWith(`${k}=`)) ?? "")?.[2]);
      return { x: num("X"), y: num("Y") };
    },
    verify: verifyOn(p),
    stage: {
      cover: (r) => attack(["popup", String(r[0]), String(r[1]), String(r[2] - r[0]), String(r[3] - r[1])]),
      async foreground() {
        const [, , sw, sh] = await p.desktop.virtualScreen();
        const stop = await attack([
          "window",
          "uix contract front",
          String(sw - 220),
          String(sh - 160),
          "200",
          "140",
        ]);
        const front = await waitForWindow(p, "uix contract front");
        xdotool("windowactivate", front.hwnd);
        return stop;
      },
      grab: (device) => attack(["grab", device]),
      async minimize() {
        xdotool("windowminimize", subject.hwnd);
      },
    },
    // A second zenity, which closes on WM_DELETE_WINDOW; killed afterwards if it did not.
    async closable() {
      const closing = startApp("zenity", ["--info", "--title=uix contract close", "--text=close"]);
      const window = await waitForWindow(p, "uix contract close");
      return { window, undo: async () => void closing.child.kill("SIGKILL") };
    },
    fresh: () => createX11Platform({ workerKind: "other" }),
    waitFor,
    settle: async () => {},
    typed: async () => atspiText(bus as dbus.MessageBus, entry),
  };
});

afterAll(async () => {
  for (const a of attackers) await a.stop();
  bus?.disconnect();
  if (attackDir) rmSync(attackDir, { recursive: true, force: true });
  await fake?.dispose();
  await x11?.dispose();
  app?.child.kill("SIGKILL");
  session?.stop();
});
