import type {
  InputPort,
  LiveProof,
  LogicalKey,
  MouseButton,
  PressReceipt,
  TextMode,
} from "../../shared/platform.js";
import { type FakeContext, requireWindow } from "./context.js";
import type { Effect } from "./effects.js";
import { topWindowAt } from "./render.js";

/**
 * Simulated SendInput/XTest: every call appends one effects line. A fault is suffered by the
 * window the event would reach: the one under the point (move) or under the cursor (buttons,
 * wheel), the foreground window (keys), the named window (text).
 */
export class FakeInput implements InputPort {
  private x: number | null = null;
  private y: number | null = null;

  constructor(private readonly ctx: FakeContext) {}

  async moveTo(x: number, y: number): Promise<void> {
    await this.ctx.touch(topWindowAt(this.ctx.scenario(), x, y));
    this.x = x;
    this.y = y;
    await this.emit({ type: "move", x, y });
  }

  async buttonDown(button: MouseButton): Promise<PressReceipt | null> {
    await this.touchCursor();
    await this.emit({ type: "button_down", button });
    // The simulated desktop has no server that could say where a press went.
    return null;
  }

  async buttonUp(button: MouseButton): Promise<void> {
    await this.touchCursor();
    await this.emit({ type: "button_up", button });
  }

  async wheel(notches: number): Promise<void> {
    await this.touchCursor();
    await this.emit({ type: "wheel", notches });
  }

  async keyDown(key: LogicalKey): Promise<void> {
    await this.touchForeground();
    await this.emit({ type: "key_down", key });
  }

  async keyUp(key: LogicalKey): Promise<void> {
    await this.touchForeground();
    await this.emit({ type: "key_up", key });
  }

  async typeText(
    hwnd: string,
    text: string,
    mode: TextMode,
    beforeEachKey?: () => Promise<LiveProof | null | undefined>,
  ): Promise<void> {
    const w = requireWindow(this.ctx.scenario(), hwnd);
    await this.ctx.touch(w);
    // Checked before every character like the real backends; what was typed before a refusal
    // is one effect, as a real keyboard would have delivered it.
    let typed = "";
    try {
      for (const ch of text) {
        await beforeEachKey?.();
        typed += ch;
      }
    } finally {
      if (typed.length > 0) await this.emit({ type: "text", hwnd: String(w.hwnd), text: typed, mode });
    }
  }

  /**
   * Logs one effect, then takes the scenario's input_delay_ms (a slow input path: room for a
   * test to act between the events of a gesture).
   */
  private async emit(effect: Effect): Promise<void> {
    this.ctx.effects.append(effect);
    const ms = this.ctx.scenario().input_delay_ms ?? 0;
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
  }

  private async touchCursor(): Promise<void> {
    if (this.x === null || this.y === null) return;
    await this.ctx.touch(topWindowAt(this.ctx.scenario(), this.x, this.y));
  }

  private async touchForeground(): Promise<void> {
    const s = this.ctx.scenario();
    if (s.foreground === null) return;
    await this.ctx.touch(s.windows.find((w) => w.hwnd === s.foreground));
  }
}
