import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFakePlatform } from "../../src/platforms/fake/index.js";
import { isUiError } from "../../src/shared/errors.js";
import { type Platform, type WindowInfo, WindowInfoSchema } from "../../src/shared/platform.js";
import { FakeDesktop, ruffleWindow } from "../support/mcp.js";
import {
  type App,
  startApp,
  startSession,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
  xdotool,
} from "../x11/support.js";
import { type ContractCheck, type ContractContext, PORT_CONTRACT } from "./cases.mjs";

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

function withInstance(w: WindowInfo): ContractContext["subject"] {
  if (!w.instance) throw new Error("the subject window has no process instance");
  return { ...w, instance: w.instance };
}

function runContract(name: string, enabled: boolean, setup: () => Promise<Omit<ContractContext, "check">>) {
  describe.skipIf(!enabled)(`port contract: ${name}`, () => {
    let ctx: ContractContext;
    beforeAll(async () => {
      ctx = { ...(await setup()), check };
    });
    for (const c of PORT_CONTRACT) it(c.name, () => c.run(ctx));
  });
}

// The fake desktop: the pointer is what its effects log says the last move was.
let fake: Platform | undefined;
runContract("fake", true, async () => {
  const desk = new FakeDesktop({ session: 1, foreground: 1001, windows: [ruffleWindow()] });
  fake = createFakePlatform({ scenarioPath: desk.path, workerKind: "other" });
  const subject = await fake.desktop.getWindow("1001");
  if (!subject) throw new Error("the fake window is missing");
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
  };
});

// X11: a GTK entry dialog (AT-SPI); the pointer as the X server reports it (xdotool).
let session: X11Session | undefined;
let x11: Platform | undefined;
let app: App | undefined;
runContract("x11", X11_AVAILABLE, async () => {
  session = startSession();
  const { createX11Platform } = await import("../../src/platforms/x11/index.js");
  x11 = await createX11Platform({ workerKind: "other" });
  app = startApp("zenity", ["--entry", "--title=uix contract", "--text=contract"]);
  const subject = await waitForWindow(x11, "uix contract");
  return {
    platform: x11,
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
  };
});

afterAll(async () => {
  await fake?.dispose();
  await x11?.dispose();
  app?.child.kill("SIGKILL");
  session?.stop();
});
