import { describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
import type { Admitted } from "../../src/supervisor/access/calls.js";
import { type ApplicationCharge, MemoryBudget, RateBudgets } from "../../src/supervisor/budgets.js";
import type { ToolDef } from "../../src/supervisor/tools/define.js";
import { inputTools } from "../../src/supervisor/tools/input.js";

/**
 * The one refund case the chain cannot be made to reach on purpose: a signal that aborts after the
 * budgets were taken and before send_text's handler starts (no await lies between them). The
 * handler runs against a real RateBudgets, driven the way the chain drives it. Every other charge
 * and refund is tested through the in-process server (test/inprocess/budget-charges.test.ts).
 */

const KEY = "instance-key";
const LIMITS = {
  max_actions_per_minute: 100,
  max_text_chars_per_minute: 100,
  max_screenshot_pixels_per_minute: 2 * 320 * 240,
  max_png_bytes: 1024 * 1024,
};
const STAGE = { name: "stage", rect: [100, 50, 420, 290] as [number, number, number, number] }; // 320×240

type Worker = (op: string, args: unknown) => Promise<unknown>;

function tool(tools: ToolDef[], name: string): ToolDef {
  const def = tools.find((t) => t.name === name);
  if (!def) throw new Error(`no tool ${name}`);
  return def;
}

function setup(memoryBytes = 64 * 1024 * 1024) {
  let now = 0;
  const budgets = new RateBudgets(
    { discoveryPerMinute: 100, inspectionsPerMinute: 100, clientActionsPerMinute: 100 },
    () => now,
  );
  const memory = new MemoryBudget(memoryBytes);
  const sent: string[] = [];
  // What the chain hands send_text's row once access is decided: the record and its one service.
  const admitted = (worker: Worker, signal: AbortSignal, charge: ApplicationCharge): Admitted =>
    ({
      record: {
        correlationId: "0123456789ab",
        client: { hash: "client" },
        counters: {},
        policy: {
          source: "file",
          safe_regions: [STAGE],
          screenshot_masks: [],
          allow_unrestricted_screenshots: false,
          limits: LIMITS,
        },
        target: {
          instanceKey: KEY,
          window: { rect: [0, 0, 824, 640] },
          instance: { exe_path: "/usr/bin/ruffle" },
          expectation: { hwnd: "1001" },
        },
        grant: null,
        capability: "text",
        charge,
        decision: null,
      },
      signal,
      progress: async () => {},
      services: {
        input: {
          press: (op: string, args: unknown) => {
            sent.push(op);
            return worker(op, args);
          },
          focusMode: "passive",
          textMode: "sendinput",
          deadlineMs: 15_000,
        },
      },
    }) as unknown as Admitted;

  /** What the chain does: take the call's budgets, then start the handler in the same run. */
  async function run(
    def: ToolDef,
    args: Record<string, unknown>,
    worker: Worker,
    signal = new AbortController().signal,
  ): Promise<string> {
    const parsed = def.input.parse(args) as Record<string, unknown>;
    const cost =
      def.name === "send_text" ? { textChars: String(parsed.text).length } : { screenshotPixels: 320 * 240 };
    // record_coordinate_profile's reference region is the stage (320×240), as for screenshots.
    budgets.take(def.budget === "none" ? "inspection" : def.budget, "client", {
      key: KEY,
      limits: LIMITS,
      ...cost,
    });
    // As the chain does: the charge is read right after the take and handed over as call.charge.
    const charge = budgets.applicationCharge({ key: KEY, ...cost });
    const pending = def.handler(admitted(worker, signal, charge), parsed);
    now += 2_000; // the call takes a while; other calls' takes would land in later buckets
    try {
      await pending;
      return "ok";
    } catch (e) {
      if (isUiError(e)) return e.code;
      throw e;
    }
  }

  const used = () => {
    const app = budgets.state("client", { key: KEY, limits: LIMITS }).application!;
    return { pixels: app.screenshot_pixels.used, chars: app.text_chars.used, actions: app.actions.used };
  };
  return { run, used, memory, sent };
}

describe("send_text keeps its characters unless nothing was sent", () => {
  const sendText = tool(inputTools, "send_text");
  const args = { hwnd: 1001, text: "x".repeat(40) };

  it("cancelled before the request went out: the characters go back, the action stays counted", async () => {
    const s = setup();
    const ac = new AbortController();
    ac.abort();
    expect(await s.run(sendText, args, async () => ({ chars: 40 }), ac.signal)).toBe("cancelled");
    expect(s.sent).toEqual([]);
    expect(s.used()).toEqual({ pixels: 0, chars: 0, actions: 1 });
  });
});
